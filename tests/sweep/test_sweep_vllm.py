"""`sparktriage sweep` end to end on the real CPU vLLM: ngram over depths 0, 2 and 4, five
launches of the bundled tiny MoE through the launch path (one folder each), acceptance read from
the /metrics counter deltas of each protocol window, the gate passing at every depth, the decision
printed with its intervals, the roofline percentage from user profiles; then `--resume` of a copy
whose last launch lost its record keeps the finished launches and repeats none.

All launches are shared by this module (one sweep); run it under the vLLM lock."""

from __future__ import annotations

import json
import shutil
import subprocess
import sys

import pytest
import yaml

from sparktriage.session.demo import deployment
from sparktriage.sweep.decide import workload_rate
from sparktriage.sweep.document import SweepJson
from sparktriage.testbed.garbage.variants import trained_model
from sparktriage.testbed.server import free_port

pytestmark = [pytest.mark.vllm, pytest.mark.slow]
TOKENS = 32


@pytest.fixture(scope="module")
def sweep_run(testbed, tmp_path_factory):
    root = tmp_path_factory.mktemp("sweep")
    (root / "tmp").mkdir()  # the servers' temporary folder: nothing of theirs left in /tmp
    spec = deployment(testbed, trained_model(), free_port(), root / "scratch", 2, 600,
                      temp=root / "tmp")
    spec["roofline"] = {"hardware": "./cpu.yaml", "model": "./tiny.yaml"}
    (root / "cpu.yaml").write_text("name: test-cpu\nmemory_bandwidth_gbs: 20\n")
    (root / "tiny.yaml").write_text("name: tiny-moe\nactive_params_b: 0.004\nlayers: 2\n"
                                    "bits_per_weight: 32\n")
    (root / "deploy.yaml").write_text(yaml.safe_dump(spec, sort_keys=False))
    run = root / "run"
    result = subprocess.run([sys.executable, "-m", "sparktriage", "sweep", str(root / "deploy.yaml"),
                             "--depths", "0,2,4", "--max-launches", "5", "--requests", "2",
                             "--max-tokens", str(TOKENS), "--out", str(run), "--json", "-"],
                            capture_output=True, text=True, timeout=1500)
    return root, run, result


def test_sweep_runs_five_launches_and_prints_the_decision_with_intervals(sweep_run):
    _, run, result = sweep_run
    assert result.returncode == 0, result.stderr[-3000:]
    doc = json.loads(result.stdout)
    SweepJson.model_validate(doc)  # the JSON contract
    assert doc == json.loads((run / "sweep.json").read_text())
    assert doc["method"] == "ngram" and doc["depths_requested"] == [0, 2, 4]
    assert doc["launches_used"] == 5 and all(l["status"] == "ok" for l in doc["launches"])
    assert [l["depth"] for l in doc["launches"][:3]] == [0, 2, 4]  # the minimum, depth 0 first
    assert sorted(p.name for p in (run / "launches").iterdir()) == ["L001", "L002", "L003", "L004", "L005"]
    for launch in doc["launches"]:  # each launch's rate is its bench document's
        bench = json.loads((run / "launches" / launch["label"] / "bench.json").read_text())
        assert launch["delivered_tok_s"] == workload_rate(bench, "code")
        assert (run / "launches" / launch["label"] / "server.log").is_file()
    decision = doc["decision"]
    assert decision["state"] in ("best", "tied", "insufficient")
    assert decision["depth"] in decision["candidates"]
    best = max((d for d in doc["depths"] if d["mean_tok_s"] is not None), key=lambda d: d["mean_tok_s"])
    if decision["state"] == "insufficient":
        assert decision["depth"] == best["depth"]
    text = result.stderr  # --json -: the human lines go to stderr
    assert f"decision: {decision['state']}, depth {decision['depth']}" in text
    with_ci = [d for d in doc["depths"] if d["n"] >= 2]
    assert with_ci, "two of the five launches share a depth"
    for d in with_ci:
        assert d["ci95_low"] < d["mean_tok_s"] < d["ci95_high"]
        assert f"(95% CI over launches {d['ci95_low']:.2f}-{d['ci95_high']:.2f})" in text


