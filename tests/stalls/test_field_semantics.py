"""Issue #36's classification rules, one behaviour each: stated waits are stall time, the
failure model is the one `logs` counts, warmups and compiles have their budgets, several ranks
imply a collective backend, and what an excerpt cannot tell stays unknown."""

from __future__ import annotations

from pathlib import Path

from sparktriage.logs.document import analyze as logs_analyze
from sparktriage.logs.parser import iter_events
from sparktriage.stalls.analyze import analyze

SHM = ("No available shared memory broadcast block found in 60 seconds. This typically happens "
       "when some processes are hanging or doing some time-consuming work.")
HEAD = [{"segment": "api_start", "at": 0}, {"segment": "worker_single", "at": 40}]
LOAD = [{"segment": "load_begin", "at": 41},
        [56, "Loading safetensors checkpoint shards: 100% Completed | 20/20 [00:15<00:00,  0.75s/it]"],
        {"segment": "load_end", "at": 56}]


def _spec(log: list) -> dict:
    return {"nodes": {"n1": {"log": log}}}


def _write(tmp_path: Path, text: str) -> Path:
    path = tmp_path / "excerpt.log"
    path.write_text(text, encoding="utf-8")
    return path


def test_waiting_lines_alone_are_a_stall_of_the_time_they_state(tmp_path, rules):
    """Four shm-broadcast lines and nothing else: 4 x 60 s stated, reaching back 60 s before
    the first line; never 'steady progress'."""
    lines = [f"INFO 11-04 10:2{i}:40 [shm_broadcast.py:466] {SHM}" for i in range(1, 5)]
    doc, _ = analyze(_write(tmp_path, "\n".join(lines) + "\n"), rules)
    (stall,) = doc["findings"]
    # found twice: the waits the lines state, and no progress from the first line on
    assert stall["kind"] == "stall" and sorted(stall["how"]) == ["hang", "wait"]
    assert stall["duration_s"] == 240.0 and stall["start_offset_s"] == -60.0
    assert stall["phase"] == "distributed_init"  # the broadcast queue exists: workers do
    assert stall["verdict"]["id"] == "nccl-hang" and stall["verdict"]["state"] == "open"
    assert doc["summary"]["healthy"] is False


def test_placement_group_wait_states_time_since_it_began(classify):
    wait = ("Waiting for creating a placement group of specs for {} seconds. specs=[{{'GPU': 1.0}},"
            " {{'GPU': 1.0}}]. Check `ray status` and `ray list nodes` to see if you have enough "
            "resources.")
    log = [[0, "EngineCore", wait.format(70)], [80, "EngineCore", wait.format(150)]]
    doc, _ = classify(_spec(log), form="log")
    (stall,) = doc["findings"]
    assert (stall["start_offset_s"], stall["end"] - stall["start"]) == (-70.0, 150.0)
    assert stall["verdict"]["id"] == "ray-placement-wait"
    assert stall["verdict"]["state"] == "decided"


def test_a_watchdog_states_the_hang_before_the_failure(classify):
    log = HEAD[:1] + [[40, "Worker_TP0", "world_size=2 rank=0 local_rank=0 distributed_init_method=tcp://10.0.0.1:29500 backend=nccl"]] \
        + LOAD + [[657, "Worker_TP0", "ERROR", "[Rank 0] Watchdog caught collective operation timeout: WorkNCCL(SeqNum=2, OpType=ALLREDUCE, NumelIn=1, NumelOut=1, Timeout(ms)=600000) ran for 600000 milliseconds before timing out."]]
    doc, _ = classify(_spec(log), form="log")
    kinds = {(f["kind"], f["verdict"]["id"]) for f in doc["findings"]}
    assert kinds == {("stall", "nccl-hang"), ("failure", "nccl-hang")}
    stall = next(f for f in doc["findings"] if f["kind"] == "stall")
    assert stall["duration_s"] >= 600.0 and "wait" in stall["how"]


def test_the_nccl_timeout_option_is_no_timeout(classify):
    log = HEAD + [[40, "[I ProcessGroupNCCL.cpp:852] [PG 0 Rank 0] ProcessGroupNCCL initialization options: size: 2, global rank: 0, TIMEOUT(ms): 600000"]] \
        + LOAD + [{"segment": "compile_warm", "at": 58}, {"segment": "kv_and_graphs", "at": 64},
                  {"segment": "ready", "at": 74}]
    doc, _ = classify(_spec(log), form="log")
    assert doc["findings"] == []


