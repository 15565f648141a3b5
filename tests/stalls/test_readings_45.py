"""Line shapes `stalls` and `logs` read since the second field corpus (tests/stalls/field,
cases 37-56): FlashInfer's "[AutoTuner]: Tuning" bars, a launcher's "[MM-DD HH:MM:SS]
[file.py:N]" header and its bracketed "[YYYY-MM-DD HH:MM:SS]" stamp, "Model loading took N
seconds" as stated work. The real cores on lines as public threads show them."""

from __future__ import annotations

from pathlib import Path

from sparktriage.logs.catalog import match_message as match
from sparktriage.logs.lineformat import parse_line
from sparktriage.logs.scan import analyze_inputs
from sparktriage.stalls.analyze import analyze

AUTOTUNER = "[AutoTuner]: Tuning fp8_gemm: 100%|██████████| 21/21 [00:00<00:00, 33.51profile/s]"


def _stalls(tmp_path: Path, text: str, rules) -> dict:
    path = tmp_path / "server.log"
    path.write_text(text)
    return analyze(path, rules, None)[0]


def test_flashinfer_autotuner_bar_marks_kernel_jit():
    hits = match(parse_line(AUTOTUNER).message)
    assert [(h.id, h.rule.phase, h.match["what"]) for h in hits] == [
        ("jit.autotune_bar", "kernel_jit", "fp8_gemm")]
    # the logger's own spelling is still read
    assert [h.id for h in match("flashinfer.jit: [Autotuner]: Autotuning process starts ...")] \
        == ["jit.autotune"]


def test_an_excerpt_of_autotuner_bars_alone_is_read_not_refused(tmp_path, rules):
    path = tmp_path / "bars.log"
    path.write_text((AUTOTUNER + "\n") * 3)
    document = analyze_inputs([str(path)])
    assert document["counts"]["recognised_untimed"] == 3
    stalls = _stalls(tmp_path, (AUTOTUNER + "\n") * 3, rules)
    assert stalls["findings"] == []


def test_a_silence_after_autotuner_progress_is_kernel_jit_not_nccl(tmp_path, rules):
    text = ("(EngineCore pid=153) INFO 05-16 17:30:12 [kv_cache_utils.py:1733] GPU KV cache "
            "size: 10,204,620 tokens\n"
            "(Worker_TP0 pid=173) 2026-05-16 17:30:15,318 - INFO - autotuner.py:615 - "
            "flashinfer.jit: [Autotuner]: Autotuning process starts ...\n"
            + AUTOTUNER + "\n"
            "(EngineCore pid=153) INFO 05-16 17:45:20 [shm_broadcast.py:681] No available "
            "shared memory broadcast block found in 60 seconds. This typically happens when some "
            "processes are hanging or doing some time-consuming work (e.g. compilation, "
            "weight/kv cache quantization).\n")
    findings = [f for f in _stalls(tmp_path, text, rules)["findings"] if f["kind"] == "stall"]
    assert findings, "a 15-minute silence is a stall"
    longest = max(findings, key=lambda f: f["duration_s"])
    assert longest["verdict"]["id"] != "nccl-hang"
    assert longest["phase"] == "kernel_jit"


def test_launcher_header_with_month_day_stamp_and_file_tag_is_a_timed_vllm_line():
    fields = parse_line("[05-10 10:51:18] [core.py:1138] EngineCore failed to start.")
    assert (fields.kind, fields.stamp, fields.source_file, fields.source_line, fields.level,
            fields.message) == ("vllm", "05-10 10:51:18", "core.py", 1138, None,
                                "EngineCore failed to start.")
    fields = parse_line("(EngineCore pid=3) [05-10 10:51:18.250] WARNING [gpu_worker.py:99] low")
    assert (fields.process, fields.pid, fields.level, fields.frac, fields.message) == (
        "EngineCore", 3, "WARNING", "250", "low")
    # a bracket that only looks like it stays text
    assert parse_line("[05-10 10:51:18] no file tag here").kind == "text"


def test_launcher_bracketed_date_times_its_own_lines_and_the_servers():
    own = parse_line("[2026-01-26 17:33:48]   ⚠️  vLLM not ready after 30 minutes")
    assert (own.collector, own.collector_full, own.message) == (
        "dated", "2026-01-26 17:33:48", "  ⚠️  vLLM not ready after 30 minutes")
    inner = parse_line("[2026-01-26 16:56:13]      INFO 01-26 16:56:12 [utils.py:253] "
                       "non-default args: {'model_tag': 'microsoft/Ph")
    assert (inner.kind, inner.stamp, inner.collector_full) == (
        "vllm", "01-26 16:56:12", "2026-01-26 16:56:13")


