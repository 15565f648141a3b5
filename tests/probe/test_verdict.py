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
