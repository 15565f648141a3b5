"""The record/replay part of the test bed (testbed/replay): what is recorded is what is served
back, byte for byte; anything unrecorded is a loud 500 and a miss; files are read with caps."""

from __future__ import annotations

import json
import lzma

import httpx
import pytest

from sparktriage.errors import InputError
from sparktriage.limits import LimitError
from sparktriage.testbed.replay import exchanges
from sparktriage.testbed.replay.exchanges import Exchange, Recording, canonical_body, differences, first_difference
from sparktriage.testbed.replay.proxy import RecordingProxy
from sparktriage.testbed.replay.server import LoopbackServer, ReplayServer

SSE = b'data: {"id":"cmpl-1","choices":[{"text":"a"}]}\n\ndata: {"choices":[{"text":"\xc3\xa9"}]}\n\ndata: [DONE]\n\n'


class Upstream:
    """A scripted stand-in for vLLM: answers by path, counts requests, numbers its answers."""

    def __init__(self):
        self.calls = 0

    def __call__(self, method, path, body):
        self.calls += 1
        if path == "/v1/models":
            card = {"id": "tiny", "created": self.calls, "root": f"/tmp/run{self.calls}/model"}
            return 200, (("content-type", "application/json"), ("date", f"day {self.calls}")), \
                json.dumps({"object": "list", "data": [card]}).encode()
        if path == "/stream":
            return 200, (("content-type", "text/event-stream"),), SSE
        if path == "/nan":
            return 500, (("content-type", "application/json"),), b'{"x": NaN, "id": "n%d"}' % self.calls
        doc = json.loads(body)
        reply = {"id": f"cmpl-{self.calls}", "created": self.calls, "echo": doc, "n": doc.get("n", 0)}
        return 200, (("content-type", "application/json"),), json.dumps(reply).encode()


def record(upstream, requests):
    """Send `requests` (method, path, json or None) through a recording proxy; the answers and
    the recording."""
    with LoopbackServer(upstream) as up, RecordingProxy(up.base_url) as proxy:
        with httpx.Client(base_url=proxy.base_url, trust_env=False) as client:
            answers = [client.request(m, p, json=b) for m, p, b in requests]
        return [(a.status_code, a.content) for a in answers], proxy.recording({"seed": 1})


REQUESTS = [("GET", "/v1/models", None), ("POST", "/v1/completions", {"b": 2, "a": 1}),
            ("POST", "/v1/completions", {"a": 1, "b": 2}), ("POST", "/stream", {"stream": True}),
            ("POST", "/nan", {"x": 1})]


def test_the_proxy_records_every_exchange_byte_exact_and_same_key_answers_keep_their_order():
    answers, rec = record(Upstream(), REQUESTS)
    assert [s for s, _ in answers] == [200, 200, 200, 200, 500]
    assert [ex.body for ex in rec.exchanges] == [body for _, body in answers]
    assert rec.exchanges[3].body == SSE and rec.exchanges[3].header("content-type") == "text/event-stream"
    assert rec.exchanges[0].header("date") is None  # hop-by-hop and date headers are not kept
    same = rec.queues()[("POST", "/v1/completions", '{"a":1,"b":2}')]
    assert [json.loads(ex.body)["id"] for ex in same] == ["cmpl-2", "cmpl-3"]


def test_replay_serves_the_recording_back_and_refuses_anything_else(tmp_path):
    answers, rec = record(Upstream(), REQUESTS)
    path = tmp_path / "r.json.xz"
    rec.save(path)
    with ReplayServer(exchanges.load(path)) as server:
        with httpx.Client(base_url=server.base_url, trust_env=False) as client:
            again = [client.request(m, p, json=b) for m, p, b in REQUESTS]
            extra = client.post("/v1/completions", json={"a": 1, "b": 2})  # a third copy: not recorded
            other = client.post("/v1/completions", json={"a": 1, "b": 3})
        assert [(a.status_code, a.content) for a in again] == answers
        assert extra.status_code == 500 and "no recorded response" in extra.json()["error"]["message"]
        assert "rerun provision/garbage/record.py" in other.json()["error"]["message"]
        assert len(server.misses) == 2 and '{"a":1,"b":3}' in server.misses[1]
        assert server.unused() == [] and server.answered == len(REQUESTS)


def test_unused_lists_what_was_recorded_and_never_asked():
    _, rec = record(Upstream(), REQUESTS)
    with ReplayServer(rec) as server:
        with httpx.Client(base_url=server.base_url, trust_env=False) as client:
            assert client.get("/v1/models").status_code == 200
        assert server.misses == []
        assert len(server.unused()) == 3 and any("x2" in line for line in server.unused())


