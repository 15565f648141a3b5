"""The fewest launches any sweep rule needs, on average, to name a good depth at a given confidence.

A lower bound of the information kind (the transportation argument of fixed-confidence
best-arm identification: Kaufmann, Cappé and Garivier 2016, lemma 1; Garivier and Kaufmann 2016,
theorem 1), for the sweep's own notion of right: a depth is *good* when its true rate is within
the margin of the best (rate ≥ (1 − margin) · best). Model: each launch of depth a gives a
Gaussian launch mean with the true rate μ_a and a known standard deviation σ_a (a rule told the
spread can only do better than one that estimates it).

For a good answer i and an allocation w (the share of launches each depth gets), the cheapest
way for the data to make i look wrong is an instance λ in which some depth a is more than the
margin above i (λ_i = c·λ_a, c = 1 − margin); it costs, per launch,

    C_a(w) = (μ_i − c·μ_a)² / (2 (σ_i²/w_i + c²σ_a²/w_a)).

T_i = 1 / max_w min_a C_a(w) (at the optimum every C_a is equal: `_best_share` solves that). Any
rule that ends with a depth wrong at most δ of the time on every instance, and with no decision
(`insufficient`) a fraction q of the time here, satisfies

    E[launches] ≥ min_i T_i · kl(p, δ),  p = (1 − δ − q) / (number of good depths),

kl the Bernoulli relative entropy, whenever p > δ (with one good depth this is the classical
T*·kl(1 − δ − q, δ); with several, the probability of naming one of them is split, and the
bound keeps only the share the best-placed one must get). It holds for every δ, not only as δ → 0.

Unknown spread (`unknown_scale=True`). A lab does not know its launch spread; the sweep's own
model says it is relative and shared by the depths (sweep/policy/allocate.py). A rule that must be
right whatever that common scale is faces also the instances whose every σ_a is multiplied by one r;
the cheapest of those costs, per launch, min_r [ln r + (1/2 + C)/r² − 1/2] = ½·ln(1 + 2C) (at
r² = 1 + 2C), C the known-spread cost of the same allocation. The logarithm keeps the best
allocation, so T_i(unknown) = 1 / (½·ln(1 + 2/T_i)): always more launches than with the spread
known, and much more when the depths are far apart (a wide gap is cheaper to explain by a larger
spread than by other means).
docs/sweep.md ("What no rule can do") uses it to show which launch goals are out of reach.
"""

from __future__ import annotations

import math
from dataclasses import dataclass

_BISECT_STEPS = 200
_GOLDEN_STEPS = 200


@dataclass(frozen=True)
class LaunchBound:
    """The bound for one instance: `launches` ≥ what any δ-correct rule spends on average."""

    launches: float  # min_i T_i · kl(p, δ); 0.0 when p ≤ δ (no bound)
    per_launch_cost: float  # min_i T_i: launches per nat of evidence
    answer: int  # the good depth whose proof is cheapest
    shares: dict[int, float]  # the launch shares that reach T for that depth
    good: tuple[int, ...]  # the depths within the margin of the best
    delta: float
    abstain: float
    unknown_scale: bool = False


def kl_bernoulli(p: float, q: float) -> float:
    """Relative entropy between Bernoulli(p) and Bernoulli(q), in nats."""

    def term(a: float, b: float) -> float:
        return 0.0 if a == 0 else a * math.log(a / b)

    return term(p, q) + term(1.0 - p, 1.0 - q)


def _shares_at(t: float, x: float, var_i: float,
               others: list[tuple[float, float]]) -> list[float] | None:
    """The w_a at which every C_a equals t, given w_i = x (None: t cannot be reached)."""
    shares = []
    for gap2, var_a in others:
        room = gap2 / (2.0 * t) - var_i / x
        if room <= 0:
            return None
        shares.append(var_a / room)
    return shares


