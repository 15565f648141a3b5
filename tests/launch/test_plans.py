"""Launch plans pinned whole: per node argv and environment for mp, multi-node mp, Ray, containers.

Golden files live in tests/launch/golden/ (`<case>.json` is the plan as data, `<case>.txt` the
--dry-run text). After an intended change: SPARKTRIAGE_UPDATE_GOLDEN=1 pytest tests/launch/test_plans.py
and review the diff.
"""

from __future__ import annotations

import json
import os
import shlex
import subprocess
import sys
from pathlib import Path

import pytest
import yaml

from sparktriage.config.deployment import load_deployment
from sparktriage.launch.plan import build_plan
from sparktriage.launch.render import render_launch_plan
from sparktriage.launch.transport import Transport

GOLDEN = Path(__file__).with_name("golden")

LAB3 = {"ssh_config": "/etc/sparktriage/ssh_config", "nodes": [
    {"name": "spark-01", "host": "10.10.0.1", "ssh": "spark-01", "role": "head",
     "interfaces": ["enp1s0f0np0"], "gpu": "gb10",
     "env": {"NCCL_SOCKET_IFNAME": "enp1s0f0np0", "GLOO_SOCKET_IFNAME": "enp1s0f0np0"}},
    {"name": "spark-02", "host": "10.10.0.2", "ssh": "admin@spark-02", "port": 2222,
     "gpu": "gb10", "python": "/usr/bin/python3.12",
     "env": {"NCCL_SOCKET_IFNAME": "enP2p1s0f1np1", "GLOO_SOCKET_IFNAME": "enP2p1s0f1np1"}},
    {"name": "spark-03", "host": "10.10.0.3", "ssh": "spark-03", "proxy_jump": "spark-01",
     "gpu": "gb10", "identity_file": "/keys/lab"},
]}

CASES = {
    "local-single": {
        "name": "tiny", "lab": {"nodes": [{"name": "local", "host": "127.0.0.1"}]},
        "model": {"path": "/srv/models/tiny-llama", "name": "tiny"},
        "engine": {"vllm": "/opt/venv/bin/vllm"},
        "serve": {"host": "127.0.0.1", "port": 8011, "max_model_len": 512, "dtype": "float32",
                  "enforce_eager": True, "flags": {"seed": 0, "disable-log-requests": True,
                                                   "uvicorn-log-level": None}},
        "speculative": {"method": "ngram", "num_speculative_tokens": 3,
                        "extra": {"prompt_lookup_max": 4, "prompt_lookup_min": 2}},
        "load": {"format": "safetensors", "strategy": "prefetch",
                 "extra_config": {"enable_multithread_load": True, "num_threads": 8}},
        "env": {"VLLM_CPU_KVCACHE_SPACE": "1"},
    },
    "mp-three-nodes": {
        "name": "kimi-k2", "lab": LAB3,
        "model": {"path": "/models/Kimi-K2.6-NVFP4", "name": "kimi", "quantization": "modelopt_fp4",
                  "trust_remote_code": True},
        "parallelism": {"tp": 3, "ep": True},
        "serve": {"port": 8000, "max_model_len": 65536, "gpu_memory_utilization": 0.8,
                  "kv_cache_dtype": "fp8", "max_num_seqs": 8},
        "load": {"strategy": "eager"},
        "env": {"NCCL_NVLS_ENABLE": "0", "VLLM_ENGINE_READY_TIMEOUT_S": "7200"},
        "node_env": {"spark-01": {"VLLM_HOST_IP": "10.10.0.1"},
                     "spark-02": {"VLLM_HOST_IP": "10.10.0.2"}},
        "timeouts": {"startup_s": 3600},
    },
    "ray-two-nodes": {
        "name": "glm", "lab": LAB3, "nodes": ["spark-01", "spark-02"],
        "model": {"path": "/models/GLM-5.3-NVFP4"},
        "parallelism": {"tp": 2},
        "engine": {"backend": "ray", "ray": "/opt/venv/bin/ray", "vllm": "/opt/venv/bin/vllm"},
        "env": {"RAY_memory_monitor_refresh_ms": "0"},
    },
    "container-two-nodes": {
        "name": "dsv4", "lab": LAB3, "nodes": ["spark-02", "spark-03"],
        "model": {"path": "/models/DeepSeek-V4-Flash"},
        "parallelism": {"tp": 2},
        "engine": {"image": "nvcr.io/nvidia/vllm:26.04-py3",
                   "container_args": ["-v", "/models:/models:ro", "--shm-size", "10g"]},
        "env": {"HF_HUB_OFFLINE": "1"},
    },
}


