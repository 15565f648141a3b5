"""The sweep engine on the simulator as `vllm serve` (engine.vllm: [python, -m,
sparktriage.sim.vllm]), through the real launch path: known per-depth rates, per-position
acceptance and launch-to-launch spread give the right decision and acceptance within 5% of the
scripted values; a depth scripted to change greedy output fails the gate and is never
recommended although fastest; a launch that crashes mid-protocol is retried and the sweep goes
on; kill -9 of the sweep, then `--resume`, finishes without repeating a finished launch."""

from __future__ import annotations

import json
import os
import signal
import subprocess
import sys
import time
from pathlib import Path

import pytest

from sparktriage.sweep.document import SweepJson
from sparktriage.sweep.running.engine import plan_sweep, run_sweep
from sparktriage.sim.thread import toy_server
from sparktriage.testbed.server import free_port

pytestmark = [pytest.mark.slow]
SIM = [sys.executable, "-m", "sparktriage.sim.vllm"]
ACCEPT = (0.9, 0.7, 0.5, 0.3)


def _deployment(tmp: Path, scenario: dict) -> Path:
    (tmp / "scenario.json").write_text(json.dumps(scenario))
    doc = {"schema_version": 1, "name": "sim", "lab": {"nodes": [{"name": "local", "host": "127.0.0.1"}]},
           "model": {"path": "/models/tiny", "name": "tiny"}, "engine": {"vllm": SIM},
           "serve": {"host": "127.0.0.1", "port": free_port()},
           "env": {"SPARKTRIAGE_SIM": str(tmp / "scenario.json")},
           "timeouts": {"startup_s": 60, "teardown_grace_s": 3},
           "collect": {"interval_s": 0.5, "stacks_interval_s": None},
           "speculative": {"method": "ngram", "num_speculative_tokens": 2,
                           "extra": {"prompt_lookup_max": 4}}}
    path = tmp / "deploy.yaml"
    path.write_text(json.dumps(doc))
    return path


def _scenario(rates: dict[int, float], **faults) -> dict:
    return {"seed": 11, "startup_s": {}, "stats_interval_s": 1.0,
            "decode": {"ttft_s": 0.005, "rate_tok_s": rates[0], "rates": rates,
                       "acceptance": list(ACCEPT), "spread_cv": 0.03},
            "faults": faults}


@pytest.fixture(scope="module")
def decided(tmp_path_factory):
    tmp = tmp_path_factory.mktemp("sim-sweep")
    deploy = _deployment(tmp, _scenario({0: 300.0, 2: 450.0, 4: 360.0}))
    plan = plan_sweep(deploy, depths=(0, 2, 4), max_launches=12, requests=6, max_tokens=200)
    return run_sweep(plan, tmp / "run"), tmp


def test_known_rates_give_the_right_decision_with_intervals(decided):
    result, _ = decided
    doc = result.document
    SweepJson.model_validate(doc)
    assert doc["method"] == "ngram" and doc["decision"]["state"] == "best"
    assert doc["decision"]["depth"] == 2 and doc["decision"]["candidates"] == [2]
    assert result.stop_reason == "settled" and doc["launches_used"] < 12
    by = {d["depth"]: d for d in doc["depths"]}
    for depth, rate in ((0, 300.0), (2, 450.0), (4, 360.0)):
        if by[depth]["n"] >= 2:  # the interval over launches holds the scripted mean rate
            assert by[depth]["ci95_low"] < rate * 1.0 < by[depth]["ci95_high"] or \
                abs(by[depth]["mean_tok_s"] / rate - 1) < 0.06
        assert by[depth]["gate"]["state"] == "pass"
    # launches are spread by the scripted 3%: no two launch means are equal
    means = [l["delivered_tok_s"] for l in doc["launches"]]
    assert len(set(means)) == len(means)


def test_acceptance_within_5_percent_of_the_scripted_values(decided):
    """The mean acceptance length within 5%; each position's rate within 5% or, where the
    depth's drafts are too few for that, within 3 binomial standard errors of its distinct
    drafts. Every request of a launch replays the launch's drawn chunk pattern from its start
    (a greedy prompt gives the same steps every time), so one launch draws only one request's
    drafts: its 6 measured requests and 1 warm-up count them 7 times over."""
    result, tmp = decided
    by = {d["depth"]: d for d in result.document["depths"]}
    records = result.document["launches"]  # derived from the launch folders (sweep.evidence.launch)
    for depth in (2, 4):
        scripted = ACCEPT[:depth]
        entry = by[depth]
        assert entry["acceptance_source"] == "metrics"
        assert entry["acceptance_length"] == pytest.approx(1 + sum(scripted), rel=0.05)
        drafts = sum(r["acceptance"]["drafts"] for r in records
                     if r["depth"] == depth and r["status"] == "ok" and r.get("acceptance"))
        assert drafts >= 200
        for got, want in zip(entry["per_position"], scripted):
            sd = (want * (1 - want) / (drafts / 7)) ** 0.5
            assert abs(got - want) <= max(0.05 * want, 3 * sd), (depth, got, want, drafts)
    assert by[0]["acceptance_length"] is None


