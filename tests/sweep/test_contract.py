"""The sweep document from a sweep's state (no server): the issue's JSON contract (SweepJson),
a depth whose gate fails is never recommended even when fastest, a depth that failed twice is
reported failed while the others are decided, per-position acceptance summed over launches."""

from __future__ import annotations

import json
from pathlib import Path

import pytest

from sparktriage.documents.sweep import read as read_sweep
from sparktriage.sweep.document import SweepJson, build_document
from sparktriage.sweep.plan import SweepPlan
from sparktriage.sweep.running.state import SweepState

CONTRACT = {
    "top": {"schema_version", "method", "depths_requested", "launches_used", "launches", "depths",
            "decision"},
    "launch": {"label", "depth", "status", "delivered_tok_s", "acceptance_length"},
    "depth": {"depth", "launches", "mean_tok_s", "ci95_low", "ci95_high", "acceptance_length",
              "gate", "roofline_pct"},
    "gate": {"state", "reason"},
    "decision": {"state", "depth", "candidates", "reason"},
}
TOKENS = ["def", " f", "(", "x", "):"]


def _plan(tmp_path: Path, depths=(0, 2, 4), max_launches=9) -> SweepPlan:
    return SweepPlan(deployment_path=str(tmp_path / "d.yaml"), depths_requested=depths,
                     depths=depths, method="ngram", max_launches=max_launches)


def _gate_file(run: Path, label: str, tokens: list[str]) -> None:
    folder = run / "launches" / label
    folder.mkdir(parents=True, exist_ok=True)
    (folder / "gate.json").write_text(json.dumps({"outputs": [
        {"prompt": "code", "tokens": tokens, "top": [{t: -0.1} for t in tokens], "error": None}]}))


def _record(label, depth, rates, status="ok", gate=False, acc=None, reason=None):
    return {"label": label, "depth": depth, "status": status, "reason": reason,
            "request_decode_tok_s": rates, "request_e2e_tok_s": [r * 0.9 for r in rates],
            "delivered_tok_s": sum(rates) / len(rates) if rates else None,
            "metadata": {"model": "m", "deployment_hash": "h"}, "gate_collected": gate,
            "acceptance": acc, "wall_s": 200.0}


def _acc(drafts, accepted, per_pos):
    return {"source": "metrics", "drafts": drafts, "draft_tokens": drafts * len(per_pos),
            "accepted_tokens": accepted, "mean_acceptance_length": 1 + accepted / drafts,
            "per_position": per_pos}


def test_document_has_exactly_the_contract_fields_and_validates(tmp_path):
    run = tmp_path / "run"
    for label, depth in (("L001", 0), ("L002", 2), ("L003", 4)):
        _gate_file(run, label, TOKENS)
    records = [
        _record("L001", 0, [26.0, 26.4, 25.8], gate=True),
        _record("L002", 2, [33.0, 33.4], gate=True, acc=_acc(100, 150, [0.9, 0.6])),
        _record("L003", 4, [24.0, 24.4], gate=True, acc=_acc(100, 170, [0.8, 0.5, 0.3, 0.1])),
        _record("L004", 2, [], status="failed", reason="launch failed-after-ready: crash"),
        _record("L005", 2, [34.0, 33.2], acc=_acc(50, 80, [0.9, 0.7])),
        _record("L006", 0, [27.0, 27.2]),
    ]
    state = SweepState(run, _plan(tmp_path), records)
    doc = build_document(state.plan, state, run, "launch budget spent")
    SweepJson.model_validate(doc)
    assert CONTRACT["top"] <= set(doc)
    for launch in doc["launches"]:
        assert CONTRACT["launch"] <= set(launch)
    for entry in doc["depths"]:
        assert CONTRACT["depth"] <= set(entry) and CONTRACT["gate"] <= set(entry["gate"])
        assert entry["gate"]["state"] == "pass"
    assert CONTRACT["decision"] <= set(doc["decision"])
    assert doc["launches_used"] == 6  # the failed launch counts
    two = doc["depths"][1]
    assert [l["label"] for l in two["launches"]] == ["L002", "L005"]  # ok launches only
    assert two["mean_tok_s"] == pytest.approx((33.2 + 33.6) / 2)
    # acceptance over the depth's launches: counts summed (150 + 80 accepted over 150 drafts)
    assert two["acceptance_length"] == pytest.approx(1 + 230 / 150, abs=1e-4)
    assert two["per_position"] == pytest.approx([0.9, (0.6 * 100 + 0.7 * 50) / 150], abs=1e-4)
    assert doc["depths"][0]["acceptance_length"] is None
    with pytest.raises(ValueError):
        SweepJson.model_validate({**doc, "decision": {**doc["decision"], "state": "maybe"}})


