"""Startup timelines of the real CPU logs: phases, reported durations, gaps, failures."""

from __future__ import annotations

import datetime as dt
from pathlib import Path

import pytest

from sparktriage.logs.parser import parse_files, parse_lines
from sparktriage.logs.timeline import startup_timeline, startup_timelines

FIXTURES = Path(__file__).parent.parent / "fixtures" / "logs"
UTC = dt.timezone.utc


def unix(text: str) -> float:
    return dt.datetime.fromisoformat(text).replace(tzinfo=UTC).timestamp()


def phases(tl):
    return [(p.name, p.duration_s) for p in tl.phases]


def test_compiled_cpu_startup():
    tl = startup_timeline(parse_files([FIXTURES / "vllm-cpu-startup.log"], tz=UTC, year=2026))
    assert phases(tl) == [("resolve", 34.0), ("engine_start", 15.0), ("distributed_init", 0.0),
                          ("weight_read", 0.0), ("post_load", 2.0), ("compile", 42.0),
                          ("kv_profiling", 2.0), ("ready", 1.0)]
    assert tl.phases[0].start == unix("2026-11-29T20:53:15")
    assert tl.phases[-1].end == unix("2026-11-29T20:54:51")  # Application startup complete
    assert tl.complete and not tl.failed and tl.startup_s == 96.0
    assert tl.reported == {"loading_weights_s": 0.02, "init_engine_s": 44.15}
    init = [g for g in tl.gaps if g.name == "init_engine"][0]
    assert (init.wall_s, init.significant) == (44.0, False)
    assert max(s.duration_s for s in tl.silences) == 41.0  # the silent compile
    assert [s.phase for s in tl.silences if s.duration_s == 41.0] == ["compile"]


def test_failed_start_stops_in_engine_start():
    tl = startup_timeline(parse_files([FIXTURES / "vllm-cpu-default-kv-failure.log"], tz=UTC,
                                      year=2026))
    assert [p.name for p in tl.phases] == ["resolve", "engine_start"]
    assert tl.failed and not tl.complete and not tl.phases[-1].open
    assert tl.failure == "WorkerProc failed to start."
    assert tl.failure_t == unix("2026-11-29T21:23:29")
    assert tl.last_line.startswith("RuntimeError: Engine core initialization failed")


def test_stalled_log_leaves_the_last_phase_open_with_the_wall_gap():
    lines = [
        "(APIServer pid=1) INFO 11-29 10:00:00 [api_server.py:1] vLLM API server version 0.14.0",
        "(EngineCore_DP0 pid=2) INFO 11-29 10:00:05 [core.py:1] Initializing a V1 LLM engine (v0.14.0) with config: model='m'",
        "(Worker_TP0 pid=3) INFO 11-29 10:00:09 [parallel_state.py:1] world_size=2 rank=0 local_rank=0 distributed_init_method=tcp://127.0.0.1:1 backend=nccl",
        "(Worker_TP0 pid=3) INFO 11-29 10:00:10 [gpu_model_runner.py:1] Starting to load model m...",
        "(Worker_TP0 pid=3) INFO 11-29 10:05:10 [default_loader.py:1] Loading weights took 20.00 seconds",
        "(Worker_TP1 pid=4) INFO 11-29 10:05:12 [default_loader.py:1] Loading weights took 22.50 seconds",
        "(Worker_TP0 pid=3) INFO 11-29 10:06:00 [gpu_model_runner.py:1] Model loading took 60.1 GiB memory and 350.000000 seconds",
    ]
    tl = startup_timeline(parse_lines(lines, tz=UTC, year=2026))
    assert [p.name for p in tl.phases][-1] == "post_load"
    assert tl.phases[-1].open and not tl.complete
    assert tl.reported["loading_weights_s"] == 22.5  # slowest rank
    assert tl.reported["model_loading_gib"] == 60.1
    lw = [g for g in tl.gaps if g.name == "loading_weights"][0]
    assert lw.wall_s == 302.0 and lw.significant  # 10:00:10 → 10:05:12 against 22.5 s reported


def test_restart_attempts_and_nodes():
    one = [
        "(APIServer pid=1) INFO 11-29 10:00:00 [api_server.py:1] vLLM API server version 0.14.0",
        "(EngineCore_DP0 pid=2) INFO 11-29 10:00:05 [core.py:1] Initializing a V1 LLM engine (v0.14.0) with config: model='m'",
        "(EngineCore_DP0 pid=2) ERROR 11-29 10:00:06 [core.py:1] EngineCore failed to start.",
        "(APIServer pid=5) INFO 11-29 10:01:00 [api_server.py:1] vLLM API server version 0.14.0",
    ]
    attempts = startup_timelines(parse_lines(one, tz=UTC, year=2026))["local"]
    assert len(attempts) == 2
    assert attempts[0].failed and attempts[0].phases[-1].name == "engine_start"
    assert attempts[1].phases[0].start == unix("2026-11-29T10:01:00")


def test_a_log_that_starts_mid_serving_has_no_startup():
    lines = [
        'INFO:     127.0.0.1:5555 - "POST /v1/completions HTTP/1.1" 200 OK',
        "(APIServer pid=1) INFO 11-29 10:00:10 [loggers.py:1] Engine 000: Avg prompt throughput: "
        "1.0 tokens/s, Avg generation throughput: 50.0 tokens/s, Running: 1 reqs, Waiting: 0 reqs, "
        "GPU KV cache usage: 0.1%",
    ]
    tl = startup_timeline(parse_lines(lines, tz=UTC, year=2026))
    assert tl.complete and tl.serving_only and tl.phases == []


REAL = {
    "vllm-cpu-startup.log": (["resolve", "engine_start", "distributed_init", "weight_read",
                              "post_load", "compile", "kv_profiling", "ready"],
                             {"loading_weights_s": 0.02, "init_engine_s": 44.15}, 4, True),
    "vllm-cpu-startup-eager.log": (["resolve", "engine_start", "distributed_init", "weight_read",
                                    "post_load", "kv_profiling", "ready"],
                                   {"loading_weights_s": 0.01, "init_engine_s": 0.84}, 0, True),
    "vllm-cpu-spec-ngram.log": (["resolve", "engine_start", "distributed_init", "weight_read",
                                 "post_load", "kv_profiling", "ready"],
                                {"loading_weights_s": 0.01, "init_engine_s": 2.16}, 2, True),
    "vllm-cpu-default-kv-failure.log": (["resolve", "engine_start"], {}, 0, False),
}


@pytest.mark.parametrize("name", sorted(REAL))
def test_real_cpu_logs_golden(name):
    from sparktriage.logs.scan import analyze_inputs

    phases, reported, windows, complete = REAL[name]
    doc = analyze_inputs([str(FIXTURES / name)], tz=UTC, year=2026)
    assert [p["name"] for p in doc["phases"]] == phases
    assert doc["reported"] == reported
    assert doc["throughput"]["generation"]["windows"] == windows
    assert doc["startup"]["complete"] is complete
    assert doc["version"] == "0.32.0"
    assert doc["kv_cache"].get("tokens") == (1_048_576 if complete else None)
