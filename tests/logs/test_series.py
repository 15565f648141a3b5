"""Series parsing edge cases: hostile SpecDecoding lines never crash and fall back to the
name-value scan; per-position rates are summed in order on every Python version."""

from __future__ import annotations

import datetime as dt

from sparktriage.logs.catalog import match_message
from sparktriage.logs.parser import parse_lines
from sparktriage.logs.series import parse_spec

UTC = dt.timezone.utc
SPEC = ("(APIServer pid=1) INFO 11-29 20:55:40 [metrics.py:120] SpecDecoding metrics: Mean "
        "acceptance length: 3.01, Accepted throughput: 203.49 tokens/s, Drafted throughput: 299.10 "
        "tokens/s, Accepted: 2384 tokens, Drafted: 3504 tokens, Per-position acceptance rate: "
        "{rates}, Avg Draft acceptance rate: 68.0%")


def _window(rates: str):
    event = parse_lines([SPEC.format(rates=rates)], tz=UTC, year=2026)[0]
    hits = match_message(event.message)
    return parse_spec(hits[0], event)


def test_rates_without_separators_are_not_a_crash():
    w = _window("0.8510.622")  # once raised ValueError from float("0.8510.622")
    assert w.values["accepted"] == 2384 and w.values["drafted"] == 3504
    assert w.per_position == []  # the fallback scan finds no usable rate list


def test_common_shape_and_sequential_sum():
    w = _window("0.1, 0.2, 0.3")
    assert w.per_position == [0.1, 0.2, 0.3]
    assert w.drafts == 2384 / ((0.1 + 0.2) + 0.3)  # in order, as the compiled scanner adds
    empty = _window("")
    assert empty.per_position == [] and empty.drafts == 2384 / (3.01 - 1)
