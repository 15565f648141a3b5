"""Start, watch and stop one local `vllm serve` of the test bed.

The server gets its own process group so that teardown reaches the API server, the engine
core and the worker alike; stdout and stderr are written, line by line with receive times, to
the log file given (plain text) and, beside it, to `<log>.lines.jsonl`: one JSON record per
line with its receive time (docs/formats.md, "line records"). Readiness is the first accepted `GET /health` (the port refuses
connections until startup completes); an exit before that is reported with the log's last
lines.
"""

from __future__ import annotations

import os
import signal
import socket
import subprocess
import threading
import time
from dataclasses import dataclass, field
from pathlib import Path

import httpx

from sparktriage.store.documents import dumps
from sparktriage.errors import LaunchError
from sparktriage.testbed.paths import Testbed


def free_port() -> int:
    """A TCP port on 127.0.0.1 that nothing listens on right now."""
    with socket.socket(socket.AF_INET, socket.SOCK_STREAM) as sock:
        sock.bind(("127.0.0.1", 0))
        return sock.getsockname()[1]


@dataclass(frozen=True)
class ServeSpec:
    """What to serve and how (the argv is built from this, never through a shell)."""

    model: Path
    served_name: str = "tiny"
    max_model_len: int = 512
    enforce_eager: bool = True
    speculative_config: str | None = None
    extra_args: tuple[str, ...] = ()
    env: dict = field(default_factory=dict)


def serve_argv(bed: Testbed, spec: ServeSpec, port: int) -> list[str]:
    argv = [
        str(bed.vllm), "serve", str(spec.model), "--host", "127.0.0.1", "--port", str(port),
        "--max-model-len", str(spec.max_model_len), "--dtype", "float32",
        "--served-model-name", spec.served_name,
    ]
    if spec.enforce_eager:
        argv.append("--enforce-eager")
    if spec.speculative_config:
        argv += ["--speculative-config", spec.speculative_config]
    return argv + list(spec.extra_args)


def serve_env(bed: Testbed, spec: ServeSpec, scratch: Path) -> dict:
    # The server must not inherit a key that would make it refuse our unauthenticated client.
    env = {k: v for k, v in os.environ.items() if k != "VLLM_API_KEY"}
    env.update({
        "HF_HUB_OFFLINE": "1",
        "TRANSFORMERS_OFFLINE": "1",
        "VLLM_CPU_KVCACHE_SPACE": "1",  # default sizing fails on small NUMA nodes (docs/testbed.md)
        "VLLM_CACHE_ROOT": str(scratch / "vllm-cache"),
        "TORCHINDUCTOR_CACHE_DIR": str(scratch / "inductor-cache"),
        "VLLM_NO_USAGE_STATS": "1",
        "DO_NOT_TRACK": "1",
        "PYTHONUNBUFFERED": "1",
    })
    env.update(spec.env)
    return env


class LocalServer:
    """One running `vllm serve`; use as a context manager so it is always torn down."""

    def __init__(self, bed: Testbed, spec: ServeSpec, log_path: Path, port: int | None = None,
                 scratch: Path | None = None) -> None:
        self.bed = bed
        self.spec = spec
        self.port = port or free_port()
        self.log_path = log_path
        self.scratch = scratch or log_path.parent / "scratch"
        self.process: subprocess.Popen | None = None
        self._pumps: list[threading.Thread] = []
        self._log_lock = threading.Lock()
        self.started_unix: float | None = None
        self.ready_unix: float | None = None

    @property
    def base_url(self) -> str:
        return f"http://127.0.0.1:{self.port}"

    def start(self) -> "LocalServer":
        self.log_path.parent.mkdir(parents=True, exist_ok=True)
        self.scratch.mkdir(parents=True, exist_ok=True)
        argv = serve_argv(self.bed, self.spec, self.port)
        self._log = open(self.log_path, "w", encoding="utf-8", errors="replace")
        self._records = open(self.lines_path, "w", encoding="utf-8")
        self.started_unix = time.time()
        self.process = subprocess.Popen(
            argv, env=serve_env(self.bed, self.spec, self.scratch), stdin=subprocess.DEVNULL,
            stdout=subprocess.PIPE, stderr=subprocess.PIPE, start_new_session=True,
        )
        for name, stream in (("stdout", self.process.stdout), ("stderr", self.process.stderr)):
            thread = threading.Thread(target=self._pump, args=(name, stream), daemon=True)
            thread.start()
            self._pumps.append(thread)
        return self

    @property
    def lines_path(self) -> Path:
        return self.log_path.with_name(self.log_path.name + ".lines.jsonl")

    def _pump(self, name: str, stream) -> None:
        for raw in iter(stream.readline, b""):
            received = time.time()
            text = raw.decode("utf-8", errors="replace")
            with self._log_lock:
                self._log.write(text)
                self._log.flush()
                record = {"t": received, "node": "local", "stream": name,
                          "line": text.rstrip("\n")}
                self._records.write(dumps(record) + "\n")
                self._records.flush()

    def wait_ready(self, timeout_s: float = 300.0) -> float:
        """Block until /health answers 200; return seconds from start. Raise on exit/timeout."""
        assert self.process is not None and self.started_unix is not None
        deadline = time.monotonic() + timeout_s
        while time.monotonic() < deadline:
            code = self.process.poll()
            if code is not None:
                for thread in self._pumps:  # the log is complete only once both pipes hit EOF
                    thread.join(timeout=5)
                raise LaunchError(f"vllm serve exited with status {code} before it was ready: "
                                  f"{self.last_error()}")
            try:
                if httpx.get(self.base_url + "/health", timeout=2.0, trust_env=False).status_code == 200:
                    self.ready_unix = time.time()
                    return self.ready_unix - self.started_unix
            except httpx.HTTPError:
                pass
            time.sleep(0.5)
        raise LaunchError(f"vllm serve was not ready after {timeout_s:g} s (log: {self.log_path})")

    def last_error(self) -> str:
        try:
            lines = self.log_path.read_text(errors="replace").splitlines()
        except OSError:
            return "no log"
        for line in reversed(lines):
            if "Error" in line or "error" in line:
                return line.strip()[:300]
        return lines[-1].strip()[:300] if lines else "empty log"

    def stop(self, grace_s: float = 15.0) -> None:
        """SIGTERM the whole process group, then SIGKILL what is left after `grace_s`."""
        if self.process is None:
            return
        try:
            os.killpg(self.process.pid, signal.SIGTERM)
        except ProcessLookupError:
            pass
        try:
            self.process.wait(timeout=grace_s)
        except subprocess.TimeoutExpired:
            pass
        try:
            os.killpg(self.process.pid, signal.SIGKILL)  # stragglers of the group
        except ProcessLookupError:
            pass
        if self.process.poll() is None:
            self.process.wait(timeout=5)
        for thread in self._pumps:
            thread.join(timeout=5)
        self._log.close()
        self._records.close()

    def __enter__(self) -> "LocalServer":
        return self.start()

    def __exit__(self, *exc) -> None:
        self.stop()