def test_launcher_polls_after_vllm_goes_quiet_are_a_stall(tmp_path, rules):
    text = ("[2026-01-26 16:56:13]      INFO 01-26 16:56:12 [utils.py:253] non-default args: "
            "{'model_tag': 'microsoft/Phi-4-mini-flash-reasoning'}\n"
            "[2026-01-26 16:57:25]   ⏳ Still loading... (1m 14s) - this is normal for large models\n"
            "[2026-01-26 17:33:47]   ⏳ Still loading... (37m 36s) - this is normal for large models\n"
            "[2026-01-26 17:33:48]   ⚠️  vLLM not ready after 30 minutes\n")
    stalls = [f for f in _stalls(tmp_path, text, rules)["findings"] if f["kind"] == "stall"]
    assert len(stalls) == 1 and stalls[0]["duration_s"] >= 37 * 60 - 60
    assert stalls[0]["verdict"]["id"] == "unknown"


def test_model_loading_took_is_stated_work_past_the_crawl_budget(tmp_path, rules):
    text = ("(Worker_TP0 pid=212) INFO 05-10 10:40:46 [default_loader.py:384] Loading weights "
            "took 9.02 seconds\n"
            "(Worker_TP0 pid=212) INFO 05-10 11:10:48 [gpu_model_runner.py:4871] Model loading "
            "took 10.8 GiB memory and 1830.075276 seconds\n")
    stalls = [f for f in _stalls(tmp_path, text, rules)["findings"] if f["kind"] == "stall"]
    assert stalls
    work = [f for f in stalls if "work" in f["how"]]
    assert work and abs(max(f["duration_s"] for f in work) - 1830.08) < 0.01


SPEC_LINE = ("(APIServer pid=1) INFO 06-23 {t} [metrics.py:96] SpecDecoding metrics: Mean "
             "acceptance length: 3.42, Accepted throughput: 61.20 tokens/s, Drafted throughput: "
             "122.40 tokens/s, Accepted: 612 tokens, Drafted: 1224 tokens, Per-position "
             "acceptance rate: 0.812, 0.655, 0.503, 0.421, Avg Draft acceptance rate: 50.0%\n")


def test_a_grepped_excerpt_of_spec_decode_metric_lines_is_a_server_serving(tmp_path, rules):
    # 900, 160 and 150 s between metric windows: a serving server that was idle, not a start
    text = "".join(SPEC_LINE.format(t=t) for t in ("14:50:01", "15:05:01", "15:07:41",
                                                    "15:10:11"))
    document = _stalls(tmp_path, text, rules)
    assert [f["kind"] for f in document["findings"]] == []
    logs = analyze_inputs([str(tmp_path / "server.log")])
    assert not [f for f in logs["findings"] if f["code"] in ("startup-failed", "engine-died")]


def test_request_logs_alone_are_serving_not_a_start(tmp_path, rules):
    text = ("(APIServer pid=1) INFO 06-23 14:50:01 [logger.py:41] Received request "
            "chatcmpl-1a2b: prompt: 'hi', params: SamplingParams(n=1)\n"
            "(APIServer pid=1) INFO 06-23 15:05:01 [logger.py:41] Received request "
            "chatcmpl-3c4d: prompt: 'hi', params: SamplingParams(n=1)\n")
    assert _stalls(tmp_path, text, rules)["findings"] == []


def test_a_crash_while_serving_cut_before_engine_dead_error_is_a_serving_failure(tmp_path, rules):
    text = ("(APIServer pid=1) INFO 06-23 15:08:30 [loggers.py:236] Engine 000: Avg prompt "
            "throughput: 0.0 tokens/s, Avg generation throughput: 32.1 tokens/s, Running: 1 "
            "reqs, Waiting: 0 reqs, GPU KV cache usage: 2.1%, Prefix cache hit rate: 0.0%\n"
            "(EngineCore pid=168) ERROR 06-23 15:08:34 [core.py:1138] EngineCore encountered a "
            "fatal error.\n"
            "(EngineCore pid=168) ERROR 06-23 15:08:34 [core.py:1138] Traceback (most recent "
            "call last):\n"
            "(EngineCore pid=168) ERROR 06-23 15:08:34 [core.py:1138] torch.AcceleratorError: "
            "CUDA error: an illegal memory access was encountered\n")
    failures = [f for f in _stalls(tmp_path, text, rules)["findings"] if f["kind"] == "failure"]
    assert [f["phase"] for f in failures] == ["serving"]


