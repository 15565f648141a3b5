"""Helpers for launch tests: deployments around the simulator (`sparktriage.sim.vllm`, which
stands in for `vllm serve`), and a psutil survivor check."""

from __future__ import annotations

import json
import os
import socket
import time
from pathlib import Path

import psutil
import yaml

REPO = Path(__file__).resolve().parents[2]
PYSPY = REPO / ".venv" / "bin" / "py-spy"
SIM_PYTHON = REPO / ".venv" / "bin" / "python"  # also on the OpenSSH "nodes" (same machine)
SIM = [str(SIM_PYTHON), "-m", "sparktriage.sim.vllm"]
# The launch tests' default: an engine child (teardown has a tree to kill), 0.5 s of weight read.
BASE_SCENARIO = {"child": "group", "startup_s": {"weight_read": 0.5}}


def free_port() -> int:
    with socket.socket() as sock:
        sock.bind(("127.0.0.1", 0))
        return sock.getsockname()[1]


def ipc_env() -> dict[str, str]:
    """vLLM's IPC sockets into the suite's folder (tests/conftest.py `vllm_ipc_folder`), for
    deployments whose nodes get their environment over SSH rather than from this process."""
    folder = os.environ.get("VLLM_RPC_BASE_PATH")
    return {"VLLM_RPC_BASE_PATH": folder} if folder else {}


def sim_env(**scenario) -> dict[str, str]:
    """The environment that gives the simulator this scenario (on top of BASE_SCENARIO)."""
    doc = {**BASE_SCENARIO, **scenario}
    return {"SPARKTRIAGE_SIM": json.dumps(doc, separators=(",", ":"))}


def processes_with(marker: str) -> list[psutil.Process]:
    """Live (non-zombie) processes whose command line or environment mention `marker`."""
    found = []
    for proc in psutil.process_iter(["cmdline", "status"]):
        try:
            if proc.info["status"] == psutil.STATUS_ZOMBIE:
                continue
            if marker in " ".join(proc.info["cmdline"] or []):
                found.append(proc)
                continue
            if marker in proc.environ().get("TEST_MARK", ""):
                found.append(proc)
        except (psutil.NoSuchProcess, psutil.AccessDenied):
            continue
    return found


def wait_gone(marker: str, timeout_s: float = 10.0) -> list[psutil.Process]:
    deadline = time.monotonic() + timeout_s
    left = processes_with(marker)
    while left and time.monotonic() < deadline:
        time.sleep(0.2)
        left = processes_with(marker)
    return left


def sim_deployment(path: Path, mark: str, *, nodes: list[dict] | None = None,
                   env: dict | None = None, node_env: dict | None = None,
                   ssh_config: str | None = None, port: int | None = None,
                   scenario: dict | None = None, **sections) -> Path:
    """Write a deployment YAML that launches the simulator; return its path."""
    doc = {
        "schema_version": 1,
        "name": "sim",
        "lab": {"nodes": nodes or [{"name": "local", "host": "127.0.0.1",
                                    "pyspy": str(PYSPY)}]},
        "model": {"path": f"/models/{mark}", "name": "sim"},
        "engine": {"vllm": SIM},
        "serve": {"host": "127.0.0.1", "port": port or free_port()},
        "env": {"TEST_MARK": mark, **sim_env(**(scenario or {})), **(env or {})},
        "timeouts": {"startup_s": 60, "teardown_grace_s": 3, "link_s": 20},
        "collect": {"interval_s": 0.5, "stacks_interval_s": 1.0},
    }
    if ssh_config:
        doc["lab"]["ssh_config"] = ssh_config
    if node_env:
        doc["node_env"] = node_env
    for key, value in sections.items():
        doc[key] = {**doc.get(key, {}), **value} if isinstance(value, dict) else value
    path.write_text(yaml.safe_dump(doc, sort_keys=False))
    return path
