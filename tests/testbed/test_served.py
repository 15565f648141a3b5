"""Test-bed servers through the launch path: deployment, argv and environment, failure
reporting, the startup deadline and teardown (the supervisor's), and locating the test bed."""

from __future__ import annotations

import json
import stat
from pathlib import Path

import psutil
import pytest

from sparktriage.errors import LaunchError
from sparktriage.testbed import paths
from sparktriage.testbed.paths import locate
from sparktriage.config.deployment import load_deployment
from sparktriage.launch.plan import build_plan
from sparktriage.store.documents import read_records
from sparktriage.testbed.server import ServeSpec, deployment, served


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


def _plan(bed, spec, tmp_path, port=8123):
    path = tmp_path / "d.json"
    path.write_text(json.dumps(deployment(bed, spec, port, tmp_path)))
    return build_plan(load_deployment(path))


def test_argv_and_environment(tmp_path):
    bed = paths.Testbed(Path("/v"), Path("/b"))
    spec = ServeSpec(model=Path("/b/models/tiny-llama"),
                     speculative_config='{"method": "ngram", "num_speculative_tokens": 3}',
                     extra_args=("--seed", "1"))
    plan = _plan(bed, spec, tmp_path)
    ((node, proc),) = plan.stages[0].processes
    assert node == "local" and plan.endpoint == "http://127.0.0.1:8123"
    assert list(proc.argv) == [
        "/v/bin/vllm", "serve", "/b/models/tiny-llama", "--host", "127.0.0.1", "--port", "8123",
        "--served-model-name", "tiny", "--max-model-len", "512", "--dtype", "float32",
        "--enforce-eager", "--speculative-config", '{"method":"ngram","num_speculative_tokens":3}',
        "--seed", "1"]
    env = dict(proc.env)
    assert env["VLLM_CPU_KVCACHE_SPACE"] == "1" and env["HF_HUB_OFFLINE"] == "1"
    assert env["VLLM_CACHE_ROOT"] == str(tmp_path / "vllm-cache") and env["PYTHONUNBUFFERED"] == "1"
    assert "TMPDIR" not in env  # no shared folder: the server's own temporary folder


def test_a_bed_with_a_cache_folder_gives_every_server_the_same_caches(tmp_path):
    bed = paths.Testbed(Path("/v"), Path("/b")).with_cache(tmp_path / "shared")
    envs = []
    for name in ("one", "two"):
        (tmp_path / name).mkdir()
        ((_, proc),) = _plan(bed, ServeSpec(model=Path("/b/models/tiny-llama")), tmp_path / name).stages[0].processes
        envs.append(dict(proc.env))
    for env in envs:
        assert env["VLLM_CACHE_ROOT"] == str(tmp_path / "shared" / "vllm-cache")
        assert env["TORCHINDUCTOR_CACHE_DIR"] == str(tmp_path / "shared" / "inductor-cache")
        # vLLM's rendezvous files and Inductor's precompiled header, which ignore the cache
        # variables, stay in the shared folder too (made, so that the server can use it)
        assert env["TMPDIR"] == str(tmp_path / "shared" / "tmp")
    assert (tmp_path / "shared" / "tmp").is_dir()


def test_exit_before_ready_reports_the_error_line(tmp_path):
    bed = fake_bed(tmp_path, 'echo "INFO starting"\necho "ValueError: Available memory is less than desired" >&2\nexit 1\n')
    with pytest.raises(LaunchError, match=r"local: server exited with status 1"):
        with served(bed, ServeSpec(model=bed.model()), tmp_path / "serve", startup_s=20):
            pass
    bundle = tmp_path / "serve" / "run" / "launches" / "L001"
    lines = list(read_records(bundle / "bundle" / "nodes" / "local" / "logs" / "server.lines.jsonl"))
    assert {(l["stream"], l["line"]) for l in lines} == {
        ("stdout", "INFO starting"), ("stderr", "ValueError: Available memory is less than desired")}
    assert all(isinstance(l["t"], float) and l["node"] == "local" for l in lines)
    # the launch's derived log names the error line
    assert "ValueError: Available memory is less than desired" in (bundle / "server.log").read_text()


