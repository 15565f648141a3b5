"""Per-request metrics derived from raw records (design §6 definitions)."""

from __future__ import annotations

import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

from sparktriage.bench.records import derive


def record(chunks, final=None, **extra):
    base = {"type": "request", "status": "ok", "reason": None, "max_tokens": 256, "ignore_eos": True,
            "chunks": chunks, "final_usage": {"completion_tokens": final} if final is not None else None}
    base.update(extra)
    return base


def c(t, n, text=None, finish=None):
    return {"t": t, "ids": list(range(n)), "lp": None, "usage": None,
            "text": "x" * n if text is None else text, "finish": finish}


def test_one_token_per_chunk_matches_the_classic_formula():
    chunks = [c(0.5 + 0.01 * i, 1) for i in range(101)]
    m = derive(record(chunks, 101))
    assert m.ttft_s == 0.5
    assert m.decode_tok_s == pytest.approx(100 / 1.0)  # (tokens - 1) / (last - first)
    assert m.e2e_tok_s == pytest.approx(101 / 1.5)
    assert m.output_tokens == 101 and m.chunks == 101 and m.max_tokens_per_chunk == 1


def test_multi_token_first_chunk_is_not_counted_in_the_decode_rate():
    chunks = [c(0.2, 4)] + [c(0.2 + 0.1 * i, 4) for i in range(1, 11)]
    m = derive(record(chunks, 44))
    assert m.ttft_s == 0.2
    assert m.decode_tok_s == pytest.approx(40 / 1.0)  # not (44 - 1) / 1.0
    assert m.max_tokens_per_chunk == 4 and m.chunks == 11


def test_chunks_of_the_first_read_count_with_the_first_token():
    # the demo's prose request 9 (2026-12-02): 254 of 256 tokens in the read that brought the
    # first one, then two reads 4.0 and 13.2 ms later; the old rule said 255 / 0.0132 s
    first = [c(1.5437, 1) for _ in range(254)]
    m = derive(record(first + [c(1.5477, 1), c(1.5569, 1)], 256))
    assert m.first_read_tokens == 254 and m.ttft_s == 1.5437
    assert m.decode_tok_s == pytest.approx(2 / 0.0132)  # 151.5, not 19,318
    assert m.chunks == 256 and m.e2e_tok_s == pytest.approx(256 / 1.5569)


def test_a_later_burst_stays_in_the_decode_interval():
    # tokens held back mid-stream were produced inside the interval: they count
    chunks = [c(0.1, 1), c(0.2, 1)] + [c(0.9, 1) for _ in range(70)] + [c(1.0, 1)]
    m = derive(record(chunks, 73))
    assert m.first_read_tokens == 1 and m.decode_tok_s == pytest.approx(72 / 0.9)


def test_ttft_is_the_first_chunk_that_carries_a_token():
    role = {"t": 0.1, "ids": None, "lp": None, "usage": None, "text": "", "finish": None}
    chunks = [role, c(0.3, 1), c(0.4, 1)]
    m = derive(record(chunks, 2))
    assert m.ttft_s == 0.3 and m.chunks == 2 and m.decode_tok_s == pytest.approx(10.0)


def test_single_chunk_has_no_decode_rate():
    m = derive(record([c(0.3, 16, finish="length")], 16))
    assert m.decode_tok_s is None and m.e2e_tok_s == pytest.approx(16 / 0.3)


def test_no_tokens_at_all():
    m = derive(record([], None, status="error", reason="HTTP 500: boom"))
    assert (m.ttft_s, m.decode_tok_s, m.e2e_tok_s, m.output_tokens) == (None, None, None, 0)
    assert m.status == "error" and m.reason == "HTTP 500: boom"


def test_short_when_ignore_eos_is_not_honoured():
    chunks = [c(0.1 * i, 1) for i in range(1, 11)]
    chunks[-1]["finish"] = "stop"
    assert derive(record(chunks, 10)).short is True
    chunks[-1]["finish"] = "length"
    assert derive(record(chunks, 10)).short is False
    chunks[-1]["finish"] = "stop"
    assert derive(record(chunks, 10, ignore_eos=False)).short is False


def test_as_dict_keeps_every_field():
    d = derive(record([c(0.1, 1), c(0.2, 2)], 3)).as_dict()
    assert set(d) >= {"status", "reason", "output_tokens", "ttft_s", "decode_tok_s", "e2e_tok_s",
                      "chunks", "max_tokens_per_chunk", "token_source", "exact", "token_totals",
                      "disagreements", "short"}


@settings(max_examples=200, deadline=None)
@given(st.lists(st.tuples(st.integers(1, 8), st.floats(0.0001, 0.5)), min_size=2, max_size=50),
       st.floats(0.001, 2.0))
def test_decode_rate_is_tokens_after_the_first_chunk_over_its_time(steps, ttft):
    t, chunks = ttft, []
    for k, gap in steps:
        chunks.append(c(t, k))
        t += gap
    m = derive(record(chunks, sum(k for k, _ in steps)))
    span = chunks[-1]["t"] - chunks[0]["t"]
    assert m.ttft_s == ttft
    assert m.output_tokens == sum(k for k, _ in steps)
    assert m.decode_tok_s == pytest.approx((m.output_tokens - steps[0][0]) / span)
    assert m.e2e_tok_s == pytest.approx(m.output_tokens / chunks[-1]["t"])


def test_the_workload_says_when_most_tokens_came_with_the_first():
    from sparktriage.bench.summary import build_bench_document

    def raw(index, chunks, total):
        return {**record(chunks, total), "workload": "code", "index": index, "warmup": False}

    held = [c(0.5, 1) for _ in range(200)] + [c(0.5 + 0.01 * i, 1) for i in range(1, 57)]
    steady = [c(0.1 + 0.01 * i, 1) for i in range(256)]
    doc = build_bench_document({"workloads": [{"name": "code"}]},
                               [raw(0, held, 256), raw(1, steady, 256)], {})
    (code,) = doc["workloads"]
    assert [r["first_read_tokens"] for r in code["requests"]] == [200, 1]
    assert code["requests"][0]["decode_tok_s"] == pytest.approx(56 / 0.56)
    assert code["summary"]["decode_tok_s"]["n"] == 2
    assert code["warnings"] == ["1 of 2 requests delivered more than half their tokens in one burst "
                                "with the first (one read): they count with it (produced before "
                                "anything arrived), and the decode rate rests on the tokens after "
                                "that read"]
