"""The streaming client against the simulator (own process): rates, counts and faults vs truth."""

from __future__ import annotations

import asyncio
import statistics

import pytest

from sparktriage.bench.client import ClientSettings, make_stream_client, stream_request
from sparktriage.bench.records import derive
from sparktriage.sim.truth import truth

ALL_SOURCES = {"return_token_ids": True, "logprobs": 1,
               "stream_options": {"include_usage": True, "continuous_usage_stats": True}}


def body(api: str, max_tokens: int, scenario: dict, **extra) -> dict:
    doc = {"model": "sim", "stream": True, "max_tokens": max_tokens, "ignore_eos": True,
           "temperature": 0, "sim": scenario, **ALL_SOURCES, **extra}
    if api == "chat":
        doc["messages"] = [{"role": "user", "content": "hello there"}]
        doc["logprobs"], doc["top_logprobs"] = True, 0
    else:
        doc["prompt"] = "hello there"
    return doc


def fetch(sim, bodies: list[tuple[str, dict]], stall_s: float = 10.0) -> list[tuple[dict, dict]]:
    """Send requests one after another; return (raw record, trace entry) pairs."""
    since = sim.reset()
    settings = ClientSettings(base_url=sim.base_url, stall_timeout_s=stall_s)

    async def go():
        out = []
        async with make_stream_client(settings) as client:
            for api, doc in bodies:
                path = "/v1/completions" if api == "completions" else "/v1/chat/completions"
                out.append(await stream_request(client, settings, path, doc))
        return out

    records = asyncio.run(go())
    entries = sorted(sim.trace(since), key=lambda e: e["n"])  # one at a time: same order
    assert len(entries) == len(records)
    for record, entry in zip(records, entries):
        assert record["response_id"] in (None, entry["id"])
    return list(zip(records, entries))


# What a loaded 2-core machine may add to a client's read of a chunk (tens of ms were seen); the
# rates' exactness on recorded times is tests/bench/test_records.py's, and the 0.3% test above
# reads streams of three seconds so that this slack stays below it.
SLACK_S = 0.05


def decode_span_s(metrics, tokens_after_first: int) -> float:
    """The first-to-last token time a decode rate stands for."""
    return tokens_after_first / metrics.decode_tok_s


def token_counts(entry: dict) -> list[int]:
    return [e["count"] for e in entry["events"] if e["kind"] == "tokens"]


# The median error each rate must stay within: 0.3% while every event arrives in a read of its
# own up to 1000 a second. At 2000 a second, one event per read, the client's receive times
# trail the sends by 0.1-0.9% (3-90 ms over 3-10 s streams, the other test worker running
# vLLM on the second core), growing with the stream: the per-read cost, not the accounting
# (events sent in bursts, as a busy server sends them, stay within 0.3% up to the simulator's
# ceiling: docs/benchmarks.md, "Client accuracy and ingest capacity").
TOLERANCE = {50: 0.003, 500: 0.003, 1000: 0.003, 2000: 0.015}


@pytest.mark.parametrize("rate", sorted(TOLERANCE))
@pytest.mark.slow
def test_decode_rate_within_0_3_percent_of_ground_truth(sim, rate):
    # Streams of three seconds: a scheduler hiccup of a few ms on a busy 2-core machine stays
    # well below 0.3% (9 ms); the median of three requests is what must be that close.
    scenario = {"ttft_s": 0.02, "gap_s": 1.0 / rate}
    tokens = 3 * rate
    pairs = fetch(sim, [("completions", body("completions", tokens, scenario))] * 3)
    errors = []
    for record, entry in pairs:
        m, real = derive(record), truth(entry)
        assert record["status"] == "ok" and m.output_tokens == real.tokens == tokens
        assert m.chunks == real.chunks
        errors.append(abs(m.decode_tok_s / real.decode_tok_s - 1))
        # The client's TTFT includes sending the request; the server's starts on receipt.
        assert 0 <= m.ttft_s - real.ttft_server_s < 0.05
    assert statistics.median(errors) < TOLERANCE[rate], errors
    assert max(errors) < 0.03, errors
    assert abs(truth(pairs[0][1]).decode_tok_s / rate - 1) < 0.02  # the simulator kept its pace


MODES = {
    "one": {"tokens_per_chunk": 1},
    "four": {"tokens_per_chunk": 4},
    "pattern": {"tokens_per_chunk": [1, 4, 2, 3]},
    "random": {"tokens_per_chunk": [1, 2, 3, 4, 5], "chunk_order": "random", "seed": 7},
}
SINGLE = {
    "token_ids": {"token_ids": True, "logprobs": False, "continuous_usage": False, "final_usage": False},
    "logprobs": {"token_ids": False, "logprobs": True, "continuous_usage": False, "final_usage": False},
    "continuous_usage": {"token_ids": False, "logprobs": False, "continuous_usage": True, "final_usage": False},
}


@pytest.mark.parametrize("api", ["completions", "chat"])
def test_token_counts_exact_in_every_chunking_mode_with_every_single_source(sim, api):
    cases = [(mode, source) for mode in MODES for source in SINGLE]
    docs = [(api, body(api, 45, {"gap_s": 0.0002, **MODES[m], "sources": SINGLE[s]}))
            for m, s in cases]
    for (mode, source), (record, entry) in zip(cases, fetch(sim, docs)):
        m = derive(record)
        real = truth(entry)
        assert record["status"] == "ok", (mode, source, record["reason"])
        assert m.token_source == source and m.exact
        assert m.output_tokens == real.tokens == 45, (mode, source)
        counted = [n for n in _per_chunk(record) if n > 0]
        assert counted == token_counts(entry), (mode, source)
        assert m.max_tokens_per_chunk == real.max_tokens_per_chunk
        assert m.disagreements == ()


