"""The launch lower bound: closed forms, an independent optimiser, a rule that must respect it."""

from __future__ import annotations

import math
import random

import numpy as np
import pytest
from scipy.optimize import minimize
from scipy.stats import norm

from sparktriage.stats.launch_bound import kl_bernoulli, launch_bound

KL_95 = kl_bernoulli(0.95, 0.05)


def test_kl_bernoulli_values():
    assert kl_bernoulli(0.95, 0.05) == pytest.approx(0.9 * math.log(19), rel=1e-12)
    assert kl_bernoulli(0.3, 0.3) == 0.0
    assert kl_bernoulli(1.0, 0.5) == pytest.approx(math.log(2), rel=1e-12)


def test_two_depths_equal_spread_no_margin_is_the_textbook_constant():
    # T* = 8σ²/Δ² for two Gaussian arms of equal σ (half the launches each)
    bound = launch_bound({0: 10.0, 1: 12.0}, {0: 1.5, 1: 1.5}, margin=0.0)
    assert bound.per_launch_cost == pytest.approx(8 * 1.5**2 / 2.0**2, rel=1e-6)
    assert bound.launches == pytest.approx(bound.per_launch_cost * KL_95, rel=1e-9)
    assert bound.shares == pytest.approx({0: 0.5, 1: 0.5}, abs=1e-4)
    assert bound.answer == 1 and bound.good == (1,)


def test_two_depths_unequal_spread_shares_follow_the_sds():
    # with σ_1 ≠ σ_2 the optimum gives each arm a share ∝ σ: T* = 2(σ_1 + σ_2)²/Δ²
    bound = launch_bound({0: 10.0, 1: 13.0}, {0: 1.0, 1: 2.0}, margin=0.0)
    assert bound.per_launch_cost == pytest.approx(2 * 3.0**2 / 3.0**2, rel=1e-6)
    assert bound.shares[1] == pytest.approx(2 / 3, abs=1e-4)


def test_the_margin_shrinks_the_gap_to_be_shown():
    # proving depth 1 good means ruling out λ_1 < c·λ_0: gap g = μ_1 − c·μ_0, cost
    # g²/(2σ²(1/w_1 + c²/w_0)), best at w_1 = 1/(1 + c): T = 2σ²(1 + c)²/g²
    c, sd = 0.98, 1.2
    bound = launch_bound({0: 28.0, 1: 30.0}, {0: sd, 1: sd}, margin=0.02)
    gap = 30.0 - c * 28.0
    assert bound.per_launch_cost == pytest.approx(2 * sd**2 * (1 + c) ** 2 / gap**2, rel=1e-6)
    assert bound.shares[1] == pytest.approx(1 / (1 + c), abs=1e-4)


def _scipy_cost(rates, sds, answer, margin):
    """max_w min_a C_a(w) by Nelder-Mead over the simplex (softmax), as an independent check."""
    mu = np.array([rates[d] for d in sorted(rates)])
    sig = np.array([sds[d] for d in sorted(rates)])
    i, c = sorted(rates).index(answer), 1 - margin

    def negative(z):
        w = np.exp(z) / np.exp(z).sum()
        return -min((mu[i] - c * mu[a]) ** 2
                    / (2 * (sig[i] ** 2 / w[i] + c**2 * sig[a] ** 2 / w[a]))
                    for a in range(len(mu)) if a != i)

    best = max((minimize(negative, np.random.RandomState(s).randn(len(mu)), method="Nelder-Mead",
                         options={"maxiter": 20000, "xatol": 1e-9, "fatol": 1e-13})
                for s in range(4)), key=lambda r: -r.fun)
    return -best.fun


SCENARIOS = [
    {0: 26.4, 1: 28.0, 2: 33.0, 3: 27.0, 4: 24.0},
    {0: 26.4, 1: 29.0, 2: 31.7, 3: 30.0, 4: 25.0},
    {0: 25.9, 1: 43.4, 2: 52.6, 3: 59.1, 4: 65.8},
]


@pytest.mark.parametrize("rates", SCENARIOS)
def test_five_depths_agree_with_an_independent_optimiser(rates):
    sds = {d: 0.066 * r for d, r in rates.items()}
    bound = launch_bound(rates, sds, margin=0.02)
    reference = _scipy_cost(rates, sds, bound.answer, 0.02)
    assert 1 / bound.per_launch_cost == pytest.approx(reference, rel=2e-3)
    assert sum(bound.shares.values()) == pytest.approx(1.0, abs=1e-9)


def test_seed_scenario_needs_more_than_half_the_grid():
    # depth 2 at 31.7 against 30.0 and 29.0 tok/s, launch sd 6.5% + request noise: no rule that
    # names a wrong depth in at most 5% of sweeps can average half the 15-launch grid
    rates = SCENARIOS[1]
    sds = {d: math.hypot(0.065 * r, 1.5 / math.sqrt(15)) for d, r in rates.items()}
    bound = launch_bound(rates, sds)
    assert 19.0 < bound.launches < 20.5
    assert bound.answer == 2 and bound.good == (2,)