def test_differences_ignore_exactly_the_volatile_fields():
    _, first = record(Upstream(), REQUESTS)
    _, second = record(Upstream(), REQUESTS[:1] + REQUESTS[1:])  # fresh upstream: same numbering
    assert differences(second.exchanges, first.exchanges) == []
    shifted = Upstream()
    shifted.calls = 100  # every id, created, root and date differs; the NaN answer's "id" too
    _, third = record(shifted, REQUESTS)
    assert differences(third.exchanges, first.exchanges) == []
    ex = first.exchanges[1]
    changed = Exchange(ex.method, ex.path, ex.request, ex.status, ex.headers, ex.body.replace(b'"n": 0', b'"n": 1'))
    found = differences([changed] + first.exchanges[2:] + first.exchanges[:1], first.exchanges)
    assert len(found) == 1 and found[0].endswith("(#1): body differ at $.n: 1 != 0")
    assert "asked 0 time(s), recorded 1" in differences(first.exchanges[1:], first.exchanges)[0]


def test_canonical_body_sorts_keys_and_keeps_non_json_as_base64():
    assert canonical_body(b'{"b": [1, {"d": 1, "c": 2}], "a": "\xc3\xa9"}') == '{"a":"é","b":[1,{"c":2,"d":1}]}'
    assert canonical_body(b"not json") == "base64:bm90IGpzb24="
    assert canonical_body(b"") == ""


def test_the_replay_server_refuses_oversized_request_bodies():
    with ReplayServer(Recording({})) as server:
        with httpx.Client(base_url=server.base_url, trust_env=False) as client:
            big = client.post("/v1/completions", content=b"x" * ((4 << 20) + 1))
    assert big.status_code == 413 and server.misses == []


def test_the_proxy_reports_an_upstream_that_does_not_answer():
    with LoopbackServer(Upstream()) as up:
        url = up.base_url  # stopped on exit: nothing listens there any more
    with RecordingProxy(url) as proxy:
        with httpx.Client(base_url=proxy.base_url, trust_env=False) as client:
            assert client.get("/v1/models").status_code == 502
    assert len(proxy.failures) == 1
    with pytest.raises(Exception, match="not answered"):
        proxy.recording({})


def test_load_caps_and_checks_recording_files(tmp_path, monkeypatch):
    path = tmp_path / "r.json.xz"
    path.write_bytes(lzma.compress(b'{"kind": "other"}'))
    with pytest.raises(InputError, match="not a sparktriage-http-recording"):
        exchanges.load(path)
    doc = {"schema_version": 1, "kind": exchanges.KIND, "meta": {}, "exchanges": [{"method": "GET"}]}
    path.write_bytes(lzma.compress(json.dumps(doc).encode()))
    with pytest.raises(InputError, match="field 'path' must be a str"):
        exchanges.load(path)
    path.write_bytes(lzma.compress(json.dumps(doc).encode())[:-8])
    with pytest.raises(InputError, match="truncated|not an LZMA"):
        exchanges.load(path)
    monkeypatch.setattr(exchanges, "DECOMPRESSED_MAX_BYTES", 1000)
    path.write_bytes(lzma.compress(b" " * 2000))
    with pytest.raises(LimitError, match="decompressed recording"):
        exchanges.load(path)
    monkeypatch.setattr(exchanges, "FILE_MAX_BYTES", 10)
    with pytest.raises(LimitError, match="recording file"):
        exchanges.load(path)


def test_first_difference_names_the_path_and_both_values():
    assert first_difference({"a": [1, {"b": 2}]}, {"a": [1, {"b": 3}]}) == " at $.a[1].b: 2 != 3"
    assert first_difference({"a": 1}, {"a": 1, "c": 0}) == " at $.c: only in committed"
    assert first_difference([1], [1, 2]) == " at $: 1 items != 2"
    assert first_difference({"a": [1]}, {"a": [1]}) == ""
    assert first_difference([-0.4454679787158966], [-0.4454684257507324]) == ""  # the burst's jitter
    assert first_difference([-0.4454], [-0.4455]) == " at $[0]: -0.4454 != -0.4455"
    assert first_difference(["1"], [1]) == " at $[0]: 1 != 1" and first_difference([2], [3]) != ""


def test_a_rank_one_apart_is_a_tie_only_where_the_logprob_agrees():
    entry = {"logprob": -7.1234567, "rank": 622, "decoded_token": "x"}
    assert first_difference({"1060": entry}, {"1060": {**entry, "rank": 621}}) == ""
    assert first_difference({"1060": entry}, {"1060": {**entry, "rank": 620}}) \
        == " at $.1060.rank: 622 != 620"
    assert first_difference({"1060": entry}, {"1060": {**entry, "rank": 621,
                                                      "logprob": -7.2}}) != ""
    assert first_difference({"1060": entry}, {"1060": {**entry, "rank": 621,
                                                      "decoded_token": "y"}}) != ""