def test_a_depth_that_changes_greedy_output_fails_the_gate_and_is_never_recommended(tmp_path):
    deploy = _deployment(tmp_path, _scenario({0: 300.0, 2: 330.0, 4: 600.0},
                                             greedy_change={"depth": 4, "at": 5}))
    plan = plan_sweep(deploy, depths=(0, 2, 4), max_launches=7, requests=3, max_tokens=60)
    doc = run_sweep(plan, tmp_path / "run").document
    gate = {d["depth"]: d["gate"] for d in doc["depths"]}
    assert gate[0]["state"] == "pass" and gate[2]["state"] == "pass"
    assert gate[4]["state"] == "fail" and gate[4]["prompts"][0]["position"] == 5
    assert "differs at token 5" in gate[4]["reason"]
    fastest = max(doc["depths"], key=lambda d: d["mean_tok_s"] or 0)
    assert fastest["depth"] == 4  # it is the fastest ...
    assert doc["decision"]["depth"] != 4 and 4 not in doc["decision"]["candidates"]  # ... and never chosen
    assert doc["decision"]["excluded"]["4"].startswith("gate failed")
    assert [l["depth"] for l in doc["launches"]].count(4) == 1  # no launch after the failed gate


def test_a_launch_that_crashes_mid_protocol_is_retried_and_the_sweep_goes_on(tmp_path):
    rates = {0: 300.0, 2: 450.0}
    deploy = _deployment(tmp_path, _scenario(rates))
    scenario = tmp_path / "scenario.json"

    def observe(event: str, details: dict) -> None:  # the second launch crashes after 2 requests
        if event == "sweep-launch":
            faults = {"crash_after_requests": 2} if details["label"] == "L002" else {}
            scenario.write_text(json.dumps(_scenario(rates, **faults)))

    plan = plan_sweep(deploy, depths=(0, 2), max_launches=5, requests=4, max_tokens=50)
    doc = run_sweep(plan, tmp_path / "run", observe).document
    first = doc["launches"][1]
    assert (first["label"], first["depth"], first["status"]) == ("L002", 2, "failed")
    assert "crash mid-protocol" in first["reason"] or "launch" in first["reason"]
    retry = doc["launches"][2]
    assert (retry["depth"], retry["status"], retry["why"]) == (2, "ok", "retry of a failed launch")
    assert doc["launches_used"] == len(doc["launches"]) >= 3
    by = {d["depth"]: d for d in doc["depths"]}
    assert by[2]["failures"] == 1 and by[2]["status"] == "measured"


def test_kill_9_then_resume_finishes_without_repeating_a_finished_launch(tmp_path):
    deploy = _deployment(tmp_path, {**_scenario({0: 300.0, 2: 330.0}),
                                    "startup_s": {"weight_read": 1.5}})
    run = tmp_path / "run"
    argv = [sys.executable, "-m", "sparktriage", "sweep", str(deploy), "--depths", "0,2",
            "--max-launches", "4", "--requests", "3", "--max-tokens", "40", "--out", str(run)]
    proc = subprocess.Popen(argv, stdout=subprocess.DEVNULL, stderr=subprocess.DEVNULL)
    state = run / "sweep-state.json"
    deadline = time.time() + 120
    while time.time() < deadline:  # kill it while its third launch runs
        if state.exists() and len(json.loads(state.read_text())["launches"]) >= 2 and \
                (run / "launches" / "L003").exists():
            break
        time.sleep(0.2)
    else:
        proc.kill()
        pytest.fail("the sweep did not reach its third launch")
    os.kill(proc.pid, signal.SIGKILL)
    proc.wait()
    finished = json.loads(state.read_text())["launches"]
    stamps = {r["label"]: (run / "launches" / r["label"] / "bench.json").stat().st_mtime_ns
              for r in finished}
    time.sleep(2)  # the node agent tears the killed launch's server down when its link closes
    done = subprocess.run([sys.executable, "-m", "sparktriage", "sweep", "--resume", str(run),
                           "--json", "-"], capture_output=True, text=True, timeout=300)
    assert done.returncode == 0, done.stderr[-2000:]
    doc = json.loads(done.stdout)
    labels = [l["label"] for l in doc["launches"]]
    assert labels[:len(finished)] == [r["label"] for r in finished]  # kept, in order
    interrupted = [l for l in doc["launches"] if l["interrupted"]]
    assert [l["label"] for l in interrupted] == ["L003"]
    assert doc["launches_used"] == 4 and len(set(labels)) == len(labels)
    for label, stamp in stamps.items():  # finished launches were not run again
        assert (run / "launches" / label / "bench.json").stat().st_mtime_ns == stamp
    assert "resuming: 2 finished launch(es) kept, interrupted L003 not reused" in done.stderr


