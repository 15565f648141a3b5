"""The protocol runner against the simulator: raw records as they arrive, summary rebuilt."""

from __future__ import annotations

import json

import pytest

from bench_contract import check_bench_document
from sparktriage.bench.client import ClientSettings
from sparktriage.bench.protocol import ProtocolPlan, rebuild, run_protocol
from sparktriage.bench.workload import load_workload
from sparktriage.errors import EndpointError
from sparktriage.store.documents import read_document
from sparktriage.store.rundir import RunDir


def workload(name: str, sim: dict | None = None, **update):
    base = load_workload(name).model_copy(update={"requests": 3, "warmup": 1, "max_tokens": 32, **update})
    if sim is not None:
        base = base.model_copy(update={"extra_body": {"sim": sim}})
    return base


def test_protocol_writes_each_record_as_it_arrives_and_derives_the_summary(sim, tmp_path):
    launch = RunDir.create(tmp_path / "run", ["test"]).next_launch()
    seen = []

    def observe(event, details):
        if event == "request":  # the record is on disk before the next request is sent
            lines = [json.loads(l) for l in launch.requests_path.read_text().splitlines()]
            seen.append((details["workload"], details["index"], len(lines)))

    since = sim.reset()
    plan = ProtocolPlan(ClientSettings(sim.base_url), None,
                        (workload("code", {"gap_s": 0.001, "tokens_per_chunk": [1, 3]}), workload("prose")))
    doc = run_protocol(plan, launch, observe)
    assert seen == [("code", i, i + 1) for i in range(4)] + [("prose", i, i + 5) for i in range(4)]
    check_bench_document(doc)
    assert doc == {"schema_version": 1, **{k: v for k, v in read_document(launch.path / "bench.json").items()
                                           if k != "schema_version"}}
    code, prose = doc["workloads"]
    assert [r["warmup"] for r in code["requests"]] == [True, False, False, False]
    assert all(r["output_tokens"] == 32 and r["status"] == "ok" for r in code["requests"] + prose["requests"])
    assert code["summary"]["max_tokens_per_chunk"] == 3 and code["summary"]["decode_tok_s"]["n"] == 3
    assert code["capabilities"]["sources"] == ["token_ids", "logprobs", "continuous_usage", "final_usage"]
    # Every request's chunks and tokens are what the simulator really sent (rates are checked
    # against the truth on long streams in test_client_sim.py; these streams last 30 ms).
    truths = sim.truths(since)
    records = [json.loads(l) for l in launch.requests_path.read_text().splitlines()]
    code_records = [r for r in records if r["workload"] == "code"]
    probes = [json.loads(l) for l in (launch.path / "negotiation.jsonl").read_text().splitlines()]
    assert [(p["workload"], p["purpose"], p["status"]) for p in probes] == [
        ("code", "negotiate", "ok"), ("prose", "negotiate", "ok")]
    assert not any("purpose" in r for r in records)  # requests.jsonl: protocol requests only
    assert [r["chunks"] for r in code["requests"]] == [truths[r["response_id"]].chunks for r in code_records]
    assert [r["output_tokens"] for r in code["requests"]] == [truths[r["response_id"]].tokens
                                                              for r in code_records]
    assert (launch.path / "launch.json").exists() and (launch.path / "capabilities.json").exists()


def test_rebuild_gives_the_same_document(sim, tmp_path):
    launch = RunDir.create(tmp_path / "run", ["test"]).next_launch()
    doc = run_protocol(ProtocolPlan(ClientSettings(sim.base_url), "sim", (workload("code"),)), launch)
    (launch.path / "bench.json").unlink()
    assert rebuild(launch) == doc


def test_ignore_eos_not_honoured_gives_a_warning(sim, tmp_path):
    launch = RunDir.create(tmp_path / "run", ["test"]).next_launch()
    short = workload("code", {"eos_after": 10, "honour_ignore_eos": False})
    doc = run_protocol(ProtocolPlan(ClientSettings(sim.base_url), None, (short,)), launch)
    (code,) = doc["workloads"]
    assert all(r["output_tokens"] == 10 and r["short"] for r in code["requests"])
    assert any("stopped early although ignore_eos was asked" in w for w in code["warnings"])


def test_failed_requests_are_kept_in_their_own_bucket(sim, tmp_path):
    launch = RunDir.create(tmp_path / "run", ["test"]).next_launch()
    flaky = workload("code", {"gap_s": 0.001, "sequence": [{}, {}, {"faults": {"reset_at": 7}}]},
                     requests=4)
    doc = run_protocol(ProtocolPlan(ClientSettings(sim.base_url), None, (flaky,)), launch)
    (code,) = doc["workloads"]
    # Requests to the model: probe, warm-up, 1, 2, 3, 4 -> sequence positions 0 1 2 0 1 2.
    assert [r["status"] for r in code["requests"]] == ["ok", "incomplete", "ok", "ok", "incomplete"]
    assert code["summary"]["counts"] == {"measured": 4, "warmup": 1, "ok": 2, "error": 0, "incomplete": 2}
    assert code["summary"]["decode_tok_s"]["n"] == 2
    assert [f["output_tokens"] for f in code["failed"]] == [7, 7]
    assert "connection reset by peer" in code["failed"][0]["reason"]
    assert any("3 requests failed" not in w and "2 requests failed" in w for w in code["warnings"])


def test_a_later_workload_that_cannot_start_keeps_the_earlier_summary(sim, tmp_path):
    launch = RunDir.create(tmp_path / "run", ["test"]).next_launch()
    broken = workload("prose", {"faults": {"http_status": 500, "http_message": "engine dead"}})
    plan = ProtocolPlan(ClientSettings(sim.base_url), None, (workload("code"), broken))
    with pytest.raises(EndpointError, match="HTTP 500: engine dead"):
        run_protocol(plan, launch)
    doc = read_document(launch.path / "bench.json")
    assert [w["name"] for w in doc["workloads"]] == ["code", "prose"]
    assert len(doc["workloads"][0]["requests"]) == 4 and doc["workloads"][1]["requests"] == []
