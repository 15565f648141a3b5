"""Shared helpers of the issue-35 reproduce tests: a GB10 lab, running reproduce, the plan."""

from __future__ import annotations

import subprocess
import sys
from pathlib import Path

import yaml

from sparktriage.config.deployment import load_deployment
from sparktriage.launch.plan import build_plan
from sparktriage.reproduce import reproduce


def gb10_lab(folder: Path, count: int, **node) -> Path:
    """A lab of `count` one-GPU GB10 nodes (documentation addresses; nothing is contacted)."""
    path = folder / f"lab-{count}.yaml"
    path.write_text(yaml.safe_dump({"schema_version": 1, "name": f"gb10x{count}", "nodes": [
        {"name": f"spark-{i:02d}", "host": f"192.0.2.{10 + i}", "ssh": f"spark-{i:02d}",
         "gpu": "gb10", **node} for i in range(1, count + 1)]}))
    return path


def run(inputs: list[Path], tmp: Path, lab: Path | None = None, out: str = "out"):
    return reproduce(inputs, lab, {}, tmp / out, capture_live=False)


def planned(result) -> object:
    """The launch plan of the written deployment (what `launch --dry-run` shows)."""
    return build_plan(load_deployment(Path(result.out_dir) / "deployment.yaml"))


def ranks_per_node(plan) -> dict[str, int]:
    """GPU ranks each node runs: Ray places one per GB10 node (a ray start on each), native
    multi-node one `vllm serve --node-rank` per node."""
    count: dict[str, int] = {}
    for stage in plan.stages:
        for node, proc in stage.processes:
            if proc.name in ("ray-head", "ray-worker") or (
                    plan.backend == "mp" and proc.name == "server"):
                count[node] = count.get(node, 0) + 1
    return count


def cli(*args: str) -> subprocess.CompletedProcess:
    return subprocess.run([sys.executable, "-m", "sparktriage", *args], capture_output=True,
                          text=True, timeout=120)