def test_failures_are_the_errors_logs_counts_in_their_phase(tmp_path, rules):
    """A crash while serving: one failure in `serving` holding every error `logs` counts."""
    text = "\n".join([
        "INFO 06-23 15:00:00 [api_server.py:1] vLLM API server version 0.31.0",
        "INFO 06-23 15:00:10 [launcher.py:1] Starting vLLM server on http://0.0.0.0:8000",
        'INFO:     10.0.0.5:41776 - "POST /v1/chat/completions HTTP/1.1" 200 OK',
        "INFO 06-23 15:05:00 [loggers.py:1] Avg prompt throughput: 10.0 tokens/s, Avg generation throughput: 30.0 tokens/s",
        "ERROR 06-23 15:08:34 [core.py:1138] EngineCore hit an exception: Traceback (most recent call last):",
        "ERROR 06-23 15:08:34 [core.py:1138] RuntimeError: CUDA error: an illegal memory access was encountered",
        "ERROR 06-23 15:08:34 [async_llm.py:704] AsyncLLM output_handler failed.",
    ]) + "\n"
    path = _write(tmp_path, text)
    doc, _ = analyze(path, rules)
    logs = logs_analyze(iter_events([str(path)]))
    (failure,) = doc["findings"]
    assert failure["kind"] == "failure" and failure["phase"] == "serving"
    assert failure["errors"] == logs["errors_total"] == doc["summary"]["errors"] == 3


def test_one_failure_per_attempt_even_when_errors_are_minutes_apart(classify):
    log = HEAD + [[45, "APIServer", "ERROR", "Error retrieving file list: connection timed out"],
                  [180, "APIServer", "ERROR", "Error retrieving file list: connection timed out"]]
    doc, _ = classify(_spec(log), form="log")
    failures = [f for f in doc["findings"] if f["kind"] == "failure"]
    assert [f["errors"] for f in failures] == [2]


def test_a_restarted_engine_is_a_second_failure(classify):
    """A restart policy brings the engine back under a new pid without a new banner."""
    def attempt(t: float, pid: int) -> list:
        proc = f"(EngineCore_DP0 pid={pid}) "
        stamp = f"09-21 14:13:{20 + t:02d}"  # synth's T0 is 14:13:20 UTC
        return [[t, proc + f"INFO {stamp} [parallel_state.py:1] world_size=1 rank=0 local_rank=0 distributed_init_method=tcp://127.0.0.1:5 backend=nccl"],
                [t, proc + f"ERROR {stamp} [multiproc_executor.py:783] WorkerProc failed to start."]]
    log = [[0, "APIServer", "vLLM server version 0.31.0"]]
    doc, _ = classify(_spec(log + attempt(10, 469) + attempt(30, 269)), form="log")
    failures = [f for f in doc["findings"] if f["kind"] == "failure"]
    assert len(failures) == 2 and doc["summary"]["failures"] == 2


def test_errors_after_a_stop_are_teardown_not_failures(classify):
    log = HEAD + LOAD + [[60, "APIServer", "Received SIGTERM, shutting down"],
                         [61, "EngineCore", "ERROR", "RuntimeError: cancelled during shutdown"]]
    doc, _ = classify(_spec(log), form="log")
    assert not [f for f in doc["findings"] if f["kind"] == "failure"]
    assert doc["summary"]["errors_teardown"] == 1


def test_a_warmup_vllm_reports_has_its_own_budget(classify):
    warm = HEAD + LOAD + [{"segment": "compile_warm", "at": 58}]
    after = [{"segment": "kv_and_graphs", "at": 158}, {"segment": "ready", "at": 168}]
    doc, _ = classify(_spec(warm + [[157, "Worker", "Initial profiling/warmup run took 94.12 s"]] + after))
    assert doc["findings"] == []
    assert any("warmup" in o["text"] for o in doc["observations"])
    # the same silence ended by a line that does not account for it is a stall
    doc, _ = classify(_spec(warm + [[157, "Worker", "Initial profiling/warmup run took 2.00 s"]] + after))
    assert [f["kind"] for f in doc["findings"]] == ["stall"]


def test_cache_the_graph_for_dynamic_shape_is_compile(classify):
    log = HEAD + LOAD + [[58, "Worker", "Dynamo bytecode transform time: 3.01 s"],
                         [58, "Worker", "Directly load the compiled graph(s) for compile range (1, 2048) from the cache, took 0.50 s"],
                         [97, "Worker", "Cache the graph for dynamic shape for later use"],
                         [97, "Worker", "Compiling a graph for dynamic shape takes 39.20 s"],
                         {"segment": "kv_and_graphs", "at": 100}, {"segment": "ready", "at": 110}]
    doc, _ = classify(_spec(log), form="log")
    assert doc["findings"] == []
    (seen,) = doc["observations"]
    assert seen["phase"] == "compile" and seen["cause"] == "compile-jit"


def test_several_ranks_imply_a_collective_backend(classify):
    """TP=2 in the config and no line naming NCCL: nccl-hang stays a candidate."""
    log = [[0, "EngineCore", "Initializing a V1 LLM engine (v0.31.0) with config: model='/m', tensor_parallel_size=2, device_config=cuda"],
           [1, "Worker_TP0", "Starting to load model /m..."]]
    doc, classification = classify(_spec(log), form="log", params=None)
    assert not doc["findings"]  # the excerpt ends: nothing to judge
    from sparktriage.stalls import ranks
    assert ranks.ranks(classification.detection.timelines) == 2
    assert ranks.collective(classification.detection.timelines) is True


