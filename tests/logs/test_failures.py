"""One failure per attempt that ended in one (issue 36 item 3, as the field corpus counts them)."""

from __future__ import annotations

import datetime as dt

from sparktriage.logs.document import analyze
from sparktriage.logs.lineformat import parse_line
from sparktriage.logs.parser import parse_lines

UTC = dt.timezone.utc
BANNER = "(APIServer pid=1) INFO 03-11 17:57:00 [api_server.py:1] vLLM server version 0.20.0, serving model m"
READY = ["(EngineCore_DP0 pid=9) INFO 03-11 17:57:20 [core.py:1] init engine (profile, create kv "
         "cache, warmup model) took 10.0 s",
         "(APIServer pid=1) INFO 03-11 17:57:21 [launcher.py:1] Available routes are:",
         "INFO:     Application startup complete."]


def _doc(lines: list[str]) -> dict:
    return analyze(parse_lines(lines, tz=UTC, year=2026), tz=UTC)


def _codes(doc: dict) -> list[tuple[str, str]]:
    return [(f["code"], f["severity"]) for f in doc["findings"]]


def test_a_restart_without_a_banner_is_a_second_failed_attempt():
    attempt = ["(EngineCore_DP0 pid={pid}) INFO 03-11 17:57:{s:02d} [parallel_state.py:1] world_size=1 "
               "rank=0 local_rank=0 distributed_init_method=tcp://127.0.0.1:5 backend=nccl",
               "(EngineCore_DP0 pid={pid}) ERROR 03-11 17:57:{s:02d} [multiproc_executor.py:783] "
               "WorkerProc failed to start."]
    lines = [line.format(pid=469, s=10) for line in attempt] + \
        [line.format(pid=269, s=31) for line in attempt]
    doc = _doc(lines)
    assert doc["startup"]["attempts"] == 2 and doc["startup"]["failed"]
    assert [c for c in _codes(doc) if c[0] == "startup-failed"] == [("startup-failed", "error")] * 2
    assert "attempt 1 of 2 failed during distributed_init" in doc["findings"][0]["text"]
    # the same process logging on (same pid) after its failure is the same attempt
    doc = _doc(lines[:2] + [lines[1].replace("WorkerProc failed to start.", "Shutting down.")])
    assert doc["startup"]["attempts"] == 1
    # other processes reporting the same failure are not a restart: an error, at once, or a
    # name several processes share (0.31+'s "Worker" before the parallel groups exist)
    others = ["(EngineCore_DP0 pid=470) ERROR 03-11 17:57:11 [core.py:1] EngineCore failed",
              "(Worker pid=5) INFO 03-11 17:57:01 [x.py:1] hello",
              "(Worker pid=6) INFO 03-11 17:57:30 [x.py:1] shutting down"]
    doc = _doc(lines[:2] + [others[0]])
    assert doc["startup"]["attempts"] == 1
    doc = _doc([others[1]] + lines[:2] + [others[2]])
    assert doc["startup"]["attempts"] == 1


def test_an_unfinished_start_that_holds_an_error_failed_with_it():
    lines = [BANNER, "(APIServer pid=1) ERROR 03-11 17:57:05 [hub.py:1] Error retrieving file list: "
                     "timed out (retry 1/3)",
             "(APIServer pid=1) INFO 03-11 17:57:30 [model.py:1] Resolved architecture: X"]
    doc = _doc(lines)
    assert doc["startup"]["failed"] and doc["startup"]["failure"].startswith("Error retrieving")
    assert ("startup-failed", "error") in _codes(doc)
    doc = _doc([BANNER, lines[2]])  # no error: it did not finish, that is all
    assert ("startup-incomplete", "error") in _codes(doc) and not doc["startup"]["failed"]
    doc = _doc([lines[2]])  # the same, in an excerpt: it cannot tell
    assert ("startup-incomplete", "info") in _codes(doc) and doc["excerpt"]


def test_engine_death_while_serving_and_errors_that_are_not_one():
    watchdog = (" [36m(RayWorkerVllm pid=5085) [0m [E ProcessGroupNCCL.cpp:475] [Rank 4] Watchdog "
                "caught collective operation timeout: WorkNCCL(SeqNum=20518, OpType=ALLREDUCE) ran "
                "for 1800446 milliseconds before timing out.")
    f = parse_line(watchdog)
    assert (f.kind, f.level, f.relay) == ("glog", "ERROR", "RayWorkerVllm pid=5085")
    served = [BANNER] + READY + ['INFO:     10.0.0.1:5 - "POST /v1/completions HTTP/1.1" 200 OK']
    doc = _doc(served + [watchdog])
    (err,) = doc["errors"]
    assert (err["phase"], err["engine_death"], err["kind"]) == ("serving", True, "error")
    assert ("engine-died", "error") in _codes(doc)
    doc = _doc(served + ["(APIServer pid=1) ERROR 03-11 17:58:00 [serving.py:1] Error in "
                         "preprocessing prompt inputs"])
    assert doc["errors_total"] == 1 and doc["errors"][0]["phase"] == "serving"
    assert not any(code == "engine-died" for code, _ in _codes(doc))


def test_a_crash_before_the_first_serving_line_of_an_excerpt_is_a_crash_while_serving():
    lines = ["(APIServer pid=1) ERROR 06-21 19:23:33 [serving.py:932] vllm.v1.engine.exceptions."
             "EngineDeadError: EngineCore encountered an issue. See stack trace (above).",
             '(APIServer pid=1) INFO:     172.17.0.1:41776 - "POST /v1/chat/completions HTTP/1.1" '
             "400 Bad Request"]
    doc = _doc(lines)
    assert doc["phases"] == [] and not doc["startup"]["failed"]
    assert [e["phase"] for e in doc["errors"]] == ["serving"]
    assert ("engine-died", "error") in _codes(doc)
    assert "serving-only" in {r["code"] for r in doc["excerpt_detail"]["reasons"]}


def test_a_pasted_traceback_without_its_header_is_one_error():
    frames = ['(APIServer pid=8707)   File "/opt/vllm/async_llm.py", line 149, in __init__',
              "(APIServer pid=8707)     self.engine_core = EngineCoreClient.make_async_mp_client(",
              "(APIServer pid=8707)                        ^^^^^^^^^^^^^^^^^^^^^^^^^^^^^^^^^^^^^^",
              '(APIServer pid=8707)   File "/opt/vllm/core_client.py", line 139, in make_client']
    journal = [f"Aug 19 18:34:30 vllm vllm[8707]: {line}" for line in frames]
    doc = analyze(parse_lines(journal, reference=dt.datetime(2025, 9, 1, tzinfo=UTC).timestamp()))
    assert doc["errors_total"] == 1 and doc["errors"][0]["kind"] == "traceback"
    assert doc["startup"]["failed"]
    assert {r["code"] for r in doc["excerpt_detail"]["reasons"]} == {
        "no-start", "starts-mid-record", "ends-mid-record"}
    doc = _doc(frames + ["(APIServer pid=8707) RuntimeError: Engine core initialization failed."])
    assert doc["errors_total"] == 1
    assert doc["errors"][0]["text"] == "RuntimeError: Engine core initialization failed."
