"""The combination rule: two independent strong families for garbage, baselines for healthy."""

from __future__ import annotations

import pytest

from sparktriage.probe.family import FamilyResult
from sparktriage.probe.verdict import decide, from_documents, pattern


def fams(**statuses) -> list[FamilyResult]:
    out = []
    for name, status in statuses.items():
        f = FamilyResult(name, status)
        out.append(f)
    return out


@pytest.mark.parametrize("statuses, expected", [
    (dict(sanity="ok", likelihood="ok", answers="ok", differential="skipped"), "healthy-uncalibrated"),
    (dict(sanity="ok", likelihood="ok", answers="ok", differential="ok"), "healthy"),
    (dict(sanity="garbage", likelihood="ok", answers="ok"), "garbage"),
    (dict(sanity="ok", likelihood="garbage", answers="garbage"), "garbage"),
    (dict(sanity="ok", likelihood="garbage", answers="ok"), "suspect"),
    (dict(sanity="ok", likelihood="suspect", answers="suspect"), "suspect"),
    (dict(sanity="ok", likelihood="suspect", answers="ok", differential="skipped"), "healthy-uncalibrated"),
    (dict(sanity="ok", likelihood="ok", differential="suspect"), "suspect"),
    (dict(sanity="skipped", likelihood="skipped", answers="garbage", generation="garbage"), "garbage"),
])
def test_decide(statuses, expected):
    assert decide(fams(**statuses))[0] == expected


def test_pattern_prefers_strong_hints_then_priority():
    a = FamilyResult("answers", "suspect", hints={"F8"})
    c = FamilyResult("consistency", "garbage", hints={"F6"})
    assert pattern("suspect", [a, c]) == "F6"
    s = FamilyResult("sanity", "garbage", hints={"F3"})
    g = FamilyResult("generation", "garbage", hints={"F2", "F1"})
    assert pattern("garbage", [s, g]) == "F3"
    assert pattern("suspect", [FamilyResult("answers", "garbage")]) == "F5"
    assert pattern("healthy", [g]) is None


def test_from_documents_can_drop_the_baseline():
    docs = [{"name": "sanity", "status": "ok"}, {"name": "differential", "status": "suspect"}]
    assert from_documents(docs) == "suspect"
    assert from_documents(docs, with_baseline=False) == "healthy-uncalibrated"


def test_advice_is_printed_as_lines_each_once():
    """The probe's advice: one line per item, never a Python list, no item twice (an uncalibrated
    F5 verdict advised saving a baseline twice)."""
    from sparktriage.cli.selfcheck import render_summary
    from sparktriage.probe.verdict import CALIBRATE, advice

    items = advice("suspect", "F5", calibrated=False)
    assert items.count(CALIBRATE) == 1 and len(items) == len(set(items)) == 2
    doc = {"run": "/tmp/run", "launch": "L001", "bench": None, "startup": None, "stalls": None,
           "report": None, "steps": [],
           "probe": {"verdict": "suspect", "baseline": False, "tokens_spent": 100,
                     "advice": items + [items[0]]}}
    lines = render_summary(doc)
    said = [l for l in lines if l.startswith("  advice: ")]
    assert said == [f"  advice: {item}" for item in items]
    assert not any("['" in l or "']" in l for l in lines)
