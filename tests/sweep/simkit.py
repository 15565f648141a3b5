"""A deployment that runs the simulator as `vllm serve` through the launch path (sweep tests)."""

from __future__ import annotations

import json
import sys
from pathlib import Path

from sparktriage.testbed.server import free_port

SIM = [sys.executable, "-m", "sparktriage.sim.vllm"]


def sim_deployment(tmp: Path, scenario: dict, **extra) -> Path:
    """Write the scenario and a one-node deployment serving it; `extra`: more deployment keys."""
    (tmp / "scenario.json").write_text(json.dumps(scenario))
    doc = {"schema_version": 1, "name": "sim", "lab": {"nodes": [{"name": "local", "host": "127.0.0.1"}]},
           "model": {"path": "/models/tiny", "name": "tiny"}, "engine": {"vllm": SIM},
           "serve": {"host": "127.0.0.1", "port": free_port()},
           "env": {"SPARKTRIAGE_SIM": str(tmp / "scenario.json")},
           "timeouts": {"startup_s": 60, "teardown_grace_s": 3},
           "collect": {"interval_s": 0.5, "stacks_interval_s": None}, **extra}
    path = tmp / "deploy.yaml"
    path.write_text(json.dumps(doc))
    return path
