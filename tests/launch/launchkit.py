"""Helpers for launch tests: deployments around the fake server, and a psutil survivor check."""

from __future__ import annotations

import socket
import sys
import time
from pathlib import Path

import psutil
import yaml

FAKE = Path(__file__).with_name("fake_vllm.py")
REPO = Path(__file__).resolve().parents[2]
PYSPY = REPO / ".venv" / "bin" / "py-spy"


def free_port() -> int:
    with socket.socket() as sock:
        sock.bind(("127.0.0.1", 0))
        return sock.getsockname()[1]


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
            if marker in proc.environ().get("FAKE_MARK", ""):
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


def fake_deployment(path: Path, mark: str, *, nodes: list[dict] | None = None,
                    env: dict | None = None, node_env: dict | None = None,
                    ssh_config: str | None = None, port: int | None = None, **sections) -> Path:
    """Write a deployment YAML that launches the fake server; return its path."""
    doc = {
        "schema_version": 1,
        "name": "fake",
        "lab": {"nodes": nodes or [{"name": "local", "host": "127.0.0.1",
                                    "pyspy": str(PYSPY)}]},
        "model": {"path": f"/models/{mark}", "name": "fake"},
        "engine": {"vllm": [sys.executable if not nodes else "/usr/bin/python3", str(FAKE)]},
        "serve": {"host": "127.0.0.1", "port": port or free_port()},
        "env": {"FAKE_MARK": mark, **(env or {})},
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
