"""`sparktriage collect` around a server it did not start (the real vLLM), by command, and on
bad input."""

from __future__ import annotations

import json
import os
import subprocess
import sys
import tarfile
from pathlib import Path

import psutil

import pytest

from sparktriage.bundle.reader import Bundle

REPO = Path(__file__).resolve().parents[2]
SIM = "sparktriage.sim.vllm"  # the simulator as `vllm serve` (docs/simulator.md)
PYSPY = REPO / ".venv" / "bin" / "py-spy"


def _collect(*args: str, timeout: float = 120, env: dict | None = None) -> subprocess.CompletedProcess:
    return subprocess.run([sys.executable, "-m", "sparktriage", "collect", *args],
                          capture_output=True, text=True, timeout=timeout,
                          env={**os.environ, **(env or {})})


@pytest.mark.vllm
def test_collect_around_a_real_vllm_server_by_pid(vllm_server, tmp_path):
    pid = vllm_server.pid
    before = {p.pid for p in psutil.Process(pid).children(recursive=True)}
    out = tmp_path / "bundle"
    done = _collect("--pid", str(pid), "--duration", "4", "--stacks", "1", "--interval", "0.5",
                    "--pyspy", str(PYSPY), "--out", str(out), "--export",
                    str(tmp_path / "b.tar.gz"), "--json", "-")
    assert done.returncode == 0, done.stderr
    result = json.loads(done.stdout)
    assert result["outcome"] == "duration-elapsed" and result["archive"]
    # the server sparktriage did not start is left exactly as it was
    assert psutil.Process(pid).is_running()
    assert {p.pid for p in psutil.Process(pid).children(recursive=True)} == before
    with Bundle.open(tmp_path / "b.tar.gz") as bundle:
        assert bundle.info.origin == "collect" and bundle.info.target == {"pid": pid}
        stacks = list(bundle.stacks("local"))
        roles = {s.role for s in stacks if not s.error}
        assert {"api-server", "engine-core"} <= roles
        engine = next(s for s in stacks if s.role == "engine-core" and not s.error)
        assert any(f.file.startswith("vllm/") for t in engine.threads for f in t.frames)
        procs = list(bundle.proc_samples("local"))
        assert {p.pid for p in procs} >= {pid} | before
        assert len(list(bundle.host_samples("local"))) >= 5
        env = bundle.environment("local")
        assert env["target_pid"] == pid and env["versions"]["vllm"] == "0.32.0+cpu"
        assert env["env"]["VLLM_CPU_KVCACHE_SPACE"] == "1"
        (teardown,) = [e for e in bundle.events() if e["event"] == "teardown"]
        assert teardown["killed"] == 0  # nothing was signalled
    with tarfile.open(tmp_path / "b.tar.gz") as tar:
        assert all(name.split("/")[0] == "bundle" for name in tar.getnames())


@pytest.mark.slow
def test_collect_runs_a_command_until_ready_and_stops_it(tmp_path):
    port = str(_free_port())
    out = tmp_path / "bundle"
    done = _collect("--cmd", f"{sys.executable} -m {SIM} serve /m --port {port}", "--until-ready",
                    "--endpoint", f"http://127.0.0.1:{port}", "--out", str(out),
                    "--stacks", "0", "--json", "-",
                    env={"SPARKTRIAGE_SIM": json.dumps({"child": "group"})})
    assert done.returncode == 0, done.stderr
    assert json.loads(done.stdout)["outcome"] == "ready"
    with Bundle.open(out) as bundle:
        assert bundle.info.target == {"cmd": [sys.executable, "-m", SIM, "serve", "/m", "--port",
                                              port]}
        assert any("Application startup complete" in r.line
                   for r in bundle.log_lines("local", "server"))
        assert "ready" in [m["marker"] for m in bundle.info.raw["markers"]]
        (teardown,) = [e for e in bundle.events() if e["event"] == "teardown"]
        assert teardown["survivors"] == [] and teardown["killed"] >= 2
    assert not [p for p in psutil.process_iter(["cmdline"])
                if f"-m {SIM} serve /m --port {port}" in " ".join(p.info["cmdline"] or [])]


def _free_port() -> int:
    import socket
    with socket.socket() as sock:
        sock.bind(("127.0.0.1", 0))
        return sock.getsockname()[1]


@pytest.mark.parametrize("args, code, message", [
    (["--pid", "999999999", "--duration", "1"], 3, "could not attach: no process 999999999"),
    (["--duration", "1"], 2, "give exactly one of --pid, --match or --cmd"),
    (["--pid", "1", "--cmd", "x"], 2, "give exactly one of --pid, --match or --cmd"),
    (["--cmd", "'unclosed", "--duration", "1"], 2, "--cmd: No closing quotation"),
    (["--match", "(", "--duration", "1"], 2, "--match"),
])
def test_bad_input_is_one_line_with_its_exit_code(tmp_path, args, code, message):
    done = _collect(*args, "--out", str(tmp_path / "b"))
    assert done.returncode == code, done.stderr
    lines = done.stderr.strip().splitlines()
    assert lines[-1].startswith("error: ") and message in lines[-1]
    assert "Traceback" not in done.stderr
