"""`logs` and `stalls` make the same failure decision for each node of a two-node start.

The failure decision is per node, start attempt and serving stretch (logs/decision.py): a node
whose start failed has its failure in both commands even when the other node got further (the
API server's node, which `logs` reads first), and a node that only waited, or whose errors came
after a stop, has none. The logs are line records of two nodes in one file, as both commands
accept them (docs/formats.md), with the lines a two-node vLLM 0.32 start writes; no namespace is
started here (tests/launch/test_netns_vllm.py runs the same shapes on a real lab).
"""

from __future__ import annotations

import json
import tarfile
from collections import Counter
from pathlib import Path

from sparktriage.logs.scan import analyze_inputs
from sparktriage.stalls.analyze import analyze, load_rules

T0 = 1_780_000_000.0  # 2026-05-28 20:26:40 UTC
FAILURE_CODES = ("startup-failed", "engine-died")


def _stamp(t: float) -> str:
    import datetime as dt
    return dt.datetime.fromtimestamp(t, dt.timezone.utc).strftime("%m-%d %H:%M:%S")


def _head(ready: bool) -> list[tuple[float, str]]:
    """st-node1: the API server's node; it reaches the rendezvous, and is ready or waits."""
    lines = [
        (0, "(APIServer pid=1) INFO {s} [api_server.py:1868] vLLM API server version 0.32.0"),
        (1, "(APIServer pid=1) INFO {s} [utils.py:326] non-default args: {{'model': "
            "'/models/tiny', 'tensor_parallel_size': 2, 'distributed_executor_backend': 'mp'}}"),
        (6, "(EngineCore_DP0 pid=40) INFO {s} [core.py:93] Initializing a V1 LLM engine "
            "(v0.32.0) with config: model='/models/tiny', tensor_parallel_size=2"),
        (8, "(EngineCore_DP0 pid=40) INFO {s} [parallel_state.py:1208] world_size=2 rank=0 "
            "local_rank=0 distributed_init_method=tcp://10.200.0.1:29500 backend=gloo"),
    ]
    if ready:
        lines += [
            (12, "(Worker pid=52) INFO {s} [gpu_model_runner.py:2602] Starting to load model "
                 "/models/tiny..."),
            (20, "(Worker pid=52) INFO {s} [default_loader.py:267] Loading weights took 7.10 "
                 "seconds"),
            (40, "(EngineCore_DP0 pid=40) INFO {s} [core.py:210] init engine (profile, create "
                 "kv cache, warmup model) took 18.20 seconds"),
            (42, "(APIServer pid=1) INFO {s} [api_server.py:1600] Starting vLLM API server 0 "
                 "on http://0.0.0.0:8000"),
            (43, "(APIServer pid=1) INFO:     Application startup complete."),
        ]
    return lines


# st-node2: its vLLM dies at import (a logging config that does not exist), a traceback and
# no failure line of the catalog
PEER_DIES = [
    (2, "Traceback (most recent call last):"),
    (2, '  File "/usr/local/bin/vllm", line 10, in <module>'),
    (2, "    sys.exit(main())"),
    (2, "RuntimeError: Could not load logging config. File does not exist: "
        "/nonexistent/logging.json"),
]


def _records(path: Path, nodes: dict[str, list[tuple[float, str]]]) -> Path:
    rows = [{"t": T0 + dt, "node": node, "stream": "stderr", "line": line.format(s=_stamp(T0 + dt))}
            for node, lines in nodes.items() for dt, line in lines]
    rows.sort(key=lambda r: r["t"])
    path.write_text("".join(json.dumps(r) + "\n" for r in rows), encoding="utf-8")
    return path


def _both(path: Path) -> tuple[dict, dict]:
    document, _ = analyze(path, load_rules(None), None)
    return analyze_inputs([str(path)]), document


def _per_node(logs: dict, stalls: dict) -> tuple[Counter, Counter]:
    return (Counter(f["node"] for f in logs["findings"] if f["code"] in FAILURE_CODES),
            Counter(f["node"] for f in stalls["findings"] if f["kind"] == "failure"))


def test_one_node_fails_while_the_other_becomes_ready(tmp_path):
    path = _records(tmp_path / "two.lines.jsonl", {"st-node1": _head(ready=True),
                                                    "st-node2": PEER_DIES})
    logs, stalls = _both(path)
    by_logs, by_stalls = _per_node(logs, stalls)
    assert by_logs == by_stalls == Counter({"st-node2": 1})
    assert logs["startup"]["complete"] is True  # the head is the node logs reads first
    assert logs["nodes"]["st-node2"]["failed"] is True
    assert logs["nodes"]["st-node1"]["failed"] is False
    (finding,) = [f for f in logs["findings"] if f["code"] == "startup-failed"]
    assert finding["text"].startswith("startup on st-node2 failed") and \
        "Could not load logging config" in finding["text"]
    (failure,) = [f for f in stalls["findings"] if f["kind"] == "failure"]
    assert "Could not load logging config" in failure["reason"] and failure["phase"] != "serving"
    assert stalls["summary"]["errors"] == logs["errors_total"] == 1