def test_a_probe_baseline_joins_the_gate_and_a_failing_probe_keeps_the_fastest_depth_out(tmp_path):
    """`--baseline`: the baseline is saved by `sparktriage probe --save-baseline` on a healthy
    server (the toy language model); at depth 4 the simulated server's answers turn fluent but
    wrong (toy `fluent_wrong`, scripted for that depth's launches only), its greedy tokens and
    rates untouched; the probe's differential verdict fails depth 4's gate (its greedy tokens
    equal depth 0's), and depth 4, the fastest, is never recommended."""
    fp = tmp_path / "fp.json"
    with toy_server() as good:
        saved = subprocess.run([sys.executable, "-m", "sparktriage", "probe", "--endpoint", good.url,
                                "--save-baseline", str(fp), "--out", str(tmp_path / "probe")],
                               capture_output=True, text=True, timeout=120)
    assert saved.returncode == 0 and fp.is_file(), saved.stderr[-2000:]
    rates = {0: 300.0, 4: 600.0}
    deploy = _deployment(tmp_path, {**_scenario(rates), "server": {"toy": {}}})
    scenario = tmp_path / "scenario.json"

    def observe(event: str, details: dict) -> None:  # depth 4's launches serve a wrong model
        if event == "sweep-launch":
            toy = {"fluent_wrong": True} if details["depth"] == 4 else {}
            scenario.write_text(json.dumps({**_scenario(rates), "server": {"toy": toy}}))

    plan = plan_sweep(deploy, depths=(0, 4), max_launches=3, requests=3, max_tokens=60,
                      baseline=fp)
    doc = run_sweep(plan, tmp_path / "run", observe).document
    SweepJson.model_validate(doc)
    gate = {d["depth"]: d["gate"] for d in doc["depths"]}
    assert gate[0]["state"] == "pass" and gate[0]["probe"]["differential"] == "ok", gate[0]
    assert gate[4]["state"] == "fail"
    assert [p["state"] for p in gate[4]["prompts"]] == ["pass"] * len(gate[4]["prompts"]) != []  # tokens equal
    assert gate[4]["probe"] == {"verdict": "garbage", "differential": "garbage"}
    assert gate[4]["reason"].startswith("probe against the baseline: differential garbage")
    probed = json.loads((tmp_path / "run" / "launches" / doc["launches"][1]["label"] / "probe.json").read_text())
    assert probed["baseline"]["path"] == str(fp)
    by = {d["depth"]: d for d in doc["depths"]}
    assert by[4]["mean_tok_s"] > 1.5 * by[0]["mean_tok_s"]  # the fastest ...
    assert doc["decision"]["depth"] != 4 and 4 not in doc["decision"]["candidates"]  # ... never chosen
    assert doc["decision"]["excluded"]["4"].startswith("gate failed")
    assert [l["depth"] for l in doc["launches"]].count(4) == 1  # no launch after the failed gate


def test_no_two_stream_phase_with_pairs_0_or_one_sequence_at_a_time(tmp_path):
    """`--pairs 0` runs no two-stream phase; a deployment that serves one sequence at a time
    (max_num_seqs 1) runs none either and says why in every launch's pair ratio."""
    scenario = _scenario({0: 300.0, 2: 450.0})
    off = plan_sweep(_deployment(tmp_path, scenario), depths=(0, 2), max_launches=2, requests=2,
                     max_tokens=40, pairs=0)
    assert off.pairs == 0
    doc = run_sweep(off, tmp_path / "off").document
    assert [l["pair_ratio"] for l in doc["launches"]] == [None, None]
    assert not list((tmp_path / "off").glob("launches/*/pairs.jsonl"))
    one = tmp_path / "one"
    one.mkdir()
    path = _deployment(one, scenario)
    deployment = json.loads(path.read_text())
    deployment["serve"]["max_num_seqs"] = 1
    path.write_text(json.dumps(deployment))
    doc = run_sweep(plan_sweep(path, depths=(0, 2), max_launches=2, requests=2, max_tokens=40),
                    one / "run").document
    for launch in doc["launches"]:
        assert launch["status"] == "ok" and not launch["pair_ratio"]["measured"]
        assert launch["pair_ratio"]["reason"] == ("the two-stream phase did not run: the deployment "
                                                  "serves one sequence at a time (max_num_seqs 1)")
