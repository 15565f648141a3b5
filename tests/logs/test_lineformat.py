"""One physical line → prefix fields and message, for every line shape vLLM 0.11-0.33 writes."""

from __future__ import annotations

import pytest

from sparktriage.logs.lineformat import parse_line, strip_ansi


def test_031_prefix_in_the_logging_format():
    f = parse_line("(APIServer pid=18669) INFO 11-29 20:55:12 [loggers.py:335] Engine 000: "
                   "Avg prompt throughput: 135.0 tokens/s")
    assert (f.kind, f.process, f.pid, f.level, f.stamp) == ("vllm", "APIServer", 18669, "INFO",
                                                          "11-29 20:55:12")
    assert (f.source_file, f.source_line) == ("loggers.py", 335)
    assert f.message == "Engine 000: Avg prompt throughput: 135.0 tokens/s"
    assert f.relay is None and not f.cont


def test_011_always_coloured_decorated_prefix():
    line = ("\x1b[1;36m(EngineCore_DP0 pid=4242)\x1b[0;0m INFO 10-03 14:02:11 "
            "[gpu_model_runner.py:2602] Model loading took 15.2301 GiB and 48.123456 seconds")
    f = parse_line(line)
    assert (f.process, f.pid, f.level, f.source_file) == ("EngineCore_DP0", 4242, "INFO",
                                                          "gpu_model_runner.py")
    assert f.message.startswith("Model loading took 15.2301 GiB")


def test_014_colour_formatter_on_level_time_and_fileinfo():
    line = ("\x1b[0;36m(Worker_TP1 pid=77)\x1b[0;0m \x1b[32mINFO\x1b[0m \x1b[90m01-18 09:00:01\x1b[0m "
            "\x1b[90m[default_loader.py:262]\x1b[0m Loading weights took 12.34 seconds")
    f = parse_line(line)
    assert (f.process, f.level, f.stamp, f.source_line) == ("Worker_TP1", "INFO", "01-18 09:00:01", 262)
    assert f.message == "Loading weights took 12.34 seconds"


def test_ray_relayed_line_from_a_remote_node_0_20():
    line = ("\x1b[36m(RayWorkerWrapper pid=263, ip=10.0.16.95)\x1b[0m INFO 04-27 10:00:00 "
            "[parallel_state.py:1165] world_size=16 rank=9 local_rank=1 "
            "distributed_init_method=tcp://10.0.16.94:29501 backend=nccl")
    f = parse_line(line)
    assert f.relay == "RayWorkerWrapper pid=263, ip=10.0.16.95"
    assert f.process is None and f.level == "INFO"
    assert f.message.startswith("world_size=16 rank=9")


def test_ray_v2_relay_around_the_031_process_prefix():
    line = ("(RayWorkerProc pid=91, ip=10.0.0.2) (Worker_TP1 pid=91) WARNING 10-17 08:00:00 "
            "[gpu_worker.py:88] something")
    f = parse_line(line)
    assert f.relay == "RayWorkerProc pid=91, ip=10.0.0.2"
    assert (f.process, f.pid, f.level) == ("Worker_TP1", 91, "WARNING")


def test_decorated_tqdm_bar_keeps_the_prefix_and_the_bar():
    f = parse_line("(Worker_TP0 pid=12) \rLoading safetensors checkpoint shards:  27% Completed "
                   "| 3/11 [00:09<00:24,  3.1s/it]")
    assert f.process == "Worker_TP0"
    assert f.message.startswith("Loading safetensors checkpoint shards:  27% Completed")
    assert f.kind == "tqdm"


def test_cuda_graph_bar_updates_in_one_line_show_the_last_state():
    f = parse_line("Capturing CUDA graphs (PIECEWISE):   0%|          | 0/67 [00:00<?, ?it/s]"
                   "\rCapturing CUDA graphs (PIECEWISE):  50%|#####     | 34/67 [00:03<00:03, 9.9it/s]")
    assert f.message.startswith("Capturing CUDA graphs (PIECEWISE):  50%")
    assert f.kind == "tqdm"


