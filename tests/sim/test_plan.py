"""Response plans: chunking, timing, faults, ignore_eos; request validation."""

from __future__ import annotations

import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

from sparktriage.sim.plan import BadRequest, plan_stream, read_request
from sparktriage.sim.scenario import Scenario


def spec(api="completions", max_tokens=10, **body):
    doc = {"model": "m", "stream": True, "max_tokens": max_tokens,
           "stream_options": {"include_usage": True}, **body}
    doc["prompt" if api == "completions" else "messages"] = "a b c" if api == "completions" else [
        {"role": "user", "content": "a b c"}]
    return read_request(api, doc, strict=False)


def tokens(plan):
    return [(s.start, s.count) for s in plan.steps if s.kind == "tokens"]


def kinds(plan):
    return [s.kind for s in plan.steps]


def test_constant_token_rate_with_multi_token_chunks():
    plan = plan_stream(Scenario(ttft_s=0.1, gap_s=0.01, tokens_per_chunk=[1, 3]), spec(max_tokens=9))
    assert tokens(plan) == [(0, 1), (1, 3), (4, 1), (5, 3), (8, 1)]
    at = [s.at for s in plan.steps if s.kind == "tokens"]
    assert at == pytest.approx([0.1, 0.13, 0.14, 0.17, 0.18])  # a chunk of k waits k gaps
    assert kinds(plan)[-2:] == ["usage", "done"] and plan.usage_reported == 9
    assert [s.finish for s in plan.steps if s.kind == "tokens"][-1] == "length"


def test_gap_per_chunk_and_gap_list():
    plan = plan_stream(Scenario(ttft_s=0, gap_s=(0.01, 0.02), gap_per="chunk", tokens_per_chunk=2),
                       spec(max_tokens=8))
    assert [s.at for s in plan.steps if s.kind == "tokens"] == pytest.approx([0, 0.01, 0.03, 0.04])


def test_chat_role_chunk_first():
    plan = plan_stream(Scenario(), spec("chat", 3))
    assert kinds(plan)[:2] == ["role", "tokens"]


@pytest.mark.parametrize("honour, ignore, expected", [
    (True, True, (10, "length")), (False, True, (4, "stop")), (True, False, (4, "stop")),
])
def test_ignore_eos(honour, ignore, expected):
    plan = plan_stream(Scenario(eos_after=4, honour_ignore_eos=honour), spec(max_tokens=10, ignore_eos=ignore))
    assert (plan.tokens, plan.finish) == expected


@pytest.mark.parametrize("fault, last_kinds", [
    ({"error_at": 4}, ["error", "done"]),
    ({"reset_at": 4}, ["reset"]),
    ({"close_at": 4}, ["close"]),
])
def test_faults_cut_the_stream_exactly(fault, last_kinds):
    plan = plan_stream(Scenario(tokens_per_chunk=3, faults=fault), spec(max_tokens=10))
    assert tokens(plan) == [(0, 3), (3, 1)]  # chunks never straddle a fault position
    assert kinds(plan)[-len(last_kinds):] == last_kinds
    assert plan.tokens == 4 and plan.finish is None and plan.usage_reported is None


def test_stalls_and_malformed_events():
    plan = plan_stream(Scenario(ttft_s=0.1, gap_s=0.01, faults={
        "stalls": [{"at": 0, "seconds": 1}, {"at": 2, "seconds": 0.5}], "malformed_at": 3}), spec(max_tokens=5))
    at = {(s.kind, s.start): s.at for s in plan.steps}
    assert at[("tokens", 0)] == pytest.approx(1.1)
    assert at[("tokens", 2)] - at[("tokens", 1)] == pytest.approx(0.51)  # the stall after 2 tokens
    assert kinds(plan).index("malformed") == 3 and plan.tokens == 5  # after 3 tokens


def test_usage_offset_and_no_done():
    plan = plan_stream(Scenario(faults={"final_usage_offset": -2, "no_done": True}), spec(max_tokens=6))
    assert plan.usage_reported == 4 and "done" not in kinds(plan)


@settings(max_examples=200, deadline=None)
@given(st.lists(st.integers(1, 6), min_size=1, max_size=5), st.integers(1, 300),
       st.sampled_from(["cycle", "random"]), st.integers(0, 5))
def test_chunks_always_cover_exactly_the_tokens(pattern, n, order, seed):
    plan = plan_stream(Scenario(tokens_per_chunk=tuple(pattern), chunk_order=order, seed=seed), spec(max_tokens=n))
    chunks = tokens(plan)
    assert sum(k for _, k in chunks) == n == plan.tokens
    assert all(start == sum(k for _, k in chunks[:i]) for i, (start, _) in enumerate(chunks))
    assert all(1 <= k <= max(pattern) for _, k in chunks)
    at = [s.at for s in plan.steps]
    assert at == sorted(at)


@pytest.mark.parametrize("api, body, message", [
    ("completions", {"prompt": "x"}, "'model' is required"),
    ("completions", {"model": "m"}, "'prompt' is required"),
    ("chat", {"model": "m", "messages": []}, "non-empty list"),
    ("completions", {"model": "m", "prompt": "x", "max_tokens": 0}, "positive integer"),
    ("completions", {"model": "m", "prompt": "x", "stream_options": {"include_usage": True}},
     "only be defined when `stream=True`"),
])
def test_bad_requests(api, body, message):
    with pytest.raises(BadRequest, match=message):
        read_request(api, body, strict=False)


def test_strict_servers_refuse_vllm_extensions():
    body = {"model": "m", "prompt": "x", "stream": True, "ignore_eos": True}
    with pytest.raises(BadRequest, match="Unrecognized request argument supplied: ignore_eos"):
        read_request("completions", body, strict=True)
    body = {"model": "m", "prompt": "x", "stream": True,
            "stream_options": {"include_usage": True, "continuous_usage_stats": True}}
    with pytest.raises(BadRequest, match="continuous_usage_stats"):
        read_request("completions", body, strict=True)
    ok = read_request("completions", {"model": "m", "prompt": "x", "stream": True, "logprobs": 1}, strict=True)
    assert ok.logprobs and not ok.token_ids


def test_requested_sources():
    s = spec(return_token_ids=True, logprobs=2,
             stream_options={"include_usage": True, "continuous_usage_stats": True})
    assert (s.token_ids, s.logprobs, s.include_usage, s.continuous_usage) == (True, True, True, True)
    bench_style = spec(logprobs=None)  # vLLM's bench sends "logprobs": null
    assert not bench_style.logprobs and not spec("chat", logprobs=False).logprobs
