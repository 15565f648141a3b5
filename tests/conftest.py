"""Shared fixtures: the real vLLM CPU test bed (one server per configuration per session)."""

from __future__ import annotations

import json
from pathlib import Path

import pytest

from sparktriage.testbed.paths import locate
from sparktriage.testbed.server import LocalServer, ServeSpec

NGRAM_SPEC = json.dumps({"method": "ngram", "num_speculative_tokens": 3, "prompt_lookup_max": 4,
                         "prompt_lookup_min": 2})


@pytest.fixture(scope="session")
def testbed():
    """The installed test bed; fails (not skips) when it is missing: run testbed/setup.sh."""
    try:
        return locate().check()
    except Exception as exc:  # noqa: BLE001 - surfaced as a test failure with the reason
        pytest.fail(f"vLLM test bed unavailable: {exc}")


def _serve(testbed, tmp_path_factory, name: str, spec: ServeSpec):
    folder = tmp_path_factory.mktemp(name)
    server = LocalServer(testbed, spec, folder / "server.log")
    server.start()
    try:
        server.wait_ready(timeout_s=420)
    except Exception:
        server.stop()
        raise
    return server


@pytest.fixture(scope="session")
def vllm_server(testbed, tmp_path_factory):
    """A real `vllm serve` of the tiny model, eager mode, shared by the whole session."""
    server = _serve(testbed, tmp_path_factory, "vllm-plain", ServeSpec(model=testbed.model()))
    yield server
    server.stop()


@pytest.fixture(scope="session")
def vllm_ngram_server(testbed, tmp_path_factory):
    """A real `vllm serve` with ngram speculative decoding (3 draft tokens)."""
    spec = ServeSpec(model=testbed.model(), speculative_config=NGRAM_SPEC)
    server = _serve(testbed, tmp_path_factory, "vllm-ngram", spec)
    yield server
    server.stop()


@pytest.fixture
def run_dir(tmp_path) -> Path:
    return tmp_path / "run"


# --- the simulated OpenAI-compatible server (src/sparktriage/sim) --------------------------

SIM_SCENARIOS = {
    # The default model: fast, every source supported. Tests shape single requests with the
    # body field `"sim": {...}` (scenario overrides), so one process serves the whole session.
    "sim": {"ttft_s": 0.005, "gap_s": 0.0005},
    "strict": {"ttft_s": 0.005, "gap_s": 0.0005, "strict_fields": True},
}


@pytest.fixture(scope="session")
def sim(tmp_path_factory):
    """A simulator in its own process, shared by the session (models: sim, strict)."""
    from sparktriage.sim.process import SimProcess

    process = SimProcess({"scenarios": SIM_SCENARIOS}, tmp_path_factory.mktemp("sim"))
    process.start()
    yield process
    process.stop()


@pytest.fixture
def start_sim(tmp_path):
    """Start extra simulators with their own configuration; all are stopped after the test."""
    from sparktriage.sim.process import SimProcess

    started = []

    def start(config: dict, name: str = "sim"):
        process = SimProcess(config, tmp_path / f"{name}-{len(started)}")
        started.append(process)
        return process.start()

    yield start
    for process in started:
        process.stop()