def test_a_depth_whose_gate_fails_is_never_recommended_even_when_fastest(tmp_path):
    run = tmp_path / "run"
    _gate_file(run, "L001", TOKENS)
    _gate_file(run, "L002", ["def", " f", "(", "garbage", "):"])
    _gate_file(run, "L003", TOKENS)
    records = [_record("L001", 0, [26.0, 26.2], gate=True),
               _record("L002", 2, [60.0, 61.0], gate=True),
               _record("L003", 4, [30.0, 30.2], gate=True),
               _record("L004", 0, [26.5, 26.1]), _record("L005", 4, [30.4, 30.0])]
    state = SweepState(run, _plan(tmp_path), records)
    doc = build_document(state.plan, state, run, "settled")
    gate = doc["depths"][1]["gate"]
    assert gate["state"] == "fail" and gate["prompts"][0]["position"] == 3
    assert "'garbage'" in gate["reason"]
    assert doc["decision"]["depth"] == 4 and 2 not in doc["decision"]["candidates"]
    assert doc["decision"]["excluded"]["2"].startswith("gate failed")


def test_a_depth_that_failed_twice_is_reported_failed_and_the_rest_decided(tmp_path):
    run = tmp_path / "run"
    _gate_file(run, "L001", TOKENS)
    records = [_record("L001", 0, [26.0, 26.2], gate=True),
               _record("L002", 2, [], status="failed", reason="launch failed: startup error"),
               _record("L003", 2, [], status="failed", reason="launch failed: startup error"),
               _record("L004", 4, [30.0, 30.2]), _record("L005", 0, [26.4])]
    state = SweepState(run, _plan(tmp_path), records)
    doc = build_document(state.plan, state, run, "settled")
    assert doc["depths"][1]["status"] == "failed" and doc["depths"][1]["failures"] == 2
    assert doc["decision"]["excluded"] == {"2": "failed twice"}
    assert set(doc["decision"]["candidates"]) <= {0, 4}


class _Inputs:
    """The readers the report's sweep section uses, over an in-memory run: the sweep record as
    the report reads it (documents.sweep.read)."""

    def __init__(self, sweep: dict) -> None:
        self.sweep = read_sweep(sweep)

    def launch_doc(self, label: str, name: str):
        return None

    def sweep_launch(self, label: str) -> str:
        return label


def test_report_section_shows_intervals_acceptance_gate_roofline_and_the_decision(tmp_path):
    from sparktriage.report.sweep import HEADERS, sweep_lines, sweep_rows, sweep_section
    run = tmp_path / "run"
    _gate_file(run, "L001", TOKENS)
    _gate_file(run, "L002", ["def", " f", "(", "garbage", "):"])
    records = [_record("L001", 0, [26.0, 26.2], gate=True),
               _record("L002", 2, [60.0, 61.0], gate=True, acc=_acc(100, 150, [0.9, 0.6])),
               _record("L003", 0, [27.0, 27.4])]
    state = SweepState(run, _plan(tmp_path, depths=(0, 2)), records)
    doc = build_document(state.plan, state, run, "settled")
    for entry in doc["depths"]:
        entry["roofline_pct"] = 40.0 + entry["depth"]  # as with a roofline: block
    section = sweep_section(_Inputs(doc))
    rows = sweep_rows(section)
    assert HEADERS[3] == "95% CI over launches" and HEADERS[-1] == "% of ceiling"
    from scipy import stats
    low, high = stats.t.interval(0.95, 1, loc=26.65, scale=stats.sem([26.1, 27.2]))
    # over launch means; a half-width of about 7 tok/s shows one decimal, as page one prints it
    assert high - low > 10
    assert rows[0][:4] == ["0", "L001, L003", f"{26.65:.1f}", f"{low:.1f}–{high:.1f}"]
    assert rows[1][4:] == ["2.50", "0.90 / 0.60", "fail", "42.0"]
    lines = sweep_lines(section)
    assert lines[0].startswith("Decision: depth 0 (settled).")
    assert any(l.startswith("Gate failed at depth 2 (never recommended)") for l in lines)