def test_an_unknown_spread_costs_more_launches():
    # two depths, equal σ, no margin: known C = Δ²/(8σ²), unknown scale ½·ln(1 + Δ²/(4σ²))
    rates, sds = {0: 10.0, 1: 12.0}, {0: 1.5, 1: 1.5}
    unknown = launch_bound(rates, sds, margin=0.0, unknown_scale=True)
    expected = 0.5 * math.log(1 + 2.0**2 / (4 * 1.5**2))
    assert 1 / unknown.per_launch_cost == pytest.approx(expected, rel=1e-6)
    assert unknown.shares == pytest.approx({0: 0.5, 1: 0.5}, abs=1e-4)  # the same best allocation
    for rates in SCENARIOS:
        sds = {d: 0.066 * r for d, r in rates.items()}
        known, unknown = launch_bound(rates, sds), launch_bound(rates, sds, unknown_scale=True)
        assert unknown.launches > known.launches
        assert unknown.answer == known.answer


def _unknown_scale_cost_by_search(known_cost: float) -> float:
    """min over r of ln r + (1/2 + C)/r² − 1/2 by a plain grid over r (checks the closed form)."""
    return min(math.log(r) + (0.5 + known_cost) / r**2 - 0.5
               for r in (1 + k / 10000 for k in range(0, 200000)))


@pytest.mark.parametrize("known_cost", [0.05, 0.3, 1.2])
def test_the_unknown_scale_closed_form_is_the_minimum_over_the_scale(known_cost):
    closed = 0.5 * math.log1p(2 * known_cost)
    assert _unknown_scale_cost_by_search(known_cost) == pytest.approx(closed, abs=1e-6)


def test_undecided_sweeps_and_several_good_depths_lower_the_bound():
    rates, sds = {0: 26.4, 1: 30.0, 2: 30.3, 3: 28.0}, {d: 2.0 for d in range(4)}
    tied = launch_bound(rates, sds)
    assert tied.good == (1, 2)
    kl = kl_bernoulli(0.475, 0.05)  # (1 − δ)/2: the share one of the two must get
    assert tied.launches == pytest.approx(tied.per_launch_cost * kl, rel=1e-9)
    leaves = launch_bound(rates, sds, abstain=0.3)
    kl = kl_bernoulli(0.325, 0.05)  # (1 − δ − 0.3)/2
    assert leaves.launches == pytest.approx(tied.per_launch_cost * kl, rel=1e-9)
    assert launch_bound(rates, sds, abstain=0.85).launches == 0.0  # p ≤ δ: nothing to bound


def test_bad_input_is_refused():
    with pytest.raises(ValueError):
        launch_bound({0: 1.0}, {0: 1.0})
    with pytest.raises(ValueError):
        launch_bound({0: 1.0, 1: 2.0}, {0: 1.0, 1: 0.0})
    with pytest.raises(ValueError):
        launch_bound({0: 1.0, 1: 2.0}, {0: 1.0, 1: 1.0}, delta=0.6)


def _anytime_rule(rng: random.Random, mu: tuple[float, float], sd: float,
                  delta: float) -> tuple[int, int]:
    """A two-depth rule correct with probability ≥ 1 − δ on every instance: one launch of each
    per round, stop at round t when the z of the difference passes the level δ/(t(t+1))
    (a union bound over every look). Returns (launches, the depth named)."""
    sums, t = [0.0, 0.0], 0
    while True:
        t += 1
        sums[0] += rng.gauss(mu[0], sd)
        sums[1] += rng.gauss(mu[1], sd)
        z = (sums[1] - sums[0]) / t / (sd * math.sqrt(2 / t))
        if abs(z) > norm.isf(delta / (t * (t + 1))):
            return 2 * t, int(z > 0)


@pytest.mark.slow
def test_a_rule_correct_on_every_instance_spends_at_least_the_bound():
    rng, mu, sd = random.Random(7), (10.0, 11.0), 1.0
    runs = [_anytime_rule(rng, mu, sd, 0.05) for _ in range(2000)]
    mean_launches = sum(n for n, _ in runs) / len(runs)
    wrong = sum(1 for _, d in runs if d != 1) / len(runs)
    bound = launch_bound({0: mu[0], 1: mu[1]}, {0: sd, 1: sd}, margin=0.0, abstain=0.0)
    assert wrong <= 0.05
    assert bound.launches == pytest.approx(8 * KL_95, rel=1e-5)  # 21.2 launches
    # the bound must not exceed what a valid rule spends (this one is conservative: about 2x)
    assert bound.launches <= mean_launches <= 3.5 * bound.launches
