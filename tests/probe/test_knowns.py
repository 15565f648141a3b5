"""Known-answer probes: the set is fresh per seed, scoring is lenient but not blind."""

from __future__ import annotations

import pytest

from sparktriage.probe.knowns import probe_set, score


def by_id(seed=1):
    return {p.id: p for p in probe_set(seed, long_chars=600)}


def test_set_shape_and_freshness():
    one, two = probe_set(1, 600), probe_set(2, 600)
    assert len(one) == 24
    kinds = [p.kind for p in one]
    assert (kinds.count("copy"), kinds.count("math"), kinds.count("count"), kinds.count("fact"),
            kinds.count("long")) == (8, 5, 3, 6, 2)
    assert sum(p.chat for p in one) == 12
    assert [p.question for p in one if p.kind == "copy"] != [p.question for p in two if p.kind == "copy"]
    assert probe_set(1, 600) == one  # same seed, same probes
    long_probe = next(p for p in one if p.kind == "long")
    assert f"The secret number is {long_probe.accept[0]}." in long_probe.context
    assert len(long_probe.context) >= 600


@pytest.mark.parametrize("answer, ok", [
    (" Paris", True), ("The capital of France is **Paris**.", True), ("paris!", True),
    ("<think>France... Lyon? no</think> Paris", True), ("Lyon", False), ("", False),
    ("Parisian", False),
])
def test_fact_scoring(answer, ok):
    assert score(by_id()["fact-0"], answer) is ok


def test_number_scoring_takes_the_last_integer_and_number_words():
    math_probe = by_id()["math-0"]
    expected = math_probe.accept[0]
    assert score(math_probe, f" {expected}")
    assert score(math_probe, f"{math_probe.question[8:-1]} = {expected}")
    assert not score(math_probe, f"{expected} or maybe {int(expected) + 1}")
    days = next(p for p in probe_set(3, 600) if p.id == "fact-2")
    assert score(days, "There are seven days in a week.") and score(days, "7")
    assert not score(days, "six")


def test_copy_scoring_needs_the_whole_string():
    copy = by_id()["copy-0"]
    target = copy.accept[0]
    assert score(copy, f" {target}") and score(copy, f"Sure: `{target}`")
    assert not score(copy, target[:-1])
