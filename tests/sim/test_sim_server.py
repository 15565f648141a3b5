"""The simulator process: HTTP surface, pacing against its own trace, faults on the wire."""

from __future__ import annotations

import json
import socket
import statistics
import threading

import httpx
import pytest

from sparktriage.sim.truth import truth


def post(base: str, path: str, doc, **kwargs) -> httpx.Response:
    return httpx.post(base + path, json=doc, timeout=30, trust_env=False, **kwargs)


def stream_body(**extra) -> dict:
    return {"model": "sim", "prompt": "x", "stream": True, "ignore_eos": True, **extra}


def test_models_health_version_and_unknown_paths(sim):
    models = httpx.get(sim.base_url + "/v1/models", trust_env=False).json()
    assert [m["id"] for m in models["data"]] == ["sim", "strict"] and models["object"] == "list"
    assert httpx.get(sim.base_url + "/health", trust_env=False).status_code == 200
    assert httpx.get(sim.base_url + "/version", trust_env=False).json() == {"version": "sparktriage-sim"}
    assert httpx.get(sim.base_url + "/nope", trust_env=False).status_code == 404
    assert httpx.get(sim.base_url + "/v1/completions", trust_env=False).status_code == 405


def test_unknown_model_and_bad_bodies(sim):
    reply = post(sim.base_url, "/v1/completions", {"model": "ghost", "prompt": "x"})
    assert reply.status_code == 404
    assert reply.json()["error"]["message"] == "The model `ghost` does not exist."
    reply = httpx.post(sim.base_url + "/v1/completions", content=b"{not json", trust_env=False)
    assert reply.status_code == 400 and "JSON object" in reply.json()["error"]["message"]
    reply = post(sim.base_url, "/v1/completions", {"model": "sim", "prompt": "x", "sim": {"gap_s": -1}})
    assert reply.status_code == 400


def test_non_streaming_answers(sim):
    reply = post(sim.base_url, "/v1/completions", {"model": "sim", "prompt": "x", "max_tokens": 5,
                                                   "return_token_ids": True})
    doc = reply.json()
    assert doc["usage"]["completion_tokens"] == 5 and len(doc["choices"][0]["token_ids"]) == 5
    assert doc["choices"][0]["finish_reason"] == "length"
    chat = post(sim.base_url, "/v1/chat/completions",
                {"model": "sim", "messages": [{"role": "user", "content": "x"}], "max_tokens": 3}).json()
    assert chat["choices"][0]["message"]["content"].count(" t") == 3


def test_stream_keep_alive_and_trace(sim):
    since = sim.reset()
    with httpx.Client(trust_env=False, timeout=30) as client:
        texts = []
        for _ in range(2):  # the same connection twice
            with client.stream("POST", sim.base_url + "/v1/completions",
                               json=stream_body(max_tokens=6, stream_options={"include_usage": True})) as r:
                assert r.headers["content-type"].startswith("text/event-stream")
                assert r.headers["transfer-encoding"] == "chunked"
                texts.append(r.read().decode())
    assert texts[0].count("data: ") == 8 and texts[0].endswith("data: [DONE]\n\n")
    entries = sim.trace(since)
    assert [e["n"] for e in entries] == [since, since + 1]
    kinds = [e["kind"] for e in entries[0]["events"]]
    assert kinds == ["head"] + ["tokens"] * 6 + ["usage", "done"]
    times = [e["t"] for e in entries[0]["events"]]
    assert times == sorted(times) and times[0] >= entries[0]["received"]
    assert entries[0]["outcome"] == "complete" and entries[0]["tokens_sent"] == 6
    assert entries[0]["request"]["include_usage"] and entries[0]["planned"]["usage"] == 6
    assert sim.trace(since + 1)[0]["n"] == since + 1


def test_chunked_request_body_is_accepted(sim):
    def gen():
        yield json.dumps({"model": "sim", "prompt": "x", "max_tokens": 2}).encode()
    reply = httpx.post(sim.base_url + "/v1/completions", content=gen(), trust_env=False)
    assert reply.status_code == 200 and reply.json()["usage"]["completion_tokens"] == 2


