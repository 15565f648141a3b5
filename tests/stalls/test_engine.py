"""The engine: ranked verdicts, confidence that reflects missing evidence, advice, unknown."""

from __future__ import annotations

import copy
import json
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


def test_held_nodes_take_the_slow_nodes_cause(classify):
    spec = _spec("nccl-hang/positive/tp2-spin-after-load.yaml")
    # make spark-2 crawl through its weights while spark-1 waits at its first collective
    slow = {"log": [[40, "Worker_TP1", "world_size=2 rank=1 local_rank=0 distributed_init_method=tcp://10.10.0.1:29500 backend=nccl"],
                    [41, "Worker_TP1", "Starting to load model /models/big-moe..."],
                    [41, "Worker_TP1", "Filesystem type for checkpoints: EXT4. Checkpoint size: 100.00 GiB. Available RAM: 110.00 GiB."],
                    *[[41 + 30 * i, f"Loading safetensors checkpoint shards: {5 * i:3d}% Completed | {i}/20 [00:30<09:30, 30.00s/it]"] for i in range(1, 21)],
                    [641, "Worker_TP1", "Loading weights took 600.00 seconds"]],
            "samples": {"procs": [{"from": 40, "to": 700, "profile": "worker", "record": {
                "state": "R", "cpu_user_pct": 14.0, "cpu_system_pct": 81.0, "read_bps": 179000000,
                "majflt_ps": 4100, "threads": [{"tid": 7000, "name": "VLLM::Worker_TP1", "state": "R", "cpu_pct": 95.0}]}}],
                        "host": [{"from": 0, "to": 700, "profile": "host_calm"}],
                        "disk": [{"from": 0, "to": 700, "profile": "disk_nvme", "record": {"read_bps": 180000000, "busy_pct": 30.0}}]},
            "dmesg": []}
    fast = {"log": [{"segment": "api_start", "at": 0},
                    [40, "Worker_TP0", "world_size=2 rank=0 local_rank=0 distributed_init_method=tcp://10.10.0.1:29500 backend=nccl"],
                    [41, "Worker_TP0", "Starting to load model /models/big-moe..."],
                    [51, "Worker_TP0", "Loading weights took 10.00 seconds"],
                    [645, "Worker_TP0", "Model loading took 96.1 GiB memory and 604.0 seconds"],
                    {"segment": "ready", "at": 650}],
            "samples": {"host": [{"from": 0, "to": 700, "profile": "host_calm"}]}}
    spec = {"nodes": {"spark-1": fast, "spark-2": slow}}
    doc, _ = classify(spec)
    by_node = {f["node"]: f for f in doc["findings"]}
    assert by_node["spark-2"]["verdict"]["id"] == "mmap-fault-crawl"
    held = by_node["spark-1"]
    assert held["held_by"] == "spark-2" and held["verdict"]["state"] == "held"
    assert held["verdict"]["id"] == "mmap-fault-crawl"
    assert held["verdict"]["confidence"] < by_node["spark-2"]["verdict"]["confidence"]
    assert held["verdict"]["evidence"][0]["condition"] == "held_by"


def test_secrets_in_log_lines_never_reach_the_document(classify):
    secret = "sk-live-0123456789abcdef"
    spec = {"nodes": {"n1": {"log": [
        [0, "APIServer", f"non-default args: {{'model': '/m', 'api_key': '{secret}'}}"],
        [1, "APIServer", "Resolved architecture: LlamaForCausalLM"],
        [2, "Worker", f"world_size=2 rank=0 local_rank=0 distributed_init_method=tcp://10.0.0.1:1 backend=gloo --api-key {secret}"],
    ], "samples": {"host": [{"from": 0, "to": 200, "profile": "host_calm"}]}}}}
    doc, _ = classify(spec)
    assert doc["findings"], "the silent rendezvous must be a finding"
    assert secret not in json.dumps(doc)
