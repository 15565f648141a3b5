"""The report's sweep section with the depth model (docs/report.md): the predicted curve beside
the launches' means, the model's terms in one sentence, a rejection and its reason, and an
unchecked gate said on page one; built from a synthetic run whose sweep.json carries a `model`
made by the sweep's own code (sweep.model.depth, sweep.model.entry)."""

from __future__ import annotations

import json
import math
import shutil
import subprocess

import pytest

from sparktriage.sweep.evidence.counts import Counts
from sparktriage.sweep.model.depth import ModelLaunch, build
from sparktriage.sweep.model.entry import model_entry
from sparktriage.sweep.model.stepfit import StepShape
from sparktriage.sweep.evidence.steptimes import StepRatio

KIMI = StepShape("expert-union", 384, 8, 0.0, "kimi-k2")


def _counts(depth: int) -> Counts:
    rates = (0.8, 0.6, 0.3, 0.1)[:depth]
    per = tuple(4000.0 * r for r in rates)
    return Counts(depth, 4000.0, 4000.0 * depth, sum(per), per, 4000.0 + sum(per))


def _ngram_counts(depth: int, q: float = 0.7) -> Counts:
    """Counts of a launch whose steps draft at a share q (4000 drafts over 4000 / q steps)."""
    found = _counts(depth)
    return Counts(depth, found.drafts, found.draft_tokens, found.accepted, found.per_position,
                  4000.0 / q + found.accepted)


def _model_doc(state: str, inside: bool = False, pairs: bool = False) -> dict:
    slope, launches, q = 0.3, [], 0.7 if inside else 1.0
    for i, d in enumerate([0, 2, 1, 0, 2, 1]):
        tps = 1 + q * sum((0.8, 0.6)[:d])
        verify = 1 + slope * KIMI.g(d)
        rate = 30.0 * tps / ((1 - q) + q * verify) * (1 + 0.01 * (-1) ** i)
        counts = (_ngram_counts(d) if inside else _counts(d)) if d else None
        ratio = (StepRatio(d, math.log(verify) + 0.005 * (-1) ** i, 0.02)
                 if inside and d else None)
        pair = (StepRatio(d, math.log((1 + slope * KIMI.g(d, 2)) / verify) + 0.005 * (-1) ** i, 0.02)
                if pairs else None)
        launches.append(ModelLaunch(f"L{i + 1:03d}", d, rate, counts, ratio, pair))
    model = build(launches, (0, 1, 2), KIMI)
    assert model.state == "used"
    decision = {"depth": 1, "rule": "model"}
    doc = model_entry(model, decision, True)
    if state == "rejected":
        doc.update(state="rejected", decided=False,
                   reason="the step time jumps: a free factor on jump from depth 2 (×1.40)",
                   summary="The depth model was rejected (the step time jumps); the black-box rule "
                           "decided over every launch made.",
                   rejection="The step-cost curve did not fit: launches measured steps at depth 2 "
                             "1.41x a plain step where the model allowed at most 1.30x.")
    return doc


@pytest.fixture
def model_run(report_run, tmp_path):
    run = tmp_path / "run"
    shutil.copytree(report_run, run)
    return run


def _with_model(run, state: str, gate_note: str | None = None, inside: bool = False,
                pairs: bool = False) -> None:
    path = run / "sweep.json"
    doc = json.loads(path.read_text())
    doc["model"] = _model_doc(state, inside, pairs)
    doc["decision"]["rule"] = "model" if state == "used" else "black-box"
    if gate_note:
        doc["decision"]["gate_note"] = gate_note
    path.write_text(json.dumps(doc))


def test_the_report_shows_the_predicted_curve_beside_the_launches_and_the_models_terms(model_run, tmp_path,
                                                                                     report_build):
    _with_model(model_run, "used")
    out = tmp_path / "report"
    report_build(model_run, out, anonymize=False)
    md = (out / "report.md").read_text()
    decided = json.loads((model_run / "sweep.json").read_text())["decision"]["depth"]
    assert f"Depth model: used (it made the decision: depth {decided})" in md
    assert "| depth | predicted tok/s | 95% interval | launches' mean tok/s |" in md
    model = json.loads((model_run / "sweep.json").read_text())["model"]
    from sparktriage.report.readable import fitted
    for p in model["predicted"]:  # every depth's prediction is in the table, digits fitted to its interval
        value, interval = fitted(p["tok_s"], p["ci95_low"], p["ci95_high"])
        assert f"| {p['depth']} | {value} | {interval} |" in md
        assert abs(float(value) - p["tok_s"]) <= 0.05 + 1e-9 * p["tok_s"]
    assert model["summary"] in md and "expert weights of a plain step" in model["summary"]
    pdf = subprocess.run(["pdftotext", "-layout", str(out / "report.pdf"), "-"], capture_output=True,
                         text=True, check=True).stdout
    assert "Depth model: used" in " ".join(pdf.split())


def test_a_rejected_model_is_said_with_its_reason_and_an_unchecked_gate_reaches_page_one(model_run, tmp_path,
                                                                                        report_build):
    note = ("depth 1 is recommended with its greedy output unchecked against depth 0 (no launch at "
            "this depth measured its greedy outputs); depth(s) 2 passed the gate")
    _with_model(model_run, "rejected", gate_note=note)
    out = tmp_path / "report"
    report_build(model_run, out, anonymize=False)
    md = (out / "report.md").read_text()
    assert "Depth model: rejected (the black-box rule decided, over every launch)" in md
    assert "the step time jumps: a free factor on jump from depth 2" in md
    page_one = json.loads((out / "report.json").read_text())["page_one"]
    titles = [f["title"] for f in page_one["findings"]]
    assert any("recommended with its greedy output unchecked" in t for t in titles)
    assert note in md
    row = next(r for r in page_one["results"] if r["metric"] == "Depth model")  # issue 38
    assert row["notes"].startswith("The step-cost curve did not fit: launches measured steps at "
                                   "depth 2 1.41x a plain step where the model allowed at most")


def test_a_step_cost_measured_inside_the_launches_is_said_with_its_terms(model_run, tmp_path,
                                                                          report_build):
    _with_model(model_run, "used", inside=True)
    model = json.loads((model_run / "sweep.json").read_text())["model"]
    assert model["parameters"]["slope_from"].startswith("step times inside launches")
    assert model["parameters"]["slope"] == pytest.approx(0.3, abs=0.02)
    assert len(model["step_ratios"]["ratios"]) == 4
    assert "(measured inside the launches)" in model["summary"]
    out = tmp_path / "report"
    report_build(model_run, out, anonymize=False)
    md = (out / "report.md").read_text()
    assert "The step cost was measured inside 4 launch(es)" in md
    assert model["summary"] in md


def test_a_step_cost_from_two_streams_is_said_so(model_run, tmp_path, report_build):
    _with_model(model_run, "used", pairs=True)
    model = json.loads((model_run / "sweep.json").read_text())["model"]
    assert {r["kind"] for r in model["step_ratios"]["ratios"]} == {"pair"}
    assert len(model["step_ratios"]["ratios"]) == 6  # depth 0's launches measure one too
    assert model["parameters"]["slope"] == pytest.approx(0.3, abs=0.03)
    out = tmp_path / "report"
    report_build(model_run, out, anonymize=False)
    md = " ".join((out / "report.md").read_text().split())
    assert ("The step cost was measured inside 6 launch(es): the time of a step serving two "
            "requests at once against a step serving one") in md
    assert "plain steps of the same launch" not in md