def _undecided(tmp_path: Path, rates: dict[int, list[float]], max_launches: int) -> dict:
    run = tmp_path / "run"
    records, n = [], 0
    for depth, means in rates.items():
        for mean in means:
            n += 1
            records.append(_record(f"L{n:03d}", depth, [mean - 0.1, mean + 0.1], gate=n <= 3))
            if n <= 3:
                _gate_file(run, f"L{n:03d}", TOKENS)
    state = SweepState(run, _plan(tmp_path, max_launches=max_launches), records)
    return build_document(state.plan, state, run, "launch budget spent")


def test_an_undecided_sweep_says_how_many_launches_a_decision_would_need(tmp_path):
    # depths 2 and 4 about 4% apart at a 2-3% launch spread: settling it is within reach
    doc = _undecided(tmp_path, {0: [26.0, 26.9], 2: [30.0, 31.1], 4: [31.8, 32.1]}, 12)
    decision = doc["decision"]
    assert decision["state"] == "insufficient"
    view = decision["outlook"]
    assert view["ok_launches"] == 6 and view["leading"] == 4
    # the gap is wide for a 1.5% spread: any rule could settle in 3 launches, this rule
    # needs its 4 repeats first (df 3 < 4), so one more launch
    assert view["any_rule_bound"] < 7 and view["launches_needed_estimate"] == 7
    assert "settling needs about 7 ok launches on average" in decision["reason"]
    assert view["within_budget"] == (view["launches_needed_estimate"] <= 12)
    SweepJson.model_validate(doc)


def test_an_undecided_near_tie_is_said_to_be_beyond_the_budget(tmp_path):
    # 30.0 against 30.3 with a 4% spread: far more launches than a lab spends
    doc = _undecided(tmp_path, {0: [26.0, 27.5], 2: [29.1, 30.9], 4: [29.5, 31.1]}, 9)
    decision = doc["decision"]
    view = decision["outlook"]
    assert decision["state"] == "insufficient" and view["within_budget"] is False
    assert view["launches_needed_estimate"] is None or view["launches_needed_estimate"] > 9
    assert "more than the budget of 9 launches" in decision["reason"]


def test_a_settled_sweep_has_no_outlook(tmp_path):
    rates = {0: [26.0, 26.1, 25.9], 2: [33.0, 33.1, 32.9], 4: [24.0, 24.2, 23.9]}
    doc = _undecided(tmp_path, rates, 9)
    assert doc["decision"]["state"] == "best" and doc["decision"]["outlook"] is None


def test_a_left_out_schedule_is_in_sweep_json_and_the_report_says_so(tmp_path):
    from sparktriage.report.sweep import sweep_lines, sweep_section
    from sparktriage.documents.sweep import SweepDocument
    run = tmp_path / "run"
    records = [_record("L001", 0, [26.0, 26.2]), _record("L002", 2, [30.0, 30.4],
                                                          acc=_acc(100, 150, [0.9, 0.6]))]
    schedule = {"num_speculative_tokens_per_batch_size": [[1, 4, 3], [5, 64, 1]]}
    plan = _plan(tmp_path, depths=(0, 2)).model_copy(update={
        "speculative_source": "serve.flags.speculative-config", "speculative_left_out": schedule})
    doc = build_document(plan, SweepState(run, plan, records), run, "settled")
    assert doc["speculative"] == {"source": "serve.flags.speculative-config", "left_out": schedule}
    SweepDocument.model_validate(doc)
    lines = sweep_lines(sweep_section(_Inputs(doc)))
    assert ("warning: the deployment's speculative config sets the depth by batch size "
            "(num_speculative_tokens_per_batch_size); every launch of the sweep ran its own depth "
            "at every batch size instead, so the recommendation is the depth for one stream, "
            "not a schedule") in lines
    from sparktriage.sweep.render import render_lines
    printed = render_lines(doc).text()
    assert ("note: the deployment sets the depth by batch size "
            "(num_speculative_tokens_per_batch_size)") in printed
    plain = build_document(_plan(tmp_path, depths=(0, 2)), SweepState(run, plan, records), run,
                           "settled")
    assert "batch size" not in render_lines(plain).text()
    assert plain["speculative"] == {"source": None, "left_out": {}}
    assert not any("batch size" in l for l in sweep_lines(sweep_section(_Inputs(plain))))