def test_acceptance_comes_from_metrics_and_matches_the_counters(sweep_run):
    _, run, _ = sweep_run
    doc = json.loads((run / "sweep.json").read_text())
    for entry in doc["depths"]:
        if entry["depth"] == 0:
            assert entry["acceptance_length"] is None
            continue
        assert entry["acceptance_source"] == "metrics"
        assert 1.0 < entry["acceptance_length"] <= entry["depth"] + 1
        assert len(entry["per_position"]) == entry["depth"]
        assert all(0.0 <= p <= 1.0 for p in entry["per_position"])
        # the per-position rates sum to accepted / drafts = acceptance length - 1
        assert sum(entry["per_position"]) == pytest.approx(entry["acceptance_length"] - 1, abs=0.01)
    for launch in doc["launches"]:
        if launch["depth"]:
            acc = launch["acceptance"]
            assert acc["source"] == "metrics"
            assert acc["mean_acceptance_length"] == pytest.approx(1 + acc["accepted_tokens"] / acc["drafts"], abs=1e-3)
            assert acc["check"]["state"] == "consistent", acc["check"]


def test_gate_passes_at_every_depth_on_the_same_prompts(sweep_run):
    _, run, _ = sweep_run
    doc = json.loads((run / "sweep.json").read_text())
    reference = json.loads((run / "launches" / "L001" / "gate.json").read_text())["outputs"]
    assert len(reference[0]["tokens"]) == TOKENS and reference[0]["top"]  # ignore_eos, top-k
    for entry in doc["depths"]:
        assert entry["gate"]["state"] == "pass", entry["gate"]
        if entry["depth"]:
            outputs = json.loads((run / "launches" / entry["gate"]["launch"] / "gate.json").read_text())
            assert [o["prompt"] for o in outputs["outputs"]] == [o["prompt"] for o in reference]


def test_roofline_percentage_of_the_user_profiles(sweep_run):
    _, run, result = sweep_run
    doc = json.loads((run / "sweep.json").read_text())
    ceiling = 20e9 / (0.004e9 * 4)  # one node: bandwidth / bytes per token
    assert doc["roofline"]["ceiling_tok_s"] == pytest.approx(ceiling)
    for entry in doc["depths"]:
        length = entry["acceptance_length"] or 1.0
        assert entry["roofline_pct"] == pytest.approx(100 * entry["mean_tok_s"] / (ceiling * length))
    assert "% of its ceiling" in result.stderr


def test_resume_keeps_finished_launches_and_records_the_interrupted_one(sweep_run, tmp_path):
    _, run, _ = sweep_run
    copy = tmp_path / "copy"
    shutil.copytree(run, copy)
    state = json.loads((copy / "sweep-state.json").read_text())
    lost = state["launches"].pop()  # killed before its record was written
    (copy / "sweep-state.json").write_text(json.dumps(state))
    before = {p: p.stat().st_mtime_ns for p in (copy / "launches").rglob("bench.json")}
    result = subprocess.run([sys.executable, "-m", "sparktriage", "sweep", "--resume", str(copy),
                             "--json", "-"], capture_output=True, text=True, timeout=120)
    assert result.returncode == 0, result.stderr[-2000:]
    doc = json.loads(result.stdout)
    # the launch budget (5) is spent with the interrupted launch: nothing is relaunched
    assert doc["launches_used"] == 5 and doc["decision"]["stop_reason"] == "launch budget spent"
    assert doc["launches"][-1]["label"] == lost["label"] and doc["launches"][-1]["interrupted"] is True
    assert sorted(p.name for p in (copy / "launches").iterdir()) == ["L001", "L002", "L003", "L004", "L005"]
    assert {p: p.stat().st_mtime_ns for p in (copy / "launches").rglob("bench.json")} == before
    assert f"interrupted {lost['label']} not reused" in result.stderr