CHAIN = ("(RayWorkerWrapper pid=3511, ip=192.0.2.2) INFO 03-04 10:00:00 [gpu_worker.py:100] "
         "Loading weights took 20.00 seconds\n"
         "(raylet, ip=192.0.2.2) [2026-03-04 10:02:00,001 E 3201 3201] (raylet) "
         "node_manager.cc:3069: 1 Workers (tasks / actors) killed due to memory pressure (OOM), "
         "0 Workers crashed due to other reasons at node (ID: 1234, IP: 192.0.2.2) over the last "
         "time period.\n"
         "(EngineCore_DP0 pid=400) ERROR 03-04 10:02:01 [core.py:700] A worker died: "
         "ray.exceptions.ActorDiedError: The actor died unexpectedly before finishing this task.\n"
         "[rank0]:[E304 10:12:01.123456 400 ProcessGroupNCCL.cpp:632] [Rank 0] Watchdog caught "
         "collective operation timeout: WorkNCCL(SeqNum=5, OpType=ALLREDUCE, NumelIn=1, "
         "NumelOut=1, Timeout(ms)=600000) ran for 600042 milliseconds before timing out.\n")


def test_a_watchdog_timeout_after_a_dead_worker_follows_from_the_death(tmp_path, rules):
    findings = _stalls(tmp_path, CHAIN, rules)["findings"]
    assert findings
    assert {f["verdict"]["id"] for f in findings} == {"ray-oom-kill"}
    # nccl-hang is not the cause: the death came first, and the verdict says why not
    for finding in findings:
        why = {a["id"]: a["why_not"] for a in finding["verdict"]["alternatives"]}
        assert "peer_died_first" in why.get("nccl-hang", "")
    # without the earlier death the same watchdog line is an NCCL hang
    alone = CHAIN.split("\n")
    text = "\n".join([alone[0], alone[3]]) + "\n"
    verdicts = {f["verdict"]["id"] for f in _stalls(tmp_path, text, rules)["findings"]}
    assert "nccl-hang" in verdicts


def test_kv_sizing_lines_are_extracted_negative_budget_and_zero_blocks_included(tmp_path):
    path = tmp_path / "kv.log"
    path.write_text(
        "INFO 05-10 10:10:48 [gpu_model_runner.py:4871] Model loading took 1830.5 seconds\n"
        "INFO 05-10 10:11:50 [worker.py:267] Memory profiling takes 61.92 seconds\n"
        "INFO 05-10 10:11:50 [gpu_worker.py:440] Available KV cache memory: -2.26 GiB\n"
        "INFO 05-10 10:11:50 [executor_base.py:113] # cuda blocks: 0, # CPU blocks: 2048\n"
        "INFO 05-10 10:11:51 [gpu_model_runner.py:6042] Estimated CUDA graph memory: -4.74 GiB "
        "total\n"
        "INFO 05-10 10:11:51 [kv_cache_utils.py:1713] GPU KV cache size: 1,253,392 tokens\n")
    document = analyze_inputs([str(path)])
    assert document["kv_cache"] == {
        "profiling_s": 61.92, "memory_gib": -2.26, "blocks": 0, "cpu_blocks": 2048,
        "block_device": "cuda", "cuda_graph_memory_gib": -4.74, "tokens": 1253392,
        "device": "GPU"}
    # "Model loading took N seconds" without the memory figure is still the stated load time
    assert document["reported"]["model_loading_s"] == 1830.5


def test_a_compile_observation_gives_the_time_vllm_states_not_the_silence(tmp_path, rules):
    text = ("(EngineCore_DP0 pid=441) INFO 11-24 11:44:01 [backends.py:708] Dynamo bytecode "
            "transform time: 6.07 s\n"
            "(EngineCore_DP0 pid=441) INFO 11-24 11:44:33 [backends.py:255] Cache the graph for "
            "dynamic shape for later use\n"
            "(EngineCore_DP0 pid=441) INFO 11-24 11:47:15 [backends.py:286] Compiling a graph for "
            "dynamic shape takes 186.13 s\n"
            "(EngineCore_DP0 pid=441) INFO 11-24 11:47:16 [monitor.py:34] torch.compile takes "
            "192.20 s in total\n")
    document = _stalls(tmp_path, text, rules)
    assert document["findings"] == []
    texts = [o["text"] for o in document["observations"]]
    assert texts and all(t.startswith("compile took 192.20 s in all") for t in texts)
    assert any("this silence 162 s" in t for t in texts)
