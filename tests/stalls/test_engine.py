"""The engine: ranked verdicts, confidence that reflects missing evidence, advice, unknown."""

from __future__ import annotations

import copy
from pathlib import Path

from sparktriage.stalls import fixtures as fixture_layer

FIXTURES = Path(__file__).resolve().parents[1] / "fixtures" / "stalls"


def _spec(rel: str) -> dict:
    return fixture_layer.load_spec(FIXTURES / rel)


def _only(doc: dict, kind: str = "stall") -> dict:
    found = [f for f in doc["findings"] if f["kind"] == kind]
    assert len(found) == 1, found
    return found[0]


def _with_log_ref(spec: dict, rel: str) -> dict:
    spec = copy.deepcopy(spec)
    for node in spec["nodes"].values():
        if "log_ref" in node:
            node["log_ref"] = str((FIXTURES / rel).parent / node["log_ref"])
    return spec


def test_without_stacks_compile_stays_open_and_says_how_to_decide(classify):
    spec = _spec("compile-jit/positive/cold-inductor-cache.yaml")
    full = _only(classify(spec)[0])["verdict"]
    assert full["id"] == "compile-jit" and full["state"] == "decided"
    spec["nodes"]["spark-1"].pop("stacks")
    for rng in spec["nodes"]["spark-1"]["samples"]["procs"]:
        rng.get("record", {}).pop("children", None)
    bare = _only(classify(spec)[0])["verdict"]
    assert bare["id"] == "compile-jit" and bare["state"] == "open"
    assert bare["confidence"] < full["confidence"] / 1.5
    assert any("run collect with --stacks" in a for a in bare["to_raise_confidence"])


def test_removing_the_deciding_signal_changes_the_verdict(classify):
    spec = _with_log_ref(_spec("cold-storage/positive/throttled-read.yaml"),
                         "cold-storage/positive/throttled-read.yaml")
    assert _only(classify(spec)[0])["verdict"]["id"] == "cold-storage"
    node = spec["nodes"]["spark-1"]
    node["dmesg"] = [[300, "Out of memory: Killed process 4242 (VLLM::Worker)"]]
    verdict = _only(classify(spec)[0])["verdict"]
    assert verdict["id"] == "uma-memory-pressure"
    cold = next(a for a in verdict["alternatives"] if a["id"] == "cold-storage")
    assert "memory_collapse" in cold["why_not"] and "dmesg" in cold["why_not"]


def test_nothing_fits_gives_unknown(classify):
    spec = {"nodes": {"n1": {"log": [{"segment": "api_start", "at": 0},
                                     {"segment": "worker_single", "at": 40},
                                     [40, "Worker", "Doing something undocumented"],
                                     [400, "Worker", "Done with it"],
                                     {"segment": "ready", "at": 401}]}}}
    finding = _only(classify(spec)[0])
    assert finding["phase"] == "distributed_init"
    assert finding["verdict"]["confidence"] < 0.5


def test_json_contract_of_a_finding(classify):
    doc, _ = classify(_spec("download-or-lock/positive/held-lock.yaml"))
    finding = _only(doc)
    assert {"kind", "node", "start", "end", "duration_s", "phase", "verdict"} <= set(finding)
    verdict = finding["verdict"]
    assert {"id", "confidence", "evidence", "alternatives", "fix"} <= set(verdict)
    assert all(set(a) >= {"id", "why_not"} for a in verdict["alternatives"])
    assert verdict["fix"]["summary"] and verdict["fix"]["steps"]
    assert all({"observed", "t", "node"} <= set(e) for e in verdict["evidence"])
    assert any("filelock" in e["observed"] for e in verdict["evidence"])
    assert finding["duration_s"] == finding["end"] - finding["start"]
    assert doc["schema_version"] == 1 and isinstance(doc["phases"], list)
    assert [p["name"] for p in doc["phases"]][:2] == ["resolve", "engine_start"]
