"""The step cost at a depth is one number wherever it is printed: the sweep's console lines
(sweep.render) and the report's depth-model table take it from sweep.model.entry.verify_cost, so
a prediction whose verify step costs more than its mean step (no-match steps are plain) is not
shown as 1.32x in one place and 1.45x in another."""

from __future__ import annotations

from sparktriage.documents.sweep import read
from sparktriage.report.sweep import model_part, model_rows
from sparktriage.sweep.render import model_lines

PREDICTION = {"depth": 2, "tok_s": 40.0, "ci95_low": 38.0, "ci95_high": 42.0,
              "acceptance_length": 2.1, "acceptance_ci95": [2.0, 2.2], "tokens_per_step": 2.1,
              "step_ratio": 1.32, "measured_launches": 2, "measured_mean_tok_s": 39.5,
              "verify_step_ratio": 1.45}
MODEL = {"state": "used", "reason": "fits", "inputs": {}, "parameters": None,
         "predicted": [PREDICTION], "fit_test": None, "checks": [], "decided": True,
         "summary": "At depth 2 a verify step takes 1.45x the time of a plain step."}


def test_the_console_and_the_report_state_the_verify_step_cost():
    record = read({"schema_version": 1, "kind": "sweep", "method": "ngram", "workload": "w",
                   "depths": [{"depth": 2, "launches": []}], "model": MODEL,
                   "decision": {"depth": 2, "reason": "r"}})
    console = model_lines(MODEL)
    assert "at 1.45x a plain step" in console[1] and "1.32" not in console[1]
    rows = model_rows({"model": model_part(record.model, {})})
    assert rows[0][-1] == "1.45×"


def test_without_a_verify_cost_the_mean_step_cost_is_stated_everywhere():
    plain = {k: v for k, v in PREDICTION.items() if k != "verify_step_ratio"}
    model = {**MODEL, "predicted": [plain]}
    record = read({"schema_version": 1, "kind": "sweep", "method": "ngram", "workload": "w",
                   "depths": [], "model": model, "decision": {"depth": 2, "reason": "r"}})
    assert "at 1.32x a plain step" in model_lines(model)[1]
    assert model_rows({"model": model_part(record.model, {})})[0][-1] == "1.32×"
