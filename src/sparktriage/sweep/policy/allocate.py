"""Adaptive allocation of launches and the sweep's decision (rule and error rates: docs/sweep.md).

Model. A launch mean of depth d is μ_d·(1 + ε) with ε ~ N(0, cv²): launch-to-launch spread is
relative and shared by the depths of one deployment, so cv is pooled over every depth with at
least two launches (df = launches − depths that have a repeat); a depth measured once gets its
interval from the pooled spread. The standard error of depth d's mean is m_d·cv/√n_d.

Separation. With b the depth of the highest mean among the eligible ones (gate not failed, not
failed twice), p_d = P(T_df > (m_b − m_d)/se(m_b − m_d)) is the one-sided p-value of "b beats d".
The best is *separated* when W = Σ_{d≠b} p_d ≤ α (Bonferroni: every comparison at once, 95%).
Within the margin. For a depth r, G_r = Σ_{d≠r} P(T_df > (m_r·(1 + margin) − m_d)/se) bounds
the probability that some depth is more than the margin (default 2%) above r.

Decision, in order (nothing settles while df < MIN_DF: a spread estimated from fewer repeats is
too often far too small, and a sequential rule stops exactly then):
1. `best`: W ≤ α;
2. `tied`: the candidates are b and the depths not separated from it (p_d > α/(k−1)); the
   tested recommendations R are the lowest candidate and b (one depth when they coincide); those
   with G_r ≤ α/|R| are within the margin of the best at 95% confidence, and the lowest of them
   is the recommendation;
3. `insufficient` (budget spent, or df too small): the recommendation is the highest mean,
   provisional, with the candidates the data cannot separate from it.

Allocation. After the minimum launches per depth, the next launch goes to the eligible depth
whose extra launch (its mean held, its standard error shrunk to n+1 launches, df + 1) most lowers
min(W, |R|·G_r): the bound on the probability of a wrong settled decision, closest to α. Before
any depth has two launches the spread is unknown; the allocation (never the decision) then uses
a prior cv of 7% (the field's four launches, 25.9–28.4, and a fifth at 23.4 tok/s) with a
normal tail.
"""

from __future__ import annotations

import math
from dataclasses import dataclass, field

from sparktriage.stats.tdist import t_cdf
from sparktriage.sweep.policy.words import SETTLED, DecisionState

ALPHA = 0.05
MARGIN = 0.02
PRIOR_CV = 0.07
MIN_DF = 4  # degrees of freedom of the pooled spread before anything settles (docs/sweep.md)


@dataclass(frozen=True)
class Decision:
    """The decision object of the sweep's JSON (plus the numbers behind it)."""

    state: DecisionState  # sweep.policy.words
    depth: int | None
    candidates: tuple[int, ...]
    reason: str
    provisional: bool
    cv: float | None = None
    df: int = 0
    p_values: dict = field(default_factory=dict)  # depth -> one-sided p of "best beats it"
    within_margin: tuple[int, ...] = ()  # depths shown within the margin of the best (tied)
    rule: str = "black-box"  # black-box | model (sweep.policy.rule)

    def as_dict(self) -> dict:
        return {"state": self.state, "depth": self.depth, "candidates": list(self.candidates),
                "reason": self.reason, "provisional": self.provisional, "basis": "decode",
                "pooled_cv": self.cv, "pooled_df": self.df,
                "p_values": {str(k): v for k, v in self.p_values.items()},
                "within_margin": list(self.within_margin), "rule": self.rule}


def _mean(values: list[float]) -> float:
    return sum(values) / len(values)


PRIOR_DF = 0  # pseudo-degrees of freedom of PRIOR_CV in the decision (0: the data alone)


def pooled_cv(means: dict[int, list[float]], prior_df: float | None = None) -> tuple[float | None, int]:
    """Relative launch-to-launch spread pooled over depths, with its degrees of freedom
    (`prior_df` > 0: PRIOR_CV counted as that many degrees of freedom, a scaled-inverse-χ² prior)."""
    prior = PRIOR_DF if prior_df is None else prior_df
    ss, df = prior * PRIOR_CV ** 2, prior
    for values in means.values():
        if len(values) < 2:
            continue
        m = _mean(values)
        if m <= 0:
            continue
        ss += sum((v / m - 1.0) ** 2 for v in values)
        df += len(values) - 1
    return (math.sqrt(ss / df), int(df)) if df else (None, 0)


def _tail(z: float, df: float) -> float:
    """P(T > z) for Student's t (normal when df is infinite)."""
    if math.isinf(df):
        return 0.5 * math.erfc(z / math.sqrt(2.0))
    return 1.0 - t_cdf(z, df)


def _se(m: float, n: int, cv: float) -> float:
    return abs(m) * cv / math.sqrt(n)


def p_values(means: dict[int, list[float]], cv: float, df: float,
             extra: int | None = None, ref: int | None = None,
             margin: float = 0.0) -> tuple[int, dict[int, float]]:
    """The reference depth (default: the highest mean) and, per other depth d, the one-sided p
    of "d is not more than `margin` above it": P(T_df > (m_r·(1 + margin) − m_d)/se). With
    margin 0 and the highest mean, the p of "the best beats d". `extra`: that depth counted
    with one launch more (the allocation's look-ahead)."""
    m = {d: _mean(v) for d, v in means.items()}
    n = {d: len(v) + (1 if d == extra else 0) for d, v in means.items()}
    best = max(m, key=lambda d: (m[d], -d)) if ref is None else ref
    out = {}
    for d in m:
        if d == best:
            continue
        se = math.hypot(_se(m[best], n[best], cv), _se(m[d], n[d], cv))
        gap = m[best] * (1.0 + margin) - m[d]
        out[d] = (0.0 if gap > 0 else 1.0) if se == 0 else _tail(gap / se, df)
    return best, out


