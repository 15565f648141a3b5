"""The adaptive allocation and the decision rule (sweep.policy.allocate), with hand-computed numbers."""

from __future__ import annotations

import math
import random

import pytest
from scipy import stats

from sparktriage.sweep.policy.allocate import decide, next_depth, pooled_cv


def test_pooled_cv_is_the_relative_spread_over_depths():
    cv, df = pooled_cv({0: [26.0, 27.0, 28.0], 2: [30.0, 31.0], 4: [25.0]})
    rel = [(v / 27 - 1) ** 2 for v in (26, 27, 28)] + [(v / 30.5 - 1) ** 2 for v in (30, 31)]
    assert df == 3 and cv == pytest.approx(math.sqrt(sum(rel) / 3))


def test_best_when_separated_from_every_depth_at_95_percent():
    means = {0: [26.0, 26.8, 27.4, 26.6], 2: [34.1, 35.0, 34.6, 34.5], 4: [29.5, 30.2, 29.9, 30.0]}
    d = decide(means)
    assert d.state == "best" and d.depth == 2 and d.candidates == (2,)
    cv, df = pooled_cv(means)
    assert df == 9
    se = math.hypot(34.55 * cv / 2, 29.9 * cv / 2)
    assert d.p_values[4] == pytest.approx(stats.t.sf((34.55 - 29.9) / se, df), rel=1e-3)
    assert sum(d.p_values.values()) <= 0.05 and d.provisional is False


def test_not_separated_is_insufficient_and_says_so():
    d = decide({0: [26.0, 28.9, 25.1, 27.8, 24.6], 2: [27.6, 25.5, 28.6, 26.1, 29.3]})
    assert d.state == "insufficient" and d.depth == 2 and set(d.candidates) == {0, 2}
    assert "not separated at 95% confidence" in d.reason and d.provisional is True


def test_tied_within_the_practical_margin_keeps_the_lowest_depth():
    means = {0: [30.0, 30.1, 29.9, 30.05, 29.95, 30.0],
             2: [30.02, 29.98, 30.1, 29.9, 30.0, 30.0],
             4: [20.0, 20.1]}
    d = decide(means)
    assert d.state == "tied" and d.depth == 0 and d.candidates == (0, 2)


def test_within_the_margin_of_the_best_settles_before_separation():
    """Depths 2 and 3 are not separated (p 0.23), but depth 2, the lowest candidate, is shown
    within 2% of the best: G = Σ_d P(T_df > (m_2·1.02 − m_d)/se) ≤ α/2 (two recommendations
    tested: the lowest candidate and the highest mean)."""
    means = {0: [26.0, 26.3, 25.8], 2: [31.3, 32.1, 31.5, 31.9], 3: [31.1, 31.9, 31.2, 31.8], 4: [25.0]}
    d = decide(means)
    assert d.df == 8 and (d.state, d.depth, d.candidates, d.within_margin) == ("tied", 2, (2, 3), (2,))
    cv, df = pooled_cv(means)
    m2, m3 = 31.7, 31.5
    se = math.hypot(m2 * cv / 2, m3 * cv / 2)
    assert d.p_values[3] == pytest.approx(stats.t.sf((m2 - m3) / se, df), rel=1e-3) and d.p_values[3] > 0.05
    good = stats.t.sf((m2 * 1.02 - m3) / se, df)  # the other depths add almost nothing
    assert good < 0.025 and "depth 2 is within 2% of the best at 95% confidence" in d.reason


def test_when_only_the_highest_mean_is_shown_within_the_margin_it_is_kept():
    means = {0: [26.0, 26.3, 25.8], 2: [31.1, 31.9, 31.2, 31.8], 3: [31.3, 32.1, 31.5, 31.9], 4: [25.0]}
    d = decide(means)
    assert (d.state, d.depth, d.candidates, d.within_margin) == ("tied", 3, (2, 3), (3,))
    assert "depth(s) 2 not shown to be" in d.reason


def test_a_spread_with_too_few_degrees_of_freedom_never_settles():
    d = decide({0: [26.0, 26.1], 2: [36.0, 35.0], 4: [24.0, 24.2]})  # far apart, df 3
    assert (d.state, d.depth, d.provisional, d.df) == ("insufficient", 2, True, 3)
    assert sum(d.p_values.values()) < 1e-3  # it would be separated, but the spread has df 3
    assert "3 degree(s) of freedom, fewer than the 4" in d.reason


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
    assert next_depth({0: [26.0, 26.8, 27.4, 26.5, 26.9], 2: [34.1, 35.0, 34.6, 34.4, 34.8]}, [0, 2], 1) is None


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
