"""The local server supervisor: argv, environment, readiness, failure reporting, teardown."""

from __future__ import annotations

import json
import stat
from pathlib import Path

import psutil
import pytest

from sparktriage.errors import LaunchError
from sparktriage.testbed import paths
from sparktriage.testbed.paths import locate
from sparktriage.testbed.server import LocalServer, ServeSpec, serve_argv, serve_env


def fake_bed(tmp_path: Path, script: str) -> paths.Testbed:
    """A test bed whose `vllm` is a small shell script (a real process, not vLLM)."""
    venv = tmp_path / "venv"
    (venv / "bin").mkdir(parents=True)
    vllm = venv / "bin" / "vllm"
    vllm.write_text("#!/bin/sh\n" + script)
    vllm.chmod(vllm.stat().st_mode | stat.S_IEXEC)
    model = tmp_path / "bed" / "models" / "tiny-llama"
    model.mkdir(parents=True)
    (model / "config.json").write_text("{}")
    return paths.Testbed(venv, tmp_path / "bed")


def test_argv_and_environment(tmp_path, monkeypatch):
    bed = paths.Testbed(Path("/v"), Path("/b"))
    spec = ServeSpec(model=Path("/b/models/tiny-llama"), speculative_config='{"method": "ngram"}',
                     extra_args=("--seed", "1"))
    assert serve_argv(bed, spec, 8123) == [
        "/v/bin/vllm", "serve", "/b/models/tiny-llama", "--host", "127.0.0.1", "--port", "8123",
        "--max-model-len", "512", "--dtype", "float32", "--served-model-name", "tiny", "--enforce-eager",
        "--speculative-config", '{"method": "ngram"}', "--seed", "1"]
    monkeypatch.setenv("VLLM_API_KEY", "leak")
    env = serve_env(bed, spec, tmp_path)
    assert env["VLLM_CPU_KVCACHE_SPACE"] == "1" and env["HF_HUB_OFFLINE"] == "1"
    assert env["VLLM_CACHE_ROOT"] == str(tmp_path / "vllm-cache") and "VLLM_API_KEY" not in env


def test_exit_before_ready_reports_the_error_line(tmp_path):
    bed = fake_bed(tmp_path, 'echo "INFO starting"\necho "ValueError: Available memory is less than desired" >&2\nexit 1\n')
    server = LocalServer(bed, ServeSpec(model=bed.model()), tmp_path / "run" / "server.log")
    with server:
        with pytest.raises(LaunchError, match=r"vllm serve exited with status 1 before it was ready: "
                                              r"ValueError: Available memory is less than desired"):
            server.wait_ready(20)
    lines = [json.loads(l) for l in server.lines_path.read_text().splitlines()]
    assert {(l["stream"], l["line"]) for l in lines} == {
        ("stdout", "INFO starting"), ("stderr", "ValueError: Available memory is less than desired")}
    assert all(isinstance(l["t"], float) and l["node"] == "local" for l in lines)


def test_never_ready_times_out_and_teardown_kills_the_group(tmp_path):
    bed = fake_bed(tmp_path, "sleep 300 &\necho $! > \"$(dirname \"$0\")/child.pid\"\nexec sleep 300\n")
    server = LocalServer(bed, ServeSpec(model=bed.model()), tmp_path / "run" / "server.log")
    server.start()
    try:
        with pytest.raises(LaunchError, match="was not ready after 1 s"):
            server.wait_ready(1)
    finally:
        server.stop(grace_s=2)
    assert server.process.poll() is not None
    child = int((bed.vllm_venv / "bin" / "child.pid").read_text())
    try:  # the whole process group is gone (at most a zombie waiting for its reaper)
        assert psutil.Process(child).status() == psutil.STATUS_ZOMBIE
    except psutil.NoSuchProcess:
        pass


def test_locate_and_check(tmp_path, monkeypatch):
    monkeypatch.setenv("SPARKTRIAGE_VLLM_VENV", str(tmp_path / "venv"))
    monkeypatch.setenv("SPARKTRIAGE_TESTBED", str(tmp_path / "bed"))
    bed = locate()
    assert bed.vllm == tmp_path / "venv" / "bin" / "vllm"
    with pytest.raises(LaunchError, match="no vLLM CPU build at") as info:
        bed.check()
    assert "provision/setup.sh" in info.value.hint
    bed = fake_bed(tmp_path / "x", "exit 0\n")
    assert bed.check() is bed
    with pytest.raises(LaunchError, match="no tiny model"):
        bed.check("tiny-draft")
