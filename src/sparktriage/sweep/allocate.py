"""Adaptive allocation of launches and the sweep's decision (rule and error rates: docs/sweep.md).

Model. A launch mean of depth d is μ_d·(1 + ε) with ε ~ N(0, cv²): launch-to-launch spread is
relative and shared by the depths of one deployment, so cv is pooled over every depth with at
least two launches (df = Σ (n_d − 1)). The standard error of depth d's mean is m_d·cv/√n_d.

Separation. With b the depth of the highest mean among the eligible ones (gate not failed, not
failed twice), p_d = P(T_df > (m_b − m_d)/se(m_b − m_d)) is the one-sided p-value of "b beats d".
The best is *separated* when Σ_{d≠b} p_d ≤ α (Bonferroni: every comparison at once, 95%).

Decision, in order:
1. `best`: b separated from every other eligible depth;
2. `tied`: every depth not separated from b (pairwise p_d > α/(k−1)) is shown, at 95%
   confidence, to be within the practical margin (default 2%) of b: the upper bound of
   (m_b − m_d)/m_b is ≤ margin. The recommendation is the lowest depth among them;
3. `insufficient` (budget spent, or no pooled spread yet): the recommendation is the highest
   mean, provisional, with the candidates the data cannot separate from it.

Allocation. After the minimum launches per depth, the next launch goes to the eligible depth
whose extra launch (its mean held, its standard error shrunk to n+1 launches, df + 1) most lowers
W = Σ_{d≠b} p_d, the bound on the probability that b is not the best. Before any depth has two
launches the spread is unknown; the allocation (never the decision) then uses a prior cv of 7%
(the field's four launches, 25.9–28.4, and a fifth at 23.4 tok/s) with a normal tail.
"""

from __future__ import annotations

import math
from dataclasses import dataclass, field

from sparktriage.stats.tdist import t_cdf, t_ppf

ALPHA = 0.05
MARGIN = 0.02
PRIOR_CV = 0.07


@dataclass(frozen=True)
class Decision:
    """The decision object of the sweep's JSON (plus the numbers behind it)."""

    state: str  # best | tied | insufficient
    depth: int | None
    candidates: tuple[int, ...]
    reason: str
    provisional: bool
    cv: float | None = None
    df: int = 0
    p_values: dict = field(default_factory=dict)  # depth -> one-sided p of "best beats it"

    def as_dict(self) -> dict:
        return {"state": self.state, "depth": self.depth, "candidates": list(self.candidates),
                "reason": self.reason, "provisional": self.provisional, "basis": "decode",
                "pooled_cv": self.cv, "pooled_df": self.df,
                "p_values": {str(k): v for k, v in self.p_values.items()}}


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
             extra: int | None = None) -> tuple[int, dict[int, float]]:
    """The best depth and, per other depth, the one-sided p of "best beats it" (`extra`: that
    depth counted with one launch more, for the allocation's look-ahead)."""
    m = {d: _mean(v) for d, v in means.items()}
    n = {d: len(v) + (1 if d == extra else 0) for d, v in means.items()}
    best = max(m, key=lambda d: (m[d], -d))
    out = {}
    for d in m:
        if d == best:
            continue
        se = math.hypot(_se(m[best], n[best], cv), _se(m[d], n[d], cv))
        out[d] = 0.0 if se == 0 else _tail((m[best] - m[d]) / se, df)
    return best, out


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
    if sum(p.values()) <= alpha:
        return Decision("best", best, (best,),
                        f"depth {best} is separated from every other depth at 95% confidence "
                        f"(Bonferroni over {k - 1} comparisons; pooled launch spread {cv * 100:.1f}%, "
                        f"df {df})", False, cv, df, p)
    candidates = sorted([best] + [d for d, q in p.items() if q > alpha / (k - 1)])
    others = [d for d in candidates if d != best]
    if others:
        q = t_ppf(1.0 - alpha / len(others), df)
        mb = _mean(means[best])
        bounds = {}
        for d in others:
            md = _mean(means[d])
            se = math.hypot(_se(mb, len(means[best]), cv), _se(md, len(means[d]), cv))
            bounds[d] = (mb - md + q * se) / mb
        if all(b <= margin for b in bounds.values()):
            low = min(candidates)
            return Decision("tied", low, tuple(candidates),
                            f"depths {', '.join(map(str, candidates))} are within {margin * 100:g}% "
                            f"of each other at 95% confidence: the lowest, depth {low}, is kept",
                            False, cv, df, p)
    not_sep = ", ".join(f"depth {d} (p={p[d]:.2g})" for d in others)
    return Decision("insufficient", best, tuple(candidates),
                    f"depth {best} has the highest mean but is not separated at 95% confidence "
                    f"from {not_sep}" + ("; the launch budget is spent" if final else ""),
                    True, cv, df, p)


def settled(decision: Decision) -> bool:
    return decision.state in ("best", "tied")


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
    scores = {}
    for d in measured:
        _, p = p_values(measured, cv_used, df_used, extra=d)
        scores[d] = sum(p.values())
    return min(scores, key=lambda d: (scores[d], len(measured[d]), d))
