"""`sparktriage sweep --rebuild DIR`: every decision of a finished sweep recomputed from its launch
folders (simulator as `vllm serve`, through the real launch path): the rebuilt sweep.json is the
same bytes; after a changed derivation it changes without a launch, and nothing measured is
touched; the assessment advanced launch by launch equals one built from scratch; bad input is
one line and exit 2."""

from __future__ import annotations

import hashlib
import json
import os
import subprocess
import sys
from pathlib import Path

import pytest

from sparktriage.sweep.evidence import launch as evidence_module
from sparktriage.sweep.assess import assess
from sparktriage.sweep.running.engine import plan_sweep, run_sweep
from sparktriage.sweep.evidence.launch import derive_all
from sparktriage.sweep.policy.situation import step_shape
from sparktriage.sweep.running.rebuild import reassess, rebuild
from sparktriage.sweep.running.state import open_state
from simkit import sim_deployment

pytestmark = [pytest.mark.slow]


def _scenario() -> dict:
    return {"seed": 5, "startup_s": {}, "stats_interval_s": 1.0,
            "decode": {"ttft_s": 0.005, "rate_tok_s": 300.0, "rates": {0: 300.0, 2: 420.0, 4: 330.0},
                       "acceptance": [0.9, 0.7, 0.5, 0.3], "spread_cv": 0.03}, "faults": {}}


@pytest.fixture(scope="module")
def finished(tmp_path_factory) -> Path:
    tmp = tmp_path_factory.mktemp("rebuild")
    deploy = sim_deployment(tmp, _scenario(), speculative={
        "method": "ngram", "num_speculative_tokens": 2, "extra": {"prompt_lookup_max": 4}})
    plan = plan_sweep(deploy, depths=(0, 2, 4), max_launches=6, requests=4, max_tokens=80)
    run_sweep(plan, tmp / "run")
    return tmp / "run"


def _measured(run: Path) -> dict[str, str]:
    """Every file of the run but sweep.json, by content hash."""
    return {str(p.relative_to(run)): hashlib.sha256(p.read_bytes()).hexdigest()
            for p in sorted(run.rglob("*")) if p.is_file() and p.name != "sweep.json"}


def _cli(*args: str) -> subprocess.CompletedProcess:
    return subprocess.run([sys.executable, "-m", "sparktriage", *args], capture_output=True,
                          text=True, timeout=120, env=os.environ.copy())


def test_rebuild_reproduces_the_finished_sweeps_sweep_json_exactly(finished):
    before = (finished / "sweep.json").read_bytes()
    files = _measured(finished)
    done = _cli("sweep", "--rebuild", str(finished))
    assert done.returncode in (0, 1), done.stderr  # 1: a gate failed or a depth failed twice
    assert "Traceback" not in done.stderr and "unchanged" in done.stderr
    assert (finished / "sweep.json").read_bytes() == before
    assert _measured(finished) == files  # nothing measured is rewritten
    doc = json.loads(before)
    assert doc["decision"]["stop_reason"] in ("settled", "launch budget spent")
    assert doc["decision"]["depth"] == 2


def test_advancing_the_model_launch_by_launch_equals_building_it_from_scratch(finished):
    stepped, deployment = reassess(finished)
    state = open_state(finished, None)
    whole = assess(state.plan, derive_all(finished, state.launches, state.plan), None,
                   run_path=finished, shape=step_shape(deployment))
    assert len(stepped.evidence) == len(state.launches) >= 3
    assert stepped.model is not None and whole.model is not None
    assert stepped.model.as_dict() == whole.model.as_dict()
    assert stepped.decision.as_dict() == whole.decision.as_dict()
    assert whole.replayed and not stepped.replayed  # the last one was advanced, not replayed


def test_a_changed_derivation_updates_sweep_json_without_a_launch(finished, tmp_path, monkeypatch):
    import shutil
    run = tmp_path / "run"
    shutil.copytree(finished, run)
    before = json.loads((run / "sweep.json").read_text())
    files = _measured(run)
    original = evidence_module.rates

    def first_dropped(bench, name, metric):  # a derivation fixed: the first request was a warm-up
        return original(bench, name, metric)[1:]

    monkeypatch.setattr(evidence_module, "rates", first_dropped)
    done = rebuild(run)
    after = json.loads((run / "sweep.json").read_text())
    assert done.changed and after == done.document
    assert after["launches_used"] == before["launches_used"]  # no launch was made
    assert not list(run.glob("launches/L%03d" % (before["launches_used"] + 1)))
    assert _measured(run) == files
    for old, new in zip(before["launches"], after["launches"]):
        if old["status"] == "ok":
            assert new["requests"] == old["requests"] - 1
    old_means = {d["depth"]: d["mean_tok_s"] for d in before["depths"]}
    assert any(d["mean_tok_s"] != old_means[d["depth"]] for d in after["depths"] if d["n"])


def test_rebuild_refuses_bad_input_in_one_line(tmp_path, finished):
    done = _cli("sweep", "--rebuild", str(tmp_path))
    assert done.returncode == 2 and "Traceback" not in done.stderr
    assert "no sweep-state.json" in done.stderr and len(done.stderr.strip().splitlines()) == 1
    done = _cli("sweep", "--rebuild", str(finished), "--out", str(tmp_path / "x"))
    assert done.returncode == 2 and "Traceback" not in done.stderr
    assert "--rebuild" in done.stderr
    (tmp_path / "sweep-state.json").write_text("{not json")
    done = _cli("sweep", "--rebuild", str(tmp_path))
    assert done.returncode == 2 and "Traceback" not in done.stderr