def test_reset_sends_a_tcp_rst(sim):
    host, port = sim.base_url.removeprefix("http://").split(":")
    doc = json.dumps(stream_body(max_tokens=50, sim={"gap_s": 0.001, "faults": {"reset_at": 5}})).encode()
    with socket.create_connection((host, int(port))) as s:
        s.sendall(b"POST /v1/completions HTTP/1.1\r\nHost: x\r\nContent-Type: application/json\r\n"
                  b"Content-Length: %d\r\n\r\n%s" % (len(doc), doc))
        received = b""
        with pytest.raises(ConnectionResetError):
            while True:
                data = s.recv(65536)
                if not data:
                    break
                received += data
    assert received.count(b'"token_ids":') == 0 and received.count(b"data: ") == 5


@pytest.mark.parametrize("rate", [1000, 10000])
def test_pacing_follows_the_schedule(sim, rate):
    since = sim.reset()
    n = rate  # one second
    doc = stream_body(max_tokens=n, sim={"ttft_s": 0.05, "gap_s": 1.0 / rate})
    with httpx.stream("POST", sim.base_url + "/v1/completions", json=doc, trust_env=False, timeout=30) as r:
        r.read()
    (entry,) = sim.trace(since)
    events = [e for e in entry["events"] if e["kind"] == "tokens"]
    late = [e["t"] - (entry["received"] + e["at"]) for e in events]
    assert min(late) > -1e-4  # never early
    # Typically 0.1 ms late; the bounds leave room for a machine shared with other jobs.
    assert statistics.median(late) < 0.001, statistics.median(late)
    real = truth(entry)
    # never early; the first send may be late by what a busy scheduler adds (13 and 23 ms were
    # seen on the 2-core machine with other test runs on it), the pacing after it is what the
    # median above holds to a millisecond
    assert real.tokens == n and 0.05 - 1e-4 < real.ttft_server_s < 0.05 + 0.05
    # from the first send as it happened (a late first send shortens the span to the last one,
    # which keeps its schedule: 10,276 tok/s was read once with the first token 27 ms late)
    span = entry["received"] + events[-1]["at"] - real.first_t
    assert real.decode_tok_s == pytest.approx((n - 1) / span, rel=0.02)


def test_concurrent_streams_keep_their_pace(sim):
    since = sim.reset()
    doc = stream_body(max_tokens=500, sim={"gap_s": 0.002})
    errors = []

    def one():
        try:
            with httpx.stream("POST", sim.base_url + "/v1/completions", json=doc, trust_env=False,
                              timeout=30) as r:
                r.read()
        except Exception as exc:  # noqa: BLE001 - reported below
            errors.append(exc)

    threads = [threading.Thread(target=one) for _ in range(4)]
    for t in threads:
        t.start()
    for t in threads:
        t.join()
    assert not errors
    entries = sim.trace(since)
    assert len(entries) == 4
    for entry in entries:
        tokens = [e for e in entry["events"] if e["kind"] == "tokens"]
        span = tokens[-1]["at"] - tokens[0]["at"]  # 499 gaps of 2 ms as scheduled
        last_late = tokens[-1]["t"] - (entry["received"] + tokens[-1]["at"])
        # each stream ends on its own schedule (four streams served one after another would end
        # seconds late) and never decodes slower than scripted; a first token delayed by a
        # starved machine (a fresh-clone run: 35 ms) makes first-to-last read faster, as the
        # sender catches up with the schedule, and is no sign of streams slowing each other
        assert 0.0 <= last_late <= 0.03 * span, (last_late, span)
        assert truth(entry).decode_tok_s >= 500 * 0.97


@pytest.mark.parametrize("config, path, status, check", [
    ({"api_key": "k"}, "/v1/models", 401, lambda r: r.json() == {"error": "Unauthorized"}),
    ({"models_endpoint": "html"}, "/v1/models", 200, lambda r: "<h1>" in r.text),
    ({"models_endpoint": "404"}, "/v1/models", 404, lambda r: r.text == "Not Found"),
    ({"completions_endpoint": "html"}, "/v1/completions", 200, lambda r: r.headers["content-type"].startswith("text/html")),
])
def test_non_openai_personalities(start_sim, config, path, status, check):
    other = start_sim(config)
    method = "GET" if path == "/v1/models" else "POST"
    reply = httpx.request(method, other.base_url + path, json=None if method == "GET" else stream_body(),
                          trust_env=False)
    assert reply.status_code == status and check(reply)


def test_api_key_accepted(start_sim):
    other = start_sim({"api_key": "k"})
    reply = httpx.get(other.base_url + "/v1/models", headers={"Authorization": "Bearer k"}, trust_env=False)
    assert reply.status_code == 200
