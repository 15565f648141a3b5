"""Run the simulator in its own process (own interpreter, own GIL) and talk to it.

Tests and benchmarks measure a client against the simulator, so the two must not share an
event loop or a GIL: `SimProcess` starts `python -m sparktriage simulate` with a configuration
file, waits for its ready file, fetches the trace over HTTP and always stops the process.
"""

from __future__ import annotations

import json
import os
import signal
import subprocess
import sys
import time
from pathlib import Path

import httpx

from sparktriage.errors import LaunchError
from sparktriage.sim.scenario import SimConfig
from sparktriage.sim.truth import Truth


class SimProcess:
    """A simulator subprocess; use as a context manager."""

    def __init__(self, config: SimConfig | dict, workdir: Path, extra_args: tuple[str, ...] = (),
                 python: str = sys.executable) -> None:
        self.config = config if isinstance(config, SimConfig) else SimConfig.model_validate(config)
        self.workdir = workdir
        self.extra_args = extra_args
        self.python = python
        self.process: subprocess.Popen | None = None
        self.base_url = ""

    @property
    def config_path(self) -> Path:
        return self.workdir / "sim-config.json"

    @property
    def log_path(self) -> Path:
        return self.workdir / "sim.log"

    def start(self, timeout_s: float = 30.0) -> "SimProcess":
        self.workdir.mkdir(parents=True, exist_ok=True)
        self.config_path.write_text(json.dumps(self.config.model_dump(mode="json"), indent=1))
        ready = self.workdir / "sim.ready"
        ready.unlink(missing_ok=True)
        argv = [self.python, "-m", "sparktriage", "simulate", "--schedule", str(self.config_path),
                "--port", "0", "--ready-file", str(ready), *self.extra_args]
        env = dict(os.environ, PYTHONUNBUFFERED="1")
        with open(self.log_path, "wb") as log:
            self.process = subprocess.Popen(argv, stdin=subprocess.DEVNULL, stdout=log,
                                            stderr=subprocess.STDOUT, env=env, start_new_session=True)
        deadline = time.monotonic() + timeout_s
        while time.monotonic() < deadline:
            if ready.exists():
                self.base_url = ready.read_text().strip()
                return self
            if self.process.poll() is not None:
                break
            time.sleep(0.02)
        output = self.log_path.read_text(errors="replace").strip().splitlines()
        self.stop()
        raise LaunchError(f"simulator did not start: {output[-1] if output else 'no output'}")

    def _get(self, path: str) -> dict:
        response = httpx.get(self.base_url + path, timeout=30, trust_env=False)
        response.raise_for_status()
        return response.json()

    def trace(self, since: int = 0) -> list[dict]:
        """Trace entries of completion requests numbered `since` or later."""
        return self._get(f"/sim/trace?since={since}")["requests"]

    def truths(self, since: int = 0) -> dict[str, Truth]:
        """Ground truth of every traced request, by response id (computed by the server)."""
        return {t["id"]: Truth(**t) for t in self._get(f"/sim/truth?since={since}")["requests"]}

    def reset(self) -> int:
        """Forget the trace and the per-model counters; return the next request number."""
        response = httpx.post(self.base_url + "/sim/reset", timeout=30, trust_env=False)
        response.raise_for_status()
        return int(response.json()["next"])

    def stop(self) -> int | None:
        """SIGTERM, then SIGKILL after 5 s; return the exit status."""
        if self.process is None:
            return None
        if self.process.poll() is None:
            try:
                os.killpg(self.process.pid, signal.SIGTERM)
            except ProcessLookupError:
                pass
            try:
                self.process.wait(timeout=5)
            except subprocess.TimeoutExpired:
                os.killpg(self.process.pid, signal.SIGKILL)
                self.process.wait(timeout=5)
        return self.process.returncode

    def __enter__(self) -> "SimProcess":
        return self.start()

    def __exit__(self, *exc) -> None:
        self.stop()