def test_the_peer_that_never_starts_fails_and_the_head_only_waits(tmp_path):
    """The namespace lab's shape: the head waits at the rendezvous for rank 1 (no error), the
    peer died at import. Before the per-node decision `logs` counted failures of the node that
    got furthest only (the head: none) while `stalls` found the peer's."""
    head = _head(ready=False) + [(300, "(EngineCore_DP0 pid=40) INFO {s} [shm_broadcast.py:"
                                       "681] No available shared memory broadcast block found "
                                       "in 60 seconds.")]
    path = _records(tmp_path / "two.lines.jsonl", {"st-node1": head, "st-node2": PEER_DIES})
    logs, stalls = _both(path)
    by_logs, by_stalls = _per_node(logs, stalls)
    assert by_logs == by_stalls == Counter({"st-node2": 1})
    assert any(f["node"] == "st-node1" and f["kind"] == "stall" for f in stalls["findings"])
    assert {f["code"] for f in logs["findings"] if f.get("node") == "st-node1"} == set()


def test_errors_after_a_logged_stop_are_teardown_in_both(tmp_path):
    """Both nodes stopped with SIGTERM while starting: the errors each logs afterwards are its
    teardown, no failure in either command; the peer's import death is still one."""
    stop = [(60, "(APIServer pid=1) INFO {s} [launcher.py:254] [shutdown] EngineCore: trigger "
                 "received signal=SIGTERM"),
            (61, "(EngineCore_DP0 pid=40) ERROR {s} [core.py:1140] EngineCore failed to start."),
            (61, "(EngineCore_DP0 pid=40) ERROR {s} [core.py:1140] Traceback (most recent call "
                 "last):"),
            (61, "(EngineCore_DP0 pid=40) ERROR {s} [core.py:1140] KeyboardInterrupt")]
    path = _records(tmp_path / "two.lines.jsonl", {"st-node1": _head(ready=False) + stop,
                                                    "st-node2": PEER_DIES})
    logs, stalls = _both(path)
    by_logs, by_stalls = _per_node(logs, stalls)
    assert by_logs == by_stalls == Counter({"st-node2": 1})
    assert stalls["summary"]["errors_teardown"] >= 1
    # the head's "EngineCore failed to start." came after its stop: no failed start in logs
    assert logs["nodes"]["st-node1"]["failed"] is False
    assert logs["nodes"]["st-node2"]["failed"] is True
    assert stalls["summary"]["errors"] + stalls["summary"]["errors_teardown"] + \
        stalls["summary"]["errors_other"] == logs["errors_total"]


def test_a_bundle_teardown_is_no_failure_in_either_command(tmp_path):
    """A two-node evidence bundle: the collector's startup timeout tears the waiting head down
    (its `teardown` event), and the head logs errors as it is killed, without a stop line of
    its own. Both commands read the bundle's teardown (bundle/teardown.py): the head's errors
    are its teardown; the peer's import death is the one failure."""
    from sparktriage.stalls.synth import write_bundle

    killed = [(121, "(EngineCore_DP0 pid=40) ERROR {s} [core.py:1140] EngineCore failed to "
                    "start."),
              (121, "(EngineCore_DP0 pid=40) ERROR {s} [core.py:1140] RuntimeError: "
                    "Connection closed by peer")]
    nodes = {"st-node1": _head(ready=False) + killed, "st-node2": PEER_DIES}
    spec = {"outcome": "timeout", "nodes": {
        node: {"log": [[dt, line.format(s=_stamp(T0 + dt))] for dt, line in lines]}
        for node, lines in nodes.items()}}
    bundle = write_bundle(spec, tmp_path / "bundle", tmp_path, t0=T0)
    (bundle / "events.jsonl").write_text(json.dumps(
        {"t": T0 + 120, "event": "teardown", "node": "st-node1", "reason": "timeout"}) + "\n")
    logs, stalls = _both(bundle)
    by_logs, by_stalls = _per_node(logs, stalls)
    assert by_logs == by_stalls == Counter({"st-node2": 1})
    assert logs["nodes"]["st-node1"]["failed"] is False
    assert stalls["summary"]["errors_teardown"] == 2
    with tarfile.open(tmp_path / "bundle.tar.gz", "w:gz") as archive:  # the same, archived
        archive.add(bundle, arcname="bundle")
    assert _per_node(*_both(tmp_path / "bundle.tar.gz")) == (by_logs, by_stalls)
    # without the teardown event the head's errors end its start: a failure in both
    (bundle / "events.jsonl").write_text("")
    logs, stalls = _both(bundle)
    by_logs, by_stalls = _per_node(logs, stalls)
    assert by_logs == by_stalls == Counter({"st-node1": 1, "st-node2": 1})


def test_a_headless_node_that_dies_while_the_cluster_serves_is_an_engine_death(tmp_path):
    """A rank that never logs ready (its node runs no API server) serves once the head does:
    its death after that is `engine-died` on that node in both commands, not a failed start."""
    worker = [(5, "(Worker_TP1 pid=61) INFO {s} [parallel_state.py:1208] world_size=2 rank=1 "
                  "local_rank=0 distributed_init_method=tcp://10.200.0.1:29500 backend=gloo"),
              (200, "(Worker_TP1 pid=61) ERROR {s} [multiproc_executor.py:671] Worker proc "
                    "VllmWorker-1 died unexpectedly, shutting down executor.")]
    path = _records(tmp_path / "two.lines.jsonl", {"st-node1": _head(ready=True),
                                                    "st-node2": worker})
    logs, stalls = _both(path)
    by_logs, by_stalls = _per_node(logs, stalls)
    assert by_logs == by_stalls == Counter({"st-node2": 1})
    (finding,) = [f for f in logs["findings"] if f["code"] in FAILURE_CODES]
    assert finding["code"] == "engine-died" and finding["node"] == "st-node2"
    assert finding["text"].startswith("engine died after startup on st-node2")
    (failure,) = [f for f in stalls["findings"] if f["kind"] == "failure"]
    assert failure["phase"] == "serving"