def _per_chunk(record: dict) -> list[int]:
    from sparktriage.bench.records import token_account
    return list(token_account(record).per_chunk)


@pytest.mark.parametrize("api", ["completions", "chat"])
def test_final_usage_alone_gives_exact_totals_and_says_timing_is_estimated(sim, api):
    sources = {"token_ids": False, "logprobs": False, "continuous_usage": False, "final_usage": True}
    for mode in MODES.values():
        ((record, entry),) = fetch(sim, [(api, body(api, 45, {"gap_s": 0.0002, **mode, "sources": sources}))])
        m = derive(record)
        assert m.token_source == "final_usage" and not m.exact
        assert m.output_tokens == truth(entry).tokens == 45


def test_multi_token_first_chunk_and_empty_text_chunks(sim):
    scenario = {"gap_s": 0.002, "tokens_per_chunk": [5, 1, 2], "empty_text_every": 3}
    ((record, entry),) = fetch(sim, [("completions", body("completions", 400, scenario))])
    m = derive(record)
    assert sum(1 for c in record["chunks"] if c["text"] == "" and c["ids"]) >= 40
    assert m.output_tokens == 400 and token_counts(entry)[0] == 5
    real = truth(entry)
    assert real.first_tokens == 5 and _per_chunk(record)[0] == 5
    assert decode_span_s(m, 395) == pytest.approx(decode_span_s(real, 395), abs=SLACK_S)


def test_chat_role_chunk_is_not_a_token(sim):
    ((record, entry),) = fetch(sim, [("chat", body("chat", 10, {"ttft_s": 0.01, "gap_s": 0.001}))])
    assert record["chunks"][0]["text"] == "" and record["chunks"][0]["ids"] is None
    m = derive(record)
    assert m.output_tokens == 10 and m.chunks == 10


def test_disagreeing_sources_are_flagged(sim):
    ((record, _),) = fetch(sim, [("completions", body("completions", 20, {"faults": {"final_usage_offset": 2}}))])
    m = derive(record)
    assert m.output_tokens == 20
    assert "token_ids counts 20 tokens but final_usage counts 22" in m.disagreements


FAULTS = [
    ("error_at", {"faults": {"error_at": 30}}, "error", "server error mid-stream", 30),
    ("reset_at", {"faults": {"reset_at": 30}}, "incomplete", "connection reset by peer", 30),
    ("close_at", {"faults": {"close_at": 30}}, "incomplete", "server closed the connection", 30),
    ("malformed_at", {"faults": {"malformed_at": 30}}, "error", "malformed SSE", 30),
    ("stall beyond the timeout", {"faults": {"stalls": [{"at": 25, "seconds": 3}]}}, "incomplete",
     "stalled: no data for 0.8 s", 25),
    ("stall before any token", {"faults": {"stalls": [{"at": 0, "seconds": 3}]}}, "incomplete",
     "stalled: no data for 0.8 s after 0 chunks", 0),
    ("http 503", {"faults": {"http_status": 503, "http_message": "overloaded"}}, "error",
     "HTTP 503: overloaded", 0),
    ("no [DONE] and no finish", {"faults": {"close_at": 60}}, "incomplete", "closed", 60),
]


def test_faults_are_classified_and_keep_the_tokens_received(sim):
    docs = [("completions", body("completions", 60, {"gap_s": 0.001, **f[1]})) for f in FAULTS]
    docs.append(("completions", body("completions", 60, {"gap_s": 0.001})))  # after all that: fine
    pairs = fetch(sim, docs, stall_s=0.8)
    for (name, _, status, reason, tokens), (record, entry) in zip(FAULTS, pairs):
        m = derive(record)
        assert (record["status"], m.output_tokens) == (status, tokens), name
        assert reason in record["reason"], (name, record["reason"])
        assert entry["tokens_sent"] >= tokens
    last, _ = pairs[-1]
    assert last["status"] == "ok" and derive(last).output_tokens == 60


def test_stall_within_the_timeout_is_kept_and_visible(sim):
    scenario = {"gap_s": 0.001, "faults": {"stalls": [{"at": 20, "seconds": 0.4}]}}
    ((record, entry),) = fetch(sim, [("completions", body("completions", 40, scenario))], stall_s=5)
    m = derive(record)
    assert record["status"] == "ok" and m.output_tokens == 40
    gaps = [b["t"] - a["t"] for a, b in zip(record["chunks"], record["chunks"][1:])]
    assert max(gaps) == pytest.approx(0.4, abs=SLACK_S)
    # the stall is inside the decode span, not dropped from it
    assert decode_span_s(m, 39) == pytest.approx(decode_span_s(truth(entry), 39), abs=SLACK_S)
    assert m.decode_tok_s < 39 / 0.4


def test_stream_ending_with_finish_but_without_done_is_ok(sim):
    ((record, _),) = fetch(sim, [("completions", body("completions", 12, {"faults": {"no_done": True}}))])
    assert record["status"] == "ok" and not record["done"] and derive(record).output_tokens == 12


def test_non_streaming_answer_is_an_error_not_a_crash(sim):
    doc = body("completions", 8, {})
    doc["stream"] = False
    doc.pop("stream_options")
    ((record, _),) = fetch(sim, [("completions", doc)])
    assert record["status"] == "error" and "one JSON body instead of an event stream" in record["reason"]
