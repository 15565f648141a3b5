"""The real vLLM CPU server, launched by sparktriage: locally through the CLI, and over SSH.

Local: `sparktriage launch` on a deployment of the tiny-model test bed, watched to readiness
(startup markers from its log), torn down; psutil checks that none of the processes it had
started (API server, engine core, worker, helpers) survives, and the bundle must hold samples,
py-spy stacks of the real engine processes and the log. Over SSH: the same server on an
OpenSSH "node", agent under the system python3, to readiness and back down.
"""

from __future__ import annotations

import json
import subprocess
import sys
import time

import psutil
import pytest
import yaml

from launchkit import PYSPY, free_port, ipc_env, wait_gone
from sshlab import SshLab
from sparktriage.config.deployment import load_deployment
from sparktriage.bundle.reader import Bundle
from sparktriage.launch.plan import build_plan
from sparktriage.launch.readiness import api_ready
from sparktriage.launch.run import launch_once
from sparktriage.store.rundir import RunDir
from sparktriage.testbed.server import cache_env

pytestmark = pytest.mark.vllm


def _deployment(tmp_path, testbed, mark, node: dict) -> tuple:
    port = free_port()
    doc = {
        "schema_version": 1, "name": "tiny-real",
        "lab": {"nodes": [node]},
        "model": {"path": str(testbed.model()), "name": f"tiny-{mark}"},
        "engine": {"vllm": str(testbed.vllm)},
        "serve": {"host": "127.0.0.1", "port": port, "max_model_len": 512, "dtype": "float32",
                  "enforce_eager": True},
        "env": {"HF_HUB_OFFLINE": "1", "TRANSFORMERS_OFFLINE": "1", "VLLM_CPU_KVCACHE_SPACE": "1",
                "VLLM_NO_USAGE_STATS": "1", "DO_NOT_TRACK": "1", "TEST_MARK": mark,
                **cache_env(testbed, tmp_path), **ipc_env()},
        "timeouts": {"startup_s": 480, "teardown_grace_s": 15},
        "collect": {"interval_s": 1.0, "stacks_interval_s": 5.0},
    }
    path = tmp_path / "deploy.yaml"
    path.write_text(yaml.safe_dump(doc, sort_keys=False))
    return path, f"http://127.0.0.1:{port}"


def test_launch_real_vllm_locally(tmp_path, testbed, mark):
    path, endpoint = _deployment(tmp_path, testbed, mark,
                                 {"name": "local", "host": "127.0.0.1", "pyspy": str(PYSPY)})
    out = tmp_path / "run"
    cli = subprocess.Popen([sys.executable, "-m", "sparktriage", "launch", str(path), "--hold",
                            "6", "--out", str(out), "--json", str(tmp_path / "result.json")],
                           stdout=subprocess.PIPE, stderr=subprocess.PIPE)
    deadline = time.monotonic() + 480
    while not api_ready(endpoint, 1.0):
        assert cli.poll() is None, cli.stderr.read().decode()[-2000:]
        assert time.monotonic() < deadline
        time.sleep(1.0)
    descendants = psutil.Process(cli.pid).children(recursive=True)
    names = {p.name() for p in descendants if p.is_running()}
    assert any(n.startswith("VLLM::EngineCor") for n in names), names
    assert cli.wait(timeout=240) == 0, cli.stderr.read().decode()[-2000:]
    _, alive = psutil.wait_procs(descendants, timeout=10)
    assert alive == []
    assert wait_gone(mark, 5) == [] and not api_ready(endpoint, 1.0)

    with Bundle.open(out / "launches" / "L001" / "bundle") as bundle:
        info = bundle.info
        assert info.outcome == "completed" and 0 < info.raw["ready_s"] < 480
        markers = [m["marker"] for m in info.raw["markers"]]
        assert "ready" in markers and "engine-config" in markers
        assert markers.index("load-start") < markers.index("weights-loaded") < markers.index("ready")
        lines = list(bundle.log_lines("local", "server"))
        assert any("Application startup complete" in r.line for r in lines)
        assert {r.stream for r in lines} == {"stdout", "stderr"}
        assert len(list(bundle.host_samples("local"))) >= 10
        roles = {p.role for p in bundle.proc_samples("local")}
        assert {"api-server", "engine-core", "worker"} <= roles
        stacks = list(bundle.stacks("local"))
        engine = [s for s in stacks if s.role == "engine-core" and not s.error]
        assert engine, [(s.role, s.error) for s in stacks]
        files = {f.file for s in engine for t in s.threads for f in t.frames}
        assert any(f.startswith("vllm/") for f in files)
        env = bundle.environment("local")
        assert env["versions"]["vllm"] == "0.32.0+cpu" and env["versions"]["torch"]
        manifest = {m.collector: m for m in bundle.manifest()}
        assert manifest["stacks"].records == len(stacks) and manifest["gpu"].skipped
        (teardown,) = [e for e in bundle.events() if e["event"] == "teardown"]
        assert teardown["survivors"] == []
    assert "Application startup complete" in (out / "launches" / "L001" / "server.log").read_text()
    logs = json.loads((out / "launches" / "L001" / "logs.json").read_text())
    assert logs["startup"]["complete"] and logs["version"].startswith("0.32.0")
    phases = {p["name"]: p for p in logs["phases"]}
    assert {"weight_read", "ready"} <= set(phases)
    result = json.loads((tmp_path / "result.json").read_text())["launches"][0]
    assert result["startup"]["complete"] and result["outcome"] == "completed"


def test_launch_real_vllm_over_ssh(tmp_path, testbed, mark):
    lab = SshLab(tmp_path / "lab", 1).start()
    try:
        node = {"name": "n1", "host": "127.0.0.1", "ssh": "n1", "python": "/usr/bin/python3",
                "pyspy": str(PYSPY)}
        path, endpoint = _deployment(tmp_path, testbed, mark, node)
        doc = yaml.safe_load(path.read_text())
        doc["lab"]["ssh_config"] = str(lab.ssh_config)
        path.write_text(yaml.safe_dump(doc))
        plan = build_plan(load_deployment(path))
        assert plan.head.transport.destination == "n1"
        run = RunDir.create(tmp_path / "run", ["test"])
        result = launch_once(plan, run.next_launch(), None, hold_s=2.0)
    finally:
        lab.close()
    assert result["outcome"] == "completed", result
    assert wait_gone(mark, 10) == []
    with Bundle.open(result["bundle"]) as bundle:
        assert "ready" in [m["marker"] for m in bundle.info.raw["markers"]]
        assert {p.role for p in bundle.proc_samples("n1")} >= {"api-server", "engine-core"}
        assert any(s.role == "engine-core" and not s.error for s in bundle.stacks("n1"))
        assert bundle.environment("n1")["versions"]["vllm"] == "0.32.0+cpu"
        (teardown,) = [e for e in bundle.events() if e["event"] == "teardown"]
        assert teardown["survivors"] == [] and teardown["node"] == "n1"
