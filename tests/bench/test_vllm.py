"""The client against a real vLLM CPU server: delivered tokens equal the server's own count."""

from __future__ import annotations

import asyncio
import json

import pytest

from bench_contract import check_bench_document
from sparktriage.bench.client import ClientSettings, make_stream_client, stream_request
from sparktriage.bench.endpoint import negotiate
from sparktriage.bench.protocol import ProtocolPlan, run_protocol
from sparktriage.bench.records import derive
from sparktriage.bench.workload import Workload, load_workload
from sparktriage.store.rundir import RunDir

pytestmark = pytest.mark.vllm

# The tiny model has random weights; ngram drafting matches when the PROMPT repeats itself
# (greedy decoding then falls into the prompt's loop and the drafts are accepted).
REPETITIVE = {
    "letters": "a b c d e f g " * 20,
    "code": "def f(x):\n    return x + 1\n" * 12,
    "sentence": "the quick brown fox jumps over the lazy dog. " * 15,
}


def workloads() -> list[Workload]:
    out = [load_workload("code"), load_workload("prose")]
    for name, prompt in REPETITIVE.items():
        out.append(Workload(name=f"rep-{name}", prompt=prompt, api="completions"))
        out.append(Workload(name=f"rep-{name}-chat", prompt=prompt, api="chat"))
    return [w.model_copy(update={"max_tokens": 96}) for w in out]


def measure(base_url: str) -> list[dict]:
    settings = ClientSettings(base_url, stall_timeout_s=120)

    async def go():
        records = []
        async with make_stream_client(settings) as client:
            for workload in workloads():
                caps = await negotiate(client, settings, workload, "tiny")
                assert caps.sources == ("token_ids", "logprobs", "continuous_usage", "final_usage"), caps.sources
                assert "logprobs" not in caps.extras  # token ids suffice: no logprobs cost
                record = await stream_request(client, settings, workload.path, caps.body(workload, "tiny"),
                                              workload=workload.name)
                records.append(record)
        return records

    return asyncio.run(go())


def assert_exact(records: list[dict]) -> list:
    metrics = []
    for record in records:
        m = derive(record)
        assert record["status"] == "ok", (record["workload"], record["reason"])
        usage = record["final_usage"]["completion_tokens"]
        assert m.output_tokens == usage == 96, (record["workload"], m.output_tokens, usage)
        assert m.token_source == "token_ids" and m.exact
        assert m.token_totals == {"token_ids": 96, "continuous_usage": 96, "final_usage": 96}
        assert m.disagreements == ()
        metrics.append(m)
    return metrics


def test_delivered_tokens_equal_usage_without_speculation(vllm_server):
    metrics = assert_exact(measure(vllm_server.base_url))
    # A starved API server may write a whole response at once (then there is no decode
    # interval and the rate is undefined, not invented); the first token always has a time.
    assert all(m.ttft_s > 0 and (m.decode_tok_s is None or m.decode_tok_s > 0) for m in metrics)


def test_delivered_tokens_equal_usage_with_ngram_speculation_and_multi_token_chunks(vllm_ngram_server):
    records = measure(vllm_ngram_server.base_url)
    metrics = assert_exact(records)
    by_name = {r["workload"]: m for r, m in zip(records, metrics)}
    multi = {name: m.max_tokens_per_chunk for name, m in by_name.items() if name.startswith("rep-")}
    # Speculation puts up to 1 + 3 tokens in one chunk: fewer chunks than tokens, for every
    # repetitive prompt, in both APIs.
    assert all(k >= 2 for k in multi.values()), multi
    assert all(by_name[n].chunks < 96 for n in multi), {n: by_name[n].chunks for n in multi}
    # And chunk counting would have undercounted: this is what exact counting prevents.
    assert sum(m.chunks for m in by_name.values()) < sum(m.output_tokens for m in by_name.values())


def test_protocol_end_to_end_and_server_log_records(vllm_server, tmp_path):
    launch = RunDir.create(tmp_path / "run", ["test"]).next_launch()
    small = tuple(load_workload(n).model_copy(update={"requests": 2, "warmup": 1, "max_tokens": 32})
                  for n in ("code", "prose"))
    doc = run_protocol(ProtocolPlan(ClientSettings(vllm_server.base_url), None, small), launch)
    check_bench_document(doc)
    assert doc["model"] == "tiny" and doc["server_version"] == "0.32.0"
    for w in doc["workloads"]:
        assert [r["output_tokens"] for r in w["requests"]] == [32, 32, 32]
        assert w["summary"]["counts"]["ok"] == 2
        # On a busy 2-core machine vLLM's API server may flush a whole response at once: the
        # only warning allowed is the one that says so (no decode interval, no invented rate).
        assert all("in one burst" in x for x in w["warnings"]), w["warnings"]
        rated = [r for r in w["requests"][1:] if r["decode_tok_s"] is not None]
        assert w["summary"]["decode_tok_s"]["n"] == len(rated)
    lines = [json.loads(l) for l in vllm_server.lines_path.read_text().splitlines()]
    startup = [l for l in lines if "Application startup complete" in l["line"]]
    assert startup and startup[0]["stream"] == "stderr" and startup[0]["t"] <= vllm_server.ready_unix
