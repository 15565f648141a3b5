"""Round trip on the real test bed: reproduce of its own serve line, launch it, bench it (one vLLM start)."""

from __future__ import annotations

import json
import shlex
import subprocess
import sys
import time
from pathlib import Path

import httpx
import pytest

from sparktriage.config.deployment import load_deployment
from sparktriage.reproduce import reproduce
from sparktriage.config.deployment import Deployment
from sparktriage.launch.plan import serve_argv
from sparktriage.testbed.ports import free_port
from sparktriage.testbed.server import ServeSpec, deployment

pytestmark = pytest.mark.vllm


def _cli(*args: str, **kw) -> subprocess.Popen:
    return subprocess.Popen([sys.executable, "-m", "sparktriage", *args],
                            stdout=subprocess.PIPE, stderr=subprocess.PIPE, text=True, **kw)


def test_reproduce_launch_bench(testbed, tmp_path: Path) -> None:
    port = free_port()
    # the test bed's own serve line: its deployment's argv and environment, as a client script
    doc = deployment(testbed, ServeSpec(model=testbed.model()), port, tmp_path)
    doc["engine"]["vllm"] = [doc["engine"]["vllm"]]
    argv = serve_argv(Deployment.model_validate(doc))
    script = tmp_path / "client-serve.sh"
    script.write_text("#!/bin/bash\n" + "".join(f"export {k}={shlex.quote(v)}\n"
                                                 for k, v in doc["env"].items())
                      + " \\\n  ".join(shlex.quote(a) for a in argv) + "\n")
    out = tmp_path / "repro"
    result = reproduce([script], None, {}, out)  # lab: this machine, captured live
    assert result.lab_capture == {"local": "live"}
    dep = load_deployment(out / "deployment.yaml")
    assert dep.serve.port == port and dep.model.name == "tiny" and dep.serve.enforce_eager
    assert result.plan.nodes[0].argv[:2] == [str(testbed.vllm), "serve"]
    assert result.unknown == []
    # the client's script names its vLLM by an absolute path: a program the client chose, to
    # accept by name (the capture itself ran this machine's interpreter, never that path)
    assert [c.name for c in result.plan.client_code] == [f"program:{testbed.vllm}"]
    versions = {d.key for d in result.diff}
    assert not any(k.startswith("versions.") for k in versions)  # no client capture to differ

    run = tmp_path / "run"
    launch = _cli("launch", str(out / "deployment.yaml"), "--hold", "180", "--out", str(run),
                  "--startup-timeout", "420", "--accept-client-code", f"program:{testbed.vllm}")
    url = f"http://127.0.0.1:{port}"
    try:
        deadline = time.monotonic() + 430
        while time.monotonic() < deadline:
            try:
                if httpx.get(url + "/health", timeout=2, trust_env=False).status_code == 200:
                    break
            except httpx.HTTPError:
                pass
            assert launch.poll() is None, launch.communicate()[1][-2000:]
            time.sleep(1)
        else:
            pytest.fail("the reproduced deployment did not become ready")
        bench = subprocess.run([sys.executable, "-m", "sparktriage", "bench", "--endpoint", url,
                                "--workload", "code", "--requests", "2", "--max-tokens", "16",
                                "--warmup", "0", "--out", str(tmp_path / "bench"), "--json",
                                str(tmp_path / "bench.json")], capture_output=True, text=True,
                               timeout=240)
        assert bench.returncode == 0, bench.stderr[-2000:]
        doc = json.loads((tmp_path / "bench.json").read_text())
        assert "code" in json.dumps(doc)
    finally:
        if launch.poll() is None:
            launch.send_signal(2)  # Ctrl-C: launch tears down and exits 130
        out, err = launch.communicate(timeout=120)
    assert launch.returncode in (0, 130), err[-2000:]
    # interrupted (130), or the hold was over first: the outcome line is on stdout
    assert launch.returncode == 130 or "nothing left running" in out, (out[-2000:], err[-2000:])
