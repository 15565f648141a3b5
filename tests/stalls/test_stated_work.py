"""Work and waits the log states, past their budget, on plain vLLM logs (stated.overruns,
the c10d store wait, launcher polls): the real `stalls` core on real line formats."""

from __future__ import annotations

from pathlib import Path

from sparktriage.stalls.analyze import analyze
from sparktriage.stalls.params import DetectParams

COMPILE_2219 = ("(EngineCore_DP0 pid=6448) INFO 02-12 15:00:36 [backends.py:319] Compiling a graph "
                "for compile range (1, 8000) takes 2219.43 s\n"
                "(EngineCore_DP0 pid=6448) INFO 02-12 15:00:36 [monitor.py:34] torch.compile takes "
                "2222.52 s in total\n")


def _run(tmp_path: Path, text: str, params: DetectParams | None = None, rules=None) -> dict:
    path = tmp_path / "server.log"
    path.write_text(text)
    document, _ = analyze(path, rules, params)
    return document


def _stalls(document: dict) -> list[dict]:
    return [f for f in document["findings"] if f["kind"] == "stall"]


def test_a_compile_stated_past_its_budget_is_a_compile_stall_even_with_no_silence(tmp_path, rules):
    (stall,) = _stalls(_run(tmp_path, COMPILE_2219, rules=rules))
    assert stall["how"] == ["work"] and stall["phase"] == "compile"
    assert abs(stall["duration_s"] - 2219.43) < 0.01
    assert stall["verdict"]["id"] == "compile-jit"
    seen = {e["condition"] for e in stall["verdict"]["evidence"]}
    assert "compile_stated" in seen
    # the same line within a longer cold-compile budget is no finding
    relaxed = _run(tmp_path, COMPILE_2219, DetectParams(compile_cold_s=2400), rules)
    assert relaxed["findings"] == []


def test_a_capture_stated_past_the_warmup_budget_is_a_capture_stall(tmp_path, rules):
    text = ("INFO 04-21 22:56:58 [gpu_model_runner.py:1608] Graph capturing finished in 11412 "
            "secs, took 1.31 GiB\n"
            "INFO 04-21 22:58:22 [core.py:162] init engine (profile, create kv cache, warmup "
            "model) took 11629.91\n")
    # the 84 s silence after the capture is a stall of its own; the capture is the long one
    stall = max(_stalls(_run(tmp_path, text, rules=rules)), key=lambda f: f["duration_s"])
    assert stall["phase"] == "cuda_graphs" and stall["duration_s"] == 11412.0
    assert stall["verdict"]["id"] == "cuda-graph-capture"
    relaxed = _stalls(_run(tmp_path, text, DetectParams(warmup_s=12000), rules))
    assert [f["how"] for f in relaxed] == [["silence"]]


def test_a_work_line_belongs_to_its_phase_not_to_one_starting_in_the_same_second(tmp_path, rules):
    # "Graph capturing finished" and "init engine ... took" share a stamp: the capture ran in
    # the phase before ready, so the capture rule can claim it
    text = ("INFO 06-02 11:03:17 [monitor.py:33] torch.compile takes 45.81 s in total\n"
            "INFO 06-02 11:03:18 [kv_cache_utils.py:637] GPU KV cache size: 1,131,008 tokens\n"
            "INFO 06-02 11:03:55 [gpu_model_runner.py:1933] Graph capturing finished in 400 secs, "
            "took 0.45 GiB\n"
            "INFO 06-02 11:03:55 [core.py:167] init engine (profile, create kv cache, warmup model) "
            "took 90.84 seconds\n"
            "INFO 06-02 11:03:56 [api_server.py:1336] Starting vLLM API server on "
            "http://0.0.0.0:8000\n")
    (stall,) = _stalls(_run(tmp_path, text, rules=rules))
    assert stall["phase"] == "kv_profiling" and stall["duration_s"] == 400.0
    assert stall["verdict"]["id"] == "cuda-graph-capture"


