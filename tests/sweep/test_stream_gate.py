"""The gate without non-streaming requests (sweep.evidence.stream_gate, docs/sweep.md "Correctness
gate"): the protocol's greedy streams compared depth 0 against k, on recorded request records and
through the engine on the simulator behind a gateway that refuses non-streaming requests."""

from __future__ import annotations

import json
from pathlib import Path

import pytest

from sparktriage.bench.workload import load_workloads
from sparktriage.sweep.running.engine import plan_sweep, run_sweep
from sparktriage.sweep.evidence.gate import gate
from sparktriage.sweep.evidence.stream_gate import protocol_outputs

from simkit import sim_deployment


def _records(folder: Path, ids: list[int] | None, text: str = "", warm: list[int] | None = None) -> Path:
    folder.mkdir(parents=True)
    rows = [{"workload": "code", "warmup": True, "status": "ok",
             "chunks": [{"ids": warm or [9, 9], "text": "x"}]},
            {"workload": "code", "warmup": False, "status": "ok",
             "chunks": [{"ids": ids[:2] if ids else None, "text": text[:3]},
                        {"ids": ids[2:] if ids else None, "text": text[3:]}]}]
    (folder / "requests.jsonl").write_text("\n".join(json.dumps(r) for r in rows) + "\n")
    return folder


def test_streams_are_compared_by_token_ids_else_by_text_and_no_difference_is_a_near_tie(tmp_path):
    code = load_workloads(["code"])
    zero = protocol_outputs(_records(tmp_path / "a", [1, 2, 3, 4]), code, 64)
    same = protocol_outputs(_records(tmp_path / "b", [1, 2, 3, 4], warm=[7]), code, 64)
    other = protocol_outputs(_records(tmp_path / "c", [1, 2, 5, 4]), code, 64)
    assert zero[0].tokens == ("1", "2", "3", "4")  # the first measured request, not the warm-up
    assert gate(zero, same, near_ties=False)["state"] == "pass"
    failed = gate(zero, other, near_ties=False)
    assert failed["state"] == "fail" and failed["prompts"][0]["position"] == 2
    assert "no logprobs to tell a near-tie" in failed["reason"]
    text = protocol_outputs(_records(tmp_path / "d", None, "abcdef"), code, 1)
    assert text[0].tokens == tuple("abcd")  # 1 token of text: 4 characters
    sampled = [w.model_copy(update={"temperature": 0.7}) for w in code]
    assert protocol_outputs(tmp_path / "a", tuple(sampled), 64) is None  # not greedy: not compared


@pytest.mark.slow
def test_behind_a_gateway_without_whole_replies_the_gate_reads_the_streams(tmp_path):
    scenario = {"seed": 3, "startup_s": {}, "stats_interval_s": 1.0,
                "decode": {"ttft_s": 0.005, "rate_tok_s": 400.0, "acceptance": [0.9, 0.7],
                           "spread_cv": 0.02},
                "faults": {"greedy_change": {"depth": 2, "at": 5}}, "server": {"stream_only": True}}
    plan = plan_sweep(sim_deployment(tmp_path, scenario), depths=(0, 1, 2), max_launches=3, requests=2,
                      max_tokens=40)
    result = run_sweep(plan, tmp_path / "run").document
    gates = {d["depth"]: d["gate"] for d in result["depths"]}
    replies = [json.loads(line) for line in
               (tmp_path / "run" / "launches" / "L001" / "gate-requests.jsonl").read_text().splitlines()]
    assert replies and all(r["status"] == 400 for r in replies)  # the gate's own requests refused
    assert gates[1]["state"] == "pass" and gates[1]["source"] == "protocol streams"
    assert gates[2]["state"] == "fail" and gates[2]["source"] == "protocol streams"
    assert gates[2]["prompts"][0]["position"] == 5 and "protocol's greedy streams" in gates[2]["reason"]
    assert result["decision"]["depth"] != 2
