"""Record a real vLLM CPU start with the real collectors: the stall reproductions' harness.

`ServeRun` declares one start (model, flags, environment, how the process is wrapped: a
cgroup, for instance, and when to stop recording); `record` executes it through
`launch.attach.run_collect`, which starts the server as the agent's child and writes an
evidence bundle (logs with receive times, samples, py-spy stacks, dmesg) like any `collect`.
"""

from __future__ import annotations

from dataclasses import dataclass, field
from pathlib import Path
from typing import Callable

from sparktriage.launch.attach_collect import CollectRequest, run_collect
from sparktriage.testbed.paths import Testbed
from sparktriage.testbed.ports import free_port


@dataclass(frozen=True)
class ServeRun:
    """One start of `vllm serve` to record."""

    model: str  # a path, or a hub id served from --download-dir
    scratch: Path  # VLLM_CACHE_ROOT and TORCHINDUCTOR_CACHE_DIR live here
    enforce_eager: bool = True
    args: tuple[str, ...] = ()
    env: dict = field(default_factory=dict)
    until_ready: bool = True
    max_s: float = 300.0  # stop recording after this long even when not ready
    wrap: Callable[[list[str]], list[str]] | None = None
    stacks_s: float = 5.0
    interval_s: float = 1.0


def serve_argv(bed: Testbed, run: ServeRun, port: int) -> list[str]:
    env = {
        "HF_HUB_OFFLINE": "1", "TRANSFORMERS_OFFLINE": "1", "VLLM_CPU_KVCACHE_SPACE": "1",
        "VLLM_CACHE_ROOT": str(run.scratch / "vllm-cache"),
        "TORCHINDUCTOR_CACHE_DIR": str(run.scratch / "inductor-cache"),
        "VLLM_NO_USAGE_STATS": "1", "DO_NOT_TRACK": "1", "PYTHONUNBUFFERED": "1",
        **run.env,
    }
    argv = ["env", *[f"{k}={v}" for k, v in env.items()], str(bed.vllm), "serve", run.model,
            "--host", "127.0.0.1", "--port", str(port), "--max-model-len", "512",
            "--dtype", "float32", "--served-model-name", "tiny"]
    if run.enforce_eager:
        argv.append("--enforce-eager")
    argv += list(run.args)
    return run.wrap(argv) if run.wrap else argv


def record(bed: Testbed, run: ServeRun, out: Path) -> tuple[Path, dict]:
    """Start the server under the collectors; return the bundle folder and collect's result."""
    run.scratch.mkdir(parents=True, exist_ok=True)
    port = free_port()
    request = CollectRequest(
        out=out, node="local", cmd=tuple(serve_argv(bed, run, port)),
        until_ready=run.until_ready, duration_s=run.max_s,
        endpoint=f"http://127.0.0.1:{port}", interval_s=run.interval_s,
        stacks_interval_s=run.stacks_s, grace_s=15.0)
    result = run_collect(request)
    return out, result
