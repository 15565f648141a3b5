"""Helpers of the session tests (imported by name: `from session_helpers import ...`; a module
named conftest would clash with the other folders' when pytest collects them together):
deployments whose `vllm serve` is the project's simulator (fast relaunches).

The engine is `python -m sparktriage.sim.vllm` (the simulator acting as `vllm serve`, COMMON
interface) when that module exists, else tests/session/simserve.py, which takes vLLM's command
line and becomes `python -m sparktriage simulate` on the requested port."""

from __future__ import annotations

import importlib.util
import json
import os
import socket
import subprocess
import sys
import time
from pathlib import Path

import yaml

HERE = Path(__file__).parent


def free_port() -> int:
    with socket.socket() as s:
        s.bind(("127.0.0.1", 0))
        return s.getsockname()[1]


def sim_engine() -> list[str]:
    if importlib.util.find_spec("sparktriage.sim.vllm") is not None:
        return [sys.executable, "-m", "sparktriage.sim.vllm"]
    return [sys.executable, str(HERE / "simserve.py")]


def write_deployment(folder: Path, *, startup_s: float = 60.0, env: dict | None = None) -> Path:
    """A one-node local deployment served by the simulator; its model path is unique to
    `folder`, so the processes of this deployment can be told from everyone else's."""
    model = folder / "model-under-test"
    model.mkdir(parents=True, exist_ok=True)
    doc = {"schema_version": 1, "name": "sim-session",
           "lab": {"nodes": [{"name": "local", "host": "127.0.0.1", "gpu": "none"}]},
           "model": {"path": str(model), "name": "sim"},
           "engine": {"vllm": sim_engine()},
           "serve": {"host": "127.0.0.1", "port": free_port()},
           "env": {"SPARKTRIAGE_SIM_SEED": "7", **(env or {})},
           "timeouts": {"startup_s": startup_s, "teardown_grace_s": 3},
           "collect": {"interval_s": 1.0, "stacks_interval_s": None}}
    path = folder / "deploy.yaml"
    path.write_text(yaml.safe_dump(doc, sort_keys=False), encoding="utf-8")
    return path


def _is_test_runner(argv: list[str]) -> bool:
    """pytest itself (or an xdist worker of it), whose arguments may name a test's folder."""
    return any(Path(a).name in ("pytest", "py.test") or (a == "-m" and b == "pytest")
               for a, b in zip(argv, argv[1:] + [""]))


def engine_pids(marker: str) -> list[int]:
    """Processes whose command line names `marker` (this test's model path), the test runner
    aside. The marker lies under pytest's own temporary folder (`pytest-of-USER`), so the word
    "pytest" in a command line says nothing about whose process it is."""
    found = []
    for name in os.listdir("/proc"):
        if not name.isdigit() or int(name) == os.getpid():
            continue
        try:
            raw = Path(f"/proc/{name}/cmdline").read_bytes()
        except OSError:
            continue
        argv = [a.decode("utf-8", "replace") for a in raw.split(b"\0") if a]
        if any(marker in a for a in argv) and not _is_test_runner(argv):
            found.append(int(name))
    return found


def session_argv(*args: str) -> list[str]:
    return [sys.executable, "-m", "sparktriage", "session", *args]


def read_state(run: Path) -> dict | None:
    try:
        return json.loads((run / "session.json").read_text(encoding="utf-8"))
    except (OSError, ValueError):
        return None


def running_step(run: Path) -> dict | None:
    state = read_state(run)
    if not state:
        return None
    # a launch step stays running while its protocol and probe run: the innermost one counts
    running = [s for s in state["steps"] if s["state"] == "running"]
    return running[-1] if running else None


def wait_for(predicate, timeout: float, what: str, interval: float = 0.05):
    deadline = time.monotonic() + timeout
    while time.monotonic() < deadline:
        value = predicate()
        if value:
            return value
        time.sleep(interval)
    raise AssertionError(f"timed out waiting for {what}")


def complete_lines(path: Path) -> list[bytes]:
    """The complete (newline-terminated) records of a JSON-lines file."""
    data = path.read_bytes() if path.is_file() else b""
    return [line + b"\n" for line in data.split(b"\n")[:-1]]


def request_records(run: Path) -> dict[str, list[bytes]]:
    return {str(p.relative_to(run)): complete_lines(p)
            for p in sorted(run.glob("launches/*/requests.jsonl"))}


def wait_gone(marker: str, timeout: float = 30.0) -> list[int]:
    deadline = time.monotonic() + timeout
    pids = engine_pids(marker)
    while pids and time.monotonic() < deadline:
        time.sleep(0.2)
        pids = engine_pids(marker)
    return pids


def run_to_end(argv: list[str], timeout: float = 400) -> subprocess.CompletedProcess:
    return subprocess.run(argv, capture_output=True, text=True, timeout=timeout,
                          stdin=subprocess.DEVNULL)