def test_a_cpu_build_implies_no_nccl(classify):
    log = [[0, "EngineCore", "Initializing a V1 LLM engine (v0.31.0) with config: model='/m', tensor_parallel_size=2, device_config=cpu"]]
    _, classification = classify(_spec(log), form="log")
    from sparktriage.stalls import ranks
    assert ranks.collective(classification.detection.timelines) is False


def test_toolchain_failure_is_never_a_stall(classify):
    log = HEAD + [[44, "EngineCore", "ERROR", "triton.runtime.errors.PTXASError: PTXAS error: Internal Triton PTX codegen error"],
                  [44, "EngineCore", "ERROR", "EngineCore failed to start."]]
    doc, _ = classify(_spec(log), form="log")
    assert [(f["kind"], f["verdict"]["id"]) for f in doc["findings"]] == \
        [("failure", "toolchain-mismatch")]


def test_an_excerpt_without_anchors_has_no_phase(tmp_path, rules):
    text = ("ERROR 01-12 01:09:14 [core.py:708] EngineCore failed to start.\n"
            "ERROR 01-12 01:09:14 [core.py:708] RuntimeError: something unexplained\n")
    doc, _ = analyze(_write(tmp_path, text), rules)
    (failure,) = doc["findings"]
    assert failure["phase"] is None and failure["verdict"]["id"] == "unknown"


def test_marker_groups_are_only_stated_durations(rules):
    import pytest
    from pydantic import ValidationError
    from sparktriage.stalls.schema import Marker
    with pytest.raises(ValidationError, match="unknown named group"):
        Marker(pattern=r"waited (?P<seconds>\d+)")
    assert Marker(pattern=r"after (?P<wait_s>\d+) s|after (?P<wait_s2>\d+)s").states_wait
    markers = rules.markers
    # torch's retry warning states seconds and is no failure; its error states milliseconds
    line = "[c10d] The client socket has timed out after 60s while trying to connect to (10.0.0.1, 29500)."
    assert markers.stated("c10d_retry", line, "wait_s") == 60.0
    assert "c10d_timeout" not in markers.match(line)
    line = "The client socket has timed out after 600000ms while trying to connect to (10.0.0.1, 29500)."
    assert markers.stated("c10d_timeout", line, "wait_s") == 600.0
    # vLLM 0.6's wording of the shm broadcast wait
    assert markers.stated("shm_broadcast_wait", "No available block found in 60 second. ", "wait_s") == 60.0
    # a left-more alternative (ProcessGroupNCCL ... timed out) must not hide the stated time
    line = ("[E ProcessGroupNCCL.cpp:563] [Rank 0] Watchdog caught collective operation timeout: "
            "WorkNCCL(SeqNum=2, OpType=ALLREDUCE, Timeout(ms)=600000) ran for 600059 milliseconds "
            "before timing out.")
    assert markers.stated("nccl_watchdog", line, "wait_s") == 600.059


def test_errors_that_ended_nothing_are_no_failure(classify):
    """An error during a start that still became ready, and a request's error while serving:
    `logs` counts both, neither ended anything, `stalls` counts them apart."""
    log = HEAD + [[42, "Worker", "ERROR", "Failed to import flash_attn: falling back to SDPA"]] + LOAD \
        + [{"segment": "compile_warm", "at": 58}, {"segment": "kv_and_graphs", "at": 64},
           {"segment": "ready", "at": 74},
           [90, "APIServer", "ERROR", "Error in preprocessing prompt inputs: prompt too long"]]
    doc, classification = classify(_spec(log), form="log")
    assert doc["findings"] == []
    assert doc["summary"]["errors_other"] == 2 == classification.evidence.logs["errors_total"]
    assert doc["summary"]["errors"] == 0


def test_what_a_server_logs_as_the_collector_stops_it_is_teardown(classify, rules, tmp_path):
    """A recorded start stopped on purpose once ready (the collector's teardown event, reason
    `ready`): the engine's death the kill causes is teardown; after `target-exited` it is not."""
    import json
    log = HEAD + LOAD + [{"segment": "compile_warm", "at": 58}, {"segment": "kv_and_graphs", "at": 64},
                         {"segment": "ready", "at": 74},
                         [80, "APIServer", "ERROR", "AsyncLLM output_handler failed."],
                         [80, "APIServer", "ERROR", "vllm.v1.engine.exceptions.EngineDeadError: EngineCore encountered an issue."]]
    _, first = classify(_spec(log))
    bundle = Path(first.evidence.origin)
    t0 = first.detection.timelines["n1"].start
    for reason, failures in (("ready", 0), ("target-exited", 1)):
        (bundle / "events.jsonl").write_text(json.dumps(
            {"t": t0 + 82, "event": "teardown", "node": "n1", "reason": reason}) + "\n")
        doc, _ = analyze(bundle, rules)
        assert doc["summary"]["failures"] == failures, reason
        assert doc["summary"]["errors_teardown"] == 2 * (1 - failures)