def candidates_of(p: dict[int, float], best: int, alpha: float = ALPHA) -> list[int]:
    """The best and every depth not separated from it (pairwise p > α/(k−1))."""
    k = len(p) + 1
    return sorted([best] + [d for d, q in p.items() if q > alpha / (k - 1)])


def decide(means: dict[int, list[float]], margin: float = MARGIN, alpha: float = ALPHA,
           final: bool = True) -> Decision:
    """The decision over eligible depths (`means`: depth -> its launch means)."""
    means = {d: v for d, v in means.items() if v}
    if not means:
        return Decision("insufficient", None, (), "no eligible depth has a measured launch", True)
    if len(means) == 1:
        (only,) = means
        return Decision("best", only, (only,), f"depth {only} is the only eligible depth measured",
                        False)
    cv, df = pooled_cv(means)
    ranked = sorted(means, key=lambda d: (-_mean(means[d]), d))
    if cv is None:
        return Decision("insufficient", ranked[0], tuple(sorted(means)),
                        "one launch per depth: the launch-to-launch spread is unknown, so no depth "
                        "can be separated from another; highest mean given as provisional", True)
    best, p = p_values(means, cv, df)
    k = len(means)
    if df < MIN_DF:
        return Decision("insufficient", best, tuple(candidates_of(p, best, alpha)),
                        f"the pooled launch-to-launch spread has {df} degree(s) of freedom, fewer "
                        f"than the {MIN_DF} a decision needs (a spread estimated from so few repeats "
                        f"is too often far too small); highest mean given as provisional",
                        True, cv, df, p)
    if sum(p.values()) <= alpha:
        return Decision("best", best, (best,),
                        f"depth {best} is separated from every other depth at 95% confidence "
                        f"(Bonferroni over {k - 1} comparisons; pooled launch spread {cv * 100:.1f}%, "
                        f"df {df})", False, cv, df, p)
    candidates = candidates_of(p, best, alpha)
    others = [d for d in candidates if d != best]
    good = good_selection(means, cv, df, candidates, best, margin)
    level = alpha / len(good)
    within = sorted(r for r, g in good.items() if g <= level)
    if within:
        low = within[0]
        rest = [d for d in candidates if d not in within]
        return Decision("tied", low, tuple(candidates),
                        f"depths {', '.join(map(str, candidates))} are not separated at 95% confidence; "
                        f"depth {low} is within {margin * 100:g}% of the best at 95% confidence"
                        + (f", depth(s) {', '.join(map(str, rest))} not shown to be" if rest else "")
                        + f": depth {low} is kept (the lowest shown within the margin; pooled launch "
                        f"spread {cv * 100:.1f}%, df {df})", False, cv, df, p, tuple(within))
    not_sep = ", ".join(f"depth {d} (p={p[d]:.2g})" for d in others)
    return Decision("insufficient", best, tuple(candidates),
                    f"depth {best} has the highest mean but is not separated at 95% confidence "
                    f"from {not_sep}" + ("; the launch budget is spent" if final else ""),
                    True, cv, df, p)


def settled(decision: Decision) -> bool:
    return decision.state in SETTLED


def next_depth(means: dict[int, list[float]], eligible: list[int], min_per_depth: int,
               margin: float = MARGIN) -> int | None:
    """The depth that gets the next launch, or None when the decision is settled.

    `means`: the ok launch means per depth; `eligible`: depths still in the running (gate not
    failed, not failed twice). The minimum comes first, depth 0 first, then the look-ahead rule
    of the module doc."""
    for d in sorted(eligible, key=lambda d: (d != 0, d)):
        if len(means.get(d) or []) < min_per_depth:
            return d
    measured = {d: means[d] for d in eligible if means.get(d)}
    if len(measured) < 2:
        return None
    if settled(decide(measured, margin=margin, final=False)):
        return None
    cv, df = pooled_cv(measured)
    cv_used, df_used = (cv, df + 1.0) if cv is not None else (PRIOR_CV, math.inf)
    scores = {d: wrong_bound(measured, cv_used, df_used, margin, extra=d) for d in measured}
    return min(scores, key=lambda d: (scores[d], len(measured[d]), d))


def wrong_bound(means: dict[int, list[float]], cv: float, df: float, margin: float = MARGIN,
                extra: int | None = None) -> float:
    """The smaller of the decision's error bounds, each on the scale of α (`extra`: one launch
    more there): W = Σ p, the bound on P(the highest mean is not the best), and per tested
    recommendation r, |R|·G_r, the Bonferroni-adjusted bound on P(r is more than the margin
    below the best). The sweep settles when one is ≤ α; the next launch goes where it lowers
    this most."""
    best, p = p_values(means, cv, df, extra=extra)
    good = good_selection(means, cv, df, candidates_of(p, best), best, margin, extra)
    return min([sum(p.values())] + [g * len(good) for g in good.values()])


def good_selection(means: dict[int, list[float]], cv: float, df: float, candidates: list[int],
                   best: int, margin: float, extra: int | None = None) -> dict[int, float]:
    """The tested recommendations R (the lowest candidate, and the highest mean when that is
    another depth) and, for each r, G_r = Σ_{d≠r} P(T > (m_r(1 + margin) − m_d)/se): the bound
    on P(some depth is more than the margin above r). r is within the margin of the best at 95%
    when G_r ≤ α/|R| (Bonferroni over the tested recommendations)."""
    tested = sorted({min(candidates), best})
    return {r: sum(p_values(means, cv, df, extra=extra, ref=r, margin=margin)[1].values())
            for r in tested}