def test_uvicorn_lines():
    f = parse_line("INFO:     Application startup complete.")
    assert (f.kind, f.level, f.message) == ("uvicorn", "INFO", "Application startup complete.")
    f = parse_line('INFO:     127.0.0.1:39586 - "GET /health HTTP/1.1" 200 OK')
    assert f.kind == "uvicorn" and f.message.startswith("127.0.0.1:39586")


def test_multiline_record_marker_and_logo_line():
    f = parse_line("(APIServer pid=1) INFO 11-29 20:53:15 [api_utils.py:347] \r")
    assert f.cont and f.message == "" and f.kind == "vllm"


@pytest.mark.parametrize("line,level,stamp,frac,msg", [
    ("[W1129 20:54:04.553711373 utils.cpp:68] Warning: NUMA binding", "WARNING", "11-29 20:54:04",
     "553711373", "Warning: NUMA binding"),
    ("W1129 21:23:28.947000 31225 torch/_library/triton.py:53] Triton not available", "WARNING",
     "11-29 21:23:28", "947000", "Triton not available"),
    ("[E1129 21:33:00.100000000 socket.cpp:1019] [c10d] The client socket has timed out after "
     "600000ms", "ERROR", "11-29 21:33:00", "100000000", "[c10d] The client socket has timed out after 600000ms"),
])
def test_torch_glog_lines(line, level, stamp, frac, msg):
    f = parse_line(line)
    assert (f.kind, f.level, f.stamp, f.frac, f.message) == ("glog", level, stamp, frac, msg)


def test_python_logging_with_full_date_flashinfer():
    f = parse_line("2026-03-08 16:44:29,692 - INFO - autotuner.py:262 - flashinfer.jit: "
                   "[Autotuner]: Autotuning process starts ...")
    assert (f.kind, f.level, f.stamp_full, f.frac) == ("pylog", "INFO", "2026-03-08 16:44:29", "692")
    assert f.message.startswith("flashinfer.jit: [Autotuner]")


def test_json_formatter_032():
    f = parse_line('{"asctime": "10-17 12:00:01", "levelname": "INFO", "name": "vllm.v1.engine.core", '
                   '"processName": "EngineCore_DP0", "process": 4711, "message": "init engine '
                   '(profile, create kv cache, warmup model) took 41.17 s"}')
    assert (f.kind, f.level, f.process, f.pid, f.stamp) == ("json", "INFO", "EngineCore_DP0", 4711,
                                                            "10-17 12:00:01")
    assert f.message.startswith("init engine")


def test_custom_logging_prefix_and_docker_timestamps():
    f = parse_line("2026-11-29T20:53:15.123456789Z [spark-01] (APIServer pid=7) INFO 11-29 20:53:15 "
                   "[api_server.py:1] hello")
    assert (f.collector, f.collector_full, f.collector_frac, f.collector_offset) == (
        "rfc3339", "2026-11-29 20:53:15", "123456789", "Z")
    assert f.stamp == "11-29 20:53:15" and f.stamp_full is None
    assert (f.process, f.pid, f.level, f.message) == ("APIServer", 7, "INFO", "hello")


def test_python_warning_and_nccl():
    f = parse_line("/x/dispatcher.py:138: FutureWarning: `torch.distributed.reduce_op` is deprecated")
    assert (f.kind, f.level, f.source_file, f.source_line) == ("pywarn", "WARNING", "dispatcher.py", 138)
    f = parse_line("spark-01:1234:1300 [0] NCCL INFO Bootstrap : Using enp1s0f0np0:10.0.0.1<0>")
    assert (f.kind, f.level) == ("nccl", "INFO")


def test_debug_level_and_plain_text():
    f = parse_line("(APIServer pid=3) DEBUG 11-29 20:55:52 [loggers.py:335] Engine 000: Avg prompt "
                   "throughput: 0.0 tokens/s, Avg generation throughput: 0.0 tokens/s")
    assert f.level == "DEBUG"
    f = parse_line("Triton is installed, but doesn't include CPU backend. Disabling Triton.")
    assert (f.kind, f.level, f.process) == ("text", None, None)


def test_strip_ansi_leaves_text_alone():
    assert strip_ansi("plain") == "plain"
    assert strip_ansi("\x1b[31mred\x1b[0m and \x1b]0;title\x07x") == "red and x"