def test_a_capture_within_its_budget_is_healthy(tmp_path, rules):
    text = ("INFO 06-02 11:03:18 [kv_cache_utils.py:637] GPU KV cache size: 1,131,008 tokens\n"
            "INFO 06-02 11:03:55 [gpu_model_runner.py:1933] Graph capturing finished in 37 secs, "
            "took 0.45 GiB\n"
            "INFO 06-02 11:03:55 [core.py:167] init engine (profile, create kv cache, warmup model) "
            "took 90.84 seconds\n")
    document = _run(tmp_path, text, rules=rules)
    assert document["findings"] == []
    (seen,) = document["observations"]
    assert round(seen["duration_s"]) == 37


def test_a_store_socket_that_waits_for_input_states_its_wait(tmp_path, rules):
    text = ("[rank0]:[W903 21:08:30.547205127 socket.cpp:469] [c10d] waitForInput: poll for socket "
            "SocketImpl(fd=33, addr=[192.0.2.2]:34316, remote=[192.0.2.1]:29501) returned 0, "
            "likely a timeout\n"
            "[rank0]:[W903 21:08:30.548559132 socket.cpp:494] [c10d] waitForInput: socket "
            "SocketImpl(fd=33, addr=[192.0.2.2]:34316, remote=[192.0.2.1]:29501) timed out after "
            "1800000ms\n")
    (stall,) = _stalls(_run(tmp_path, text, rules=rules))
    assert stall["how"] == ["wait"] and round(stall["duration_s"]) == 1800
    # a connected socket waiting for a peer's key names no interface fault by itself
    assert stall["verdict"]["id"] != "rendezvous-interface"


def test_a_launchers_health_polls_are_not_progress(tmp_path, rules):
    lines = ["2026-06-09 13:59:48.601 [Info] (Process) (EngineCore pid=42521) INFO 06-09 13:59:48 "
             "[default_loader.py:384] Loading weights took 6.65 seconds",
             "2026-06-09 13:59:49.377 [Info] (Process) (EngineCore pid=42521) INFO 06-09 13:59:49 "
             "[gpu_model_runner.py:4879] Model loading took 8.74 GiB memory and 9.018972 seconds"]
    lines += [f"2026-06-09 {t} [Debug] (WrappedServer) Still waiting for vllm-server..."
              for t in ("13:59:58.470", "14:00:08.483", "14:00:18.496", "14:00:28.510")]
    (stall,) = _stalls(_run(tmp_path, "\n".join(lines) + "\n", rules=rules))
    assert stall["how"] == ["hang"] and stall["open_ended"] is True
    assert 39.0 <= stall["duration_s"] <= 39.6  # from the last vLLM line to the last poll
    # the launcher's stamps time its polls: nine seconds of polling is not yet a stall
    short = "\n".join(lines[:3]) + "\n"
    assert _stalls(_run(tmp_path, short, rules=rules)) == []


WEIGHTS_546 = ("(EngineCore_DP0 pid=120) INFO 01-28 06:45:04 [default_loader.py:291] Loading weights "
               "took 546.20 seconds\n"
               "(EngineCore_DP0 pid=120) INFO 01-28 06:45:05 [gpu_model_runner.py:3905] Model "
               "loading took 64.38 GiB memory and 548.38 seconds\n")


def test_a_weight_read_stated_past_the_crawl_budget_is_a_weight_read_stall(tmp_path, rules):
    (stall,) = _stalls(_run(tmp_path, WEIGHTS_546, rules=rules))
    assert stall["phase"] == "weight_read" and stall["how"] == ["work"]
    assert abs(stall["duration_s"] - 546.2) < 0.01
    # a stated read within the crawl budget is no finding
    assert _run(tmp_path, WEIGHTS_546.replace("546.20", "246.20"), rules=rules)["findings"] == []


def test_the_checkpoint_size_sets_the_stated_reads_budget(tmp_path, rules):
    def sized(gib: float) -> str:
        return ("(EngineCore_DP0 pid=120) INFO 01-28 06:35:58 [weight_utils.py:904] Filesystem type "
                f"for checkpoints: EXT4. Checkpoint size: {gib} GiB. Available RAM: 108.55 GiB.\n"
                + WEIGHTS_546)
    # 805 GiB at the 1 GiB/s floor may take 805 s: 546 s is within it
    assert _stalls(_run(tmp_path, sized(805.0), rules=rules)) == []
    (stall,) = _stalls(_run(tmp_path, sized(148.66), rules=rules))
    assert stall["phase"] == "weight_read"