def _plan(tmp_path: Path, case: str):
    path = tmp_path / f"{case}.yaml"
    path.write_text(yaml.safe_dump({"schema_version": 1, **CASES[case]}, sort_keys=False))
    return build_plan(load_deployment(path))


@pytest.mark.parametrize("case", sorted(CASES))
def test_plan_matches_golden(tmp_path, case):
    plan = _plan(tmp_path, case)
    document = json.dumps(plan.to_json(), indent=2, sort_keys=True) + "\n"
    text = render_launch_plan(plan).text() + "\n"
    if os.environ.get("SPARKTRIAGE_UPDATE_GOLDEN"):
        GOLDEN.mkdir(exist_ok=True)
        (GOLDEN / f"{case}.json").write_text(document)
        (GOLDEN / f"{case}.txt").write_text(text)
    assert document == (GOLDEN / f"{case}.json").read_text()
    assert text == (GOLDEN / f"{case}.txt").read_text()


def test_plan_shapes(tmp_path):
    ray = _plan(tmp_path, "ray-two-nodes")
    assert [s.name for s in ray.stages] == ["ray-head", "ray-workers", "serve"]
    assert ray.stages[1].processes[0][1].argv[:4] == ("/opt/venv/bin/ray", "start", "--address",
                                                       "10.10.0.1:6379")
    assert ray.stages[2].processes[0][1].argv[-2:] == ("--distributed-executor-backend", "ray")
    assert ray.teardown == (("spark-01", ("/opt/venv/bin/ray", "stop", "--force")),
                            ("spark-02", ("/opt/venv/bin/ray", "stop", "--force")))
    mp = _plan(tmp_path, "mp-three-nodes")
    (stage,) = mp.stages
    envs = {node: dict(proc.env) for node, proc in stage.processes}
    assert envs["spark-02"]["NCCL_SOCKET_IFNAME"] == "enP2p1s0f1np1"  # the lab node's own
    assert envs["spark-01"]["VLLM_HOST_IP"] == "10.10.0.1" and "VLLM_HOST_IP" not in envs["spark-03"]
    assert mp.node("spark-02").transport.argv(["x"])[:8] == [
        "ssh", "-F", "/etc/sparktriage/ssh_config", "-T", "-o", "BatchMode=yes", "-o",
        "ServerAliveInterval=5"]
    box = _plan(tmp_path, "container-two-nodes")
    argv = box.stages[0].processes[0][1].argv
    assert argv[:5] == ("docker", "run", "--rm", "--name", "sparktriage-dsv4-spark-02-server")
    assert "-e" in argv and "HF_HUB_OFFLINE=1" in argv
    assert ("spark-02", ("docker", "rm", "-f", "sparktriage-dsv4-spark-02-server")) in box.teardown


@pytest.mark.parametrize("value", ["plain", "; rm -rf /", "$(id)", "`id`", "a\nb", "it's \"q\"",
                                   "--option", "*", "~", "a b\tc"])
def test_ssh_remote_command_reaches_the_remote_shell_literally(value):
    """What ssh sends is parsed by the remote login shell: check that shell gets our argv."""
    transport = Transport(destination="node")
    remote = transport.argv([value, "-c", value])[-1]
    done = subprocess.run(["/bin/sh", "-c", f"printf '%s\\0' {remote}"], capture_output=True)
    assert done.stdout.split(b"\0")[:-1] == [value.encode(), b"-c", value.encode()]
    assert transport.argv(["x"])[-3:-1] == ["--", "node"]  # the destination is never an option


def test_dry_run_command_prints_the_plan(tmp_path):
    path = tmp_path / "d.yaml"
    path.write_text(yaml.safe_dump({"schema_version": 1, **CASES["ray-two-nodes"]}))
    done = subprocess.run([sys.executable, "-m", "sparktriage", "launch", str(path), "--dry-run",
                           "--json", str(tmp_path / "plan.json")], capture_output=True, text=True)
    assert done.returncode == 0, done.stderr
    assert "stage 2: ray-workers" in done.stdout
    assert shlex.join(["/opt/venv/bin/vllm", "serve", "/models/GLM-5.3-NVFP4"]) in done.stdout
    plan = json.loads((tmp_path / "plan.json").read_text())
    assert plan["kind"] == "launch-plan" and plan["backend"] == "ray"
