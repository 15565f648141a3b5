"""Helpers for the network-namespace lab tests: the lab via the CLI, real-vLLM deployments on it."""

from __future__ import annotations

import os
import subprocess
import sys
from pathlib import Path

import httpx
import yaml

from launchkit import ipc_env
from sparktriage.testbed.server import cache_env

REPO = Path(__file__).resolve().parents[2]
PROMPTS = ("def fibonacci(n):", "The quick brown fox")


def lab_cli(*args: str, timeout: float = 120) -> subprocess.CompletedProcess:
    return subprocess.run([sys.executable, "-m", "sparktriage", "testbed", "lab", *args],
                          capture_output=True, text=True, timeout=timeout,
                          stdin=subprocess.DEVNULL)


def netns_list() -> list[str]:
    done = subprocess.run(["ip", "netns", "list"], capture_output=True, text=True, check=True)
    return [line.split()[0] for line in done.stdout.splitlines() if line.strip()]


def ns_pids(namespace: str) -> list[int]:
    done = subprocess.run(["ip", "netns", "pids", namespace], capture_output=True, text=True)
    return [int(p) for p in done.stdout.split() if p.isdigit()]


def comm(pid: int) -> str:
    try:
        return Path(f"/proc/{pid}/comm").read_text().strip()
    except OSError:
        return ""


def non_sshd(namespace: str) -> list[tuple[int, str]]:
    """Processes in the namespace other than the lab's sshd."""
    return [(pid, comm(pid)) for pid in ns_pids(namespace) if comm(pid) != "sshd"]


def deployment(path: Path, testbed, lab_yaml: Path, mark: str, *, port: int = 8000,
               cache: Path, **sections) -> Path:
    """A two-node mp deployment of the tiny model on the lab (head st-node1)."""
    doc = {
        "schema_version": 1, "name": "tiny-netns", "lab": str(lab_yaml),
        "nodes": ["st-node1", "st-node2"],
        "model": {"path": str(testbed.model()), "name": "tiny"},
        "parallelism": {"tp": 2, "nodes": 2},
        "engine": {"vllm": str(testbed.vllm), "master_port": 29501},
        "serve": {"host": "0.0.0.0", "port": port, "max_model_len": 512, "dtype": "float32",
                  "enforce_eager": True},
        "env": {"HF_HUB_OFFLINE": "1", "TRANSFORMERS_OFFLINE": "1",
                "VLLM_CPU_KVCACHE_SPACE": "1", "VLLM_NO_USAGE_STATS": "1", "DO_NOT_TRACK": "1",
                "FAKE_MARK": mark, **cache_env(testbed, cache), **ipc_env()},
        "timeouts": {"startup_s": 480, "teardown_grace_s": 10, "link_s": 20},
        "collect": {"interval_s": 1.0, "stacks_interval_s": 10.0},
    }
    for key, value in sections.items():
        doc[key] = {**doc.get(key, {}), **value} if isinstance(value, dict) else value
    path.write_text(yaml.safe_dump(doc, sort_keys=False))
    return path


def greedy(base_url: str, model: str = "tiny", max_tokens: int = 24) -> list[str]:
    """Greedy completions of PROMPTS (temperature 0, ignore_eos: always max_tokens tokens)."""
    out = []
    with httpx.Client(timeout=300.0, trust_env=False) as client:
        for prompt in PROMPTS:
            reply = client.post(f"{base_url}/v1/completions", json={
                "model": model, "prompt": prompt, "max_tokens": max_tokens, "temperature": 0,
                "ignore_eos": True})
            reply.raise_for_status()
            body = reply.json()
            assert body["usage"]["completion_tokens"] == max_tokens, body["usage"]
            out.append(body["choices"][0]["text"])
    return out


def is_root() -> bool:
    return os.geteuid() == 0