def _cost_at(x: float, var_i: float, others: list[tuple[float, float]]) -> float:
    """The common cost t reached with w_i = x and the rest shared so that Σ w = 1."""
    ceiling = min(gap2 * x / (2.0 * var_i) for gap2, _ in others)
    low, high = 0.0, ceiling
    for _ in range(_BISECT_STEPS):
        mid = (low + high) / 2.0
        rest = _shares_at(mid, x, var_i, others) if mid > 0 else []
        if rest is not None and x + sum(rest) <= 1.0:
            low = mid
        else:
            high = mid
    return low


def _best_share(var_i: float, others: list[tuple[float, float]]) -> tuple[float, float]:
    """max over w_i of the common cost (golden-section search; the cost is unimodal in w_i)."""
    ratio = (math.sqrt(5.0) - 1.0) / 2.0
    a, b = 1e-9, 1.0 - 1e-9
    c, d = b - ratio * (b - a), a + ratio * (b - a)
    fc, fd = _cost_at(c, var_i, others), _cost_at(d, var_i, others)
    for _ in range(_GOLDEN_STEPS):
        if fc >= fd:
            b, d, fd = d, c, fc
            c = b - ratio * (b - a)
            fc = _cost_at(c, var_i, others)
        else:
            a, c, fc = c, d, fd
            d = a + ratio * (b - a)
            fd = _cost_at(d, var_i, others)
    x = (a + b) / 2.0
    return x, _cost_at(x, var_i, others)


def _answer_cost(i: int, rates: dict[int, float], sds: dict[int, float],
                 margin: float) -> tuple[float, dict[int, float]]:
    """(max_w min_a C_a, the shares) for proving depth i good."""
    c = 1.0 - margin
    depths = [d for d in rates if d != i]
    others = [((rates[i] - c * rates[d]) ** 2, (c * sds[d]) ** 2) for d in depths]
    x, cost = _best_share(sds[i] ** 2, others)
    rest = (_shares_at(cost, x, sds[i] ** 2, others) if cost > 0 else None) or [0.0] * len(depths)
    shares = {i: x, **dict(zip(depths, rest))}
    total = sum(shares.values())
    return cost, {d: s / total for d, s in sorted(shares.items())}


def launch_bound(rates: dict[int, float], sds: dict[int, float], margin: float = 0.02,
                 delta: float = 0.05, abstain: float = 0.0,
                 unknown_scale: bool = False) -> LaunchBound:
    """The lower bound on expected launches (module doc) for true `rates` with launch-mean `sds`
    (`unknown_scale`: for a rule that is not told the spread's common scale)."""
    if len(rates) < 2:
        raise ValueError("a bound needs at least two depths")
    if any(s <= 0 for s in sds.values()) or set(sds) != set(rates):
        raise ValueError("every depth needs a positive standard deviation")
    if not 0 < delta < 0.5 or not 0 <= abstain < 1:
        raise ValueError("delta must be in (0, 0.5) and abstain in [0, 1)")
    top = max(rates.values())
    good = tuple(sorted(d for d, r in rates.items() if r >= (1.0 - margin) * top))
    best_cost, answer, shares = 0.0, good[0], {}
    for i in good:
        if any(rates[i] <= (1.0 - margin) * rates[d] for d in rates if d != i):
            continue  # on the margin's edge: never provable
        cost, w = _answer_cost(i, rates, sds, margin)
        if unknown_scale:
            cost = 0.5 * math.log1p(2.0 * cost)
        if cost > best_cost:
            best_cost, answer, shares = cost, i, w
    p = (1.0 - delta - abstain) / len(good)
    if best_cost <= 0:
        return LaunchBound(math.inf, math.inf, answer, shares, good, delta, abstain, unknown_scale)
    per_launch = 1.0 / best_cost
    launches = per_launch * kl_bernoulli(p, delta) if p > delta else 0.0
    return LaunchBound(launches, per_launch, answer, shares, good, delta, abstain, unknown_scale)
