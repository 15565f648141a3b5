"""Issue #36's one failure model, as a property: on any sequence of real vLLM line shapes
(start and serving lines, Python tracebacks and their exception endings, "EngineCore hit an
exception", NCCL warnings and errors, RayActorError, Ray worker tracebacks, HTTP access
lines), timed or untimed, `logs` and `stalls` report the same number of failures, both read
through the library calls their CLIs make (`logs.scan.analyze_inputs`, `stalls.analyze`).
"""

from __future__ import annotations

import tempfile
from pathlib import Path

import pytest
from hypothesis import HealthCheck, given, seed, settings, strategies as st

from sparktriage.errors import InputError
from sparktriage.logs.scan import analyze_inputs
from sparktriage.logs.untimed import require_log
from sparktriage.stalls.analyze import analyze

LOGS_FAILURE_CODES = ("startup-failed", "engine-died")

# (text, is it a traceback block: its lines carry no vLLM prefix)
START = [
    "INFO {ts} [__init__.py:207] Automatically detected platform cuda.",
    "INFO {ts} [api_server.py:1090] vLLM API server version 0.10.1",
    "INFO {ts} [core.py:69] Initializing a V1 LLM engine (v0.10.1) with config: model='m'",
    "INFO {ts} [parallel_state.py:1134] rank 0 in world size 2 is assigned as DP rank 0, "
    "PP rank 0, TP rank 0",
    "INFO {ts} [gpu_model_runner.py:1770] Starting to load model m...",
    "INFO {ts} [default_loader.py:262] Loading weights took 41.20 seconds",
    "INFO {ts} [gpu_model_runner.py:1797] Model loading took 60.1 GiB and 42.3 seconds",
    "INFO {ts} [backends.py:530] Dynamo bytecode transform time: 9.10 s",
    "INFO {ts} [kv_cache_utils.py:833] GPU KV cache size: 120,112 tokens",
    "INFO {ts} [gpu_model_runner.py:2358] Graph capturing finished in 12 secs, took 0.52 GiB",
    "INFO {ts} [core.py:193] init engine (profile, create kv cache, warmup model) took 70.2 s",
    "INFO {ts} [api_server.py:1818] Starting vLLM API server 0 on http://0.0.0.0:8000",
    "INFO:     Application startup complete.",
]
SERVING = [
    'INFO:     10.0.0.7:51234 - "POST /v1/chat/completions HTTP/1.1" 200 OK',
    'INFO:     10.0.0.7:51236 - "GET /v1/models HTTP/1.1" 200 OK',
    "INFO {ts} [loggers.py:123] Engine 000: Avg prompt throughput: 120.3 tokens/s, Avg "
    "generation throughput: 30.1 tokens/s, Running: 1 reqs, Waiting: 0 reqs, GPU KV cache "
    "usage: 1.2%, Prefix cache hit rate: 0.0%",
]
ERRORS = [
    "ERROR {ts} [core.py:700] EngineCore hit an exception: Traceback (most recent call last):",
    "ERROR {ts} [core.py:586] EngineCore failed to start.",
    "ERROR {ts} [async_llm.py:420] AsyncLLM output_handler failed.",
    "ERROR {ts} [serving_chat.py:1100] Error in chat completion stream generator.",
    "WARNING {ts} [pynccl.py:100] NCCL error: unhandled system error (run with NCCL_DEBUG=INFO "
    "for details)",
    "ERROR {ts} [multiproc_executor.py:146] Worker proc VllmWorker-1 died unexpectedly, "
    "shutting down executor.",
    "WARNING {ts} [ray_utils.py:200] The actor died unexpectedly before finishing this task. "
    "RayActorError",
    "(RayWorkerWrapper pid=5085) ERROR {ts} [worker_base.py:620] Error executing method "
    "'determine_num_available_blocks'. This might cause deadlock in distributed execution.",
    "[rank1]:[E ProcessGroupNCCL.cpp:616] [Rank 1] Watchdog caught collective operation "
    "timeout: WorkNCCL(SeqNum=2, OpType=ALLREDUCE) ran for 600000 milliseconds before timing out.",
    "ERROR {ts} [core.py:1138] torch.OutOfMemoryError: CUDA out of memory.",
    "ERROR {ts} [multiproc_executor.py:250] TimeoutError: RPC call to execute_model timed out.",
    # survived: NCCL retries a refused connection, a worker's warning; and a stop from outside
    "spark-2:5085:5301 [0] NCCL WARN Call to connect returned Connection refused, retrying",
    "WARNING {ts} [custom_all_reduce.py:137] Custom allreduce is disabled because it's not "
    "supported on more than two PCIe-only GPUs.",
    "INFO {ts} [launcher.py:80] Received SIGTERM, shutting down",
]
TRACEBACKS = [
    "Traceback (most recent call last):\n"
    '  File "/usr/lib/python3.12/site-packages/vllm/v1/engine/core.py", line 660, in run\n'
    "    raise e\n"
    "ValueError: Free memory on device (31.44/47.38 GiB) on startup is less than desired GPU "
    "memory utilization (0.9, 42.6 GiB).",
    "Traceback (most recent call last):\n"
    '  File "/usr/lib/python3.12/site-packages/vllm/v1/engine/async_llm.py", line 420, in '
    "generate\n"
    "vllm.v1.engine.exceptions.EngineDeadError: EngineCore encountered an issue. See stack "
    "trace (above) for the root cause.",
    "Traceback (most recent call last):\n"
    '  File "/usr/lib/python3.12/site-packages/torch/distributed/distributed_c10d.py", line '
    "3890, in all_reduce\n"
    "torch.distributed.DistBackendError: NCCL error in: ../torch/csrc/distributed/c10d/"
    "NCCLUtils.hpp:317, unhandled system error, NCCL version 2.21.5",
    "Traceback (most recent call last):\n"
    '  File "/usr/lib/python3.12/site-packages/vllm/executor/ray_utils.py", line 88, in '
    "execute_model\n"
    "RuntimeError: CUDA error: an illegal memory access was encountered",
    "(RayWorkerWrapper pid=5085) Traceback (most recent call last):\n"
    '(RayWorkerWrapper pid=5085)   File "/usr/lib/python3.12/site-packages/vllm/worker/'
    'worker_base.py", line 612, in execute_method\n'
    "(RayWorkerWrapper pid=5085) ray.exceptions.RayActorError: The actor died unexpectedly "
    "before finishing this task.",
]
LINES = START + SERVING + ERRORS + TRACEBACKS


