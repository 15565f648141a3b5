"""The adaptive allocation and the decision rule (sweep.allocate), with hand-computed numbers."""

from __future__ import annotations

import math
import random

import pytest
from scipy import stats

from sparktriage.sweep.allocate import decide, next_depth, pooled_cv


def test_pooled_cv_is_the_relative_spread_over_depths():
    cv, df = pooled_cv({0: [26.0, 27.0, 28.0], 2: [30.0, 31.0], 4: [25.0]})
    rel = [(v / 27 - 1) ** 2 for v in (26, 27, 28)] + [(v / 30.5 - 1) ** 2 for v in (30, 31)]
    assert df == 3 and cv == pytest.approx(math.sqrt(sum(rel) / 3))


def test_best_when_separated_from_every_depth_at_95_percent():
    means = {0: [26.0, 26.8, 27.4], 2: [34.1, 35.0, 34.6], 4: [29.5, 30.2, 29.9]}
    d = decide(means)
    assert d.state == "best" and d.depth == 2 and d.candidates == (2,)
    cv, df = pooled_cv(means)
    se = math.hypot(34.5667 * cv / math.sqrt(3), 29.8667 * cv / math.sqrt(3))
    assert d.p_values[4] == pytest.approx(stats.t.sf((34.5667 - 29.8667) / se, df), rel=1e-3)
    assert sum(d.p_values.values()) <= 0.05 and d.provisional is False


def test_not_separated_is_insufficient_and_says_so():
    d = decide({0: [26.0, 27.9], 2: [27.6, 26.5]})
    assert d.state == "insufficient" and d.depth == 2 and set(d.candidates) == {0, 2}
    assert "not separated at 95% confidence" in d.reason and d.provisional is True


def test_tied_within_the_practical_margin_keeps_the_lowest_depth():
    means = {0: [30.0, 30.1, 29.9, 30.05, 29.95, 30.0],
             2: [30.02, 29.98, 30.1, 29.9, 30.0, 30.0],
             4: [20.0, 20.1]}
    d = decide(means)
    assert d.state == "tied" and d.depth == 0 and d.candidates == (0, 2)


def test_one_launch_per_depth_gives_the_highest_mean_provisionally():
    d = decide({0: [26.0], 2: [31.0], 4: [24.0]})
    assert (d.state, d.depth, d.provisional) == ("insufficient", 2, True)
    assert "spread is unknown" in d.reason


def test_minimum_first_depth_0_first_then_the_contested_depths():
    assert next_depth({}, [0, 2, 4], 1) == 0
    assert next_depth({0: [26.0]}, [0, 2, 4], 1) == 2
    assert next_depth({0: [26.0], 2: [31.0], 4: [24.0]}, [0, 2, 4], 2) == 0
    # one launch each: the next launch goes to one of the two highest, not to the clear loser
    assert next_depth({0: [26.0], 2: [31.0], 4: [20.0], 3: [30.0]}, [0, 2, 3, 4], 1) in (2, 3)
    # settled: nothing more to launch
    assert next_depth({0: [26.0, 26.8, 27.4], 2: [34.1, 35.0, 34.6]}, [0, 2], 1) is None


def test_adaptive_sweeps_pick_the_right_depth_on_the_seed_spread():
    """Simulated sweeps (launch spread 7%): right decisions, errors under 5%."""
    rng = random.Random(11)
    true = {0: 26.4, 2: 33.0, 4: 24.0}
    right = wrong = 0
    for _ in range(150):
        means: dict[int, list[float]] = {}
        for _ in range(12):
            d = next_depth(means, list(true), 1)
            if d is None:
                break
            means.setdefault(d, []).append(true[d] * (1 + rng.gauss(0, 0.07)))
        decision = decide(means)
        if decision.state == "best":
            right += decision.depth == 2
            wrong += decision.depth != 2
    assert wrong / 150 <= 0.05 and right / 150 >= 0.8