def test_never_ready_times_out_and_teardown_kills_the_group(tmp_path):
    bed = fake_bed(tmp_path, "sleep 300 &\necho $! > \"$(dirname \"$0\")/child.pid\"\n"
                             "echo $$ > \"$(dirname \"$0\")/main.pid\"\nexec sleep 300\n")
    with pytest.raises(LaunchError, match="readiness of http://127.0.0.1:.* not reached within the deadline"):
        with served(bed, ServeSpec(model=bed.model()), tmp_path / "serve", startup_s=3):
            pass
    main = int((bed.vllm_venv / "bin" / "main.pid").read_text())
    assert not psutil.pid_exists(main) or psutil.Process(main).status() == psutil.STATUS_ZOMBIE
    child = int((bed.vllm_venv / "bin" / "child.pid").read_text())
    try:  # the whole process group is gone (at most a zombie waiting for its reaper)
        assert psutil.Process(child).status() == psutil.STATUS_ZOMBIE
    except psutil.NoSuchProcess:
        pass


def test_locate_and_check(tmp_path, monkeypatch):
    monkeypatch.setenv("SPARKTRIAGE_VLLM_VENV", str(tmp_path / "venv"))
    monkeypatch.setenv("SPARKTRIAGE_TESTBED", str(tmp_path / "bed"))
    monkeypatch.delenv("SPARKTRIAGE_TESTBED_CACHE", raising=False)
    bed = locate()
    assert bed.vllm == tmp_path / "venv" / "bin" / "vllm" and bed.cache is None
    monkeypatch.setenv("SPARKTRIAGE_TESTBED_CACHE", str(tmp_path / "caches"))
    assert locate().cache == tmp_path / "caches"
    with pytest.raises(LaunchError, match="no vLLM CPU build at") as info:
        bed.check()
    assert "provision/setup.sh" in info.value.hint
    bed = fake_bed(tmp_path / "x", "exit 0\n")
    assert bed.check() is bed
    with pytest.raises(LaunchError, match="no tiny model"):
        bed.check("tiny-draft")


def test_served_gives_the_fixtures_what_they_read(tmp_path):
    """`served()` end to end with the simulator as the engine: what the session fixtures
    expose (base URL, line records, ready time, server pid) and the supervisor's teardown."""
    import httpx
    import sys

    bed = paths.Testbed(tmp_path / "no-venv", tmp_path / "bed")
    spec = ServeSpec(model=tmp_path / "m", engine=(sys.executable, "-m", "sparktriage.sim.vllm"),
                     speculative_config='{"method": "ngram", "num_speculative_tokens": 3}',
                     env={"SPARKTRIAGE_SIM": json.dumps({"child": "group"})})
    with served(bed, spec, tmp_path / "serve", startup_s=60) as server:
        assert httpx.get(server.base_url + "/health", trust_env=False).status_code == 200
        models = httpx.get(server.base_url + "/v1/models", trust_env=False).json()
        assert [m["id"] for m in models["data"]] == ["tiny"]
        pid = server.pid
        process = psutil.Process(pid)
        assert "sparktriage.sim.vllm" in " ".join(process.cmdline())
        assert "--speculative-config" in process.cmdline()
        children = process.children(recursive=True)
        lines = list(read_records(server.lines_path))
        startup = [l for l in lines if "Application startup complete" in l["line"]]
        assert startup and startup[0]["stream"] == "stderr"
        assert startup[0]["t"] <= server.ready_unix + 0.5 and server.ready_unix > server.started_unix
        assert "Application startup complete" in server.log_text()
    assert not psutil.pid_exists(pid) or psutil.Process(pid).status() == psutil.STATUS_ZOMBIE
    assert all(not c.is_running() or c.status() == psutil.STATUS_ZOMBIE for c in children)
    launch = tmp_path / "serve" / "run" / "launches" / "L001"
    assert json.loads((launch / "logs.json").read_text())["startup"]["complete"]
    assert "Starting vLLM server on http://127.0.0.1:" in (launch / "server.log").read_text()