def _render(picks: list[int], timed: bool, start_s: int, steps: list[int]) -> str:
    out, t = [], start_s
    for pick, step in zip(picks, steps):
        t += step
        ts = f"12-06 {t // 3600 % 24:02d}:{t // 60 % 60:02d}:{t % 60:02d}"
        text = LINES[pick]
        if not timed:  # an untimed paste: the same lines without their stamps
            text = text.replace(" {ts}", "")
        out.append(text.replace("{ts}", ts))
    return "\n".join(out) + "\n"


def failure_counts(text: str) -> tuple[int, int]:
    """(logs' failures, stalls' failures) of one log text, read as the two CLIs read it."""
    with tempfile.TemporaryDirectory() as tmp:
        path = Path(tmp) / "vllm.log"
        path.write_text(text)
        try:
            logs = analyze_inputs([str(path)])
            require_log(str(path), logs)  # what `sparktriage logs` refuses (exit 2)
        except InputError as refused:  # no serving-stack line: both refuse it alike
            with pytest.raises(InputError) as also:
                analyze(path)
            assert str(also.value) == str(refused)
            return -1, -1
        stalls, _ = analyze(path)
    logs_n = sum(1 for f in logs["findings"] if f["code"] in LOGS_FAILURE_CODES)
    return logs_n, stalls["summary"]["failures"]


sequences = st.integers(min_value=2, max_value=14).flatmap(lambda n: st.tuples(
    st.lists(st.integers(0, len(LINES) - 1), min_size=n, max_size=n),
    st.booleans(), st.integers(8 * 3600, 20 * 3600),
    st.lists(st.integers(0, 120), min_size=n, max_size=n)))


@seed(36)
@settings(max_examples=150, deadline=None, derandomize=False, database=None,
          suppress_health_check=[HealthCheck.too_slow])
@given(sequences)
def test_logs_and_stalls_count_the_same_failures(case):
    picks, timed, start_s, steps = case
    text = _render(picks, timed, start_s, steps)
    logs_n, stalls_n = failure_counts(text)
    assert logs_n == stalls_n, f"logs {logs_n} vs stalls {stalls_n} on:\n{text}"
