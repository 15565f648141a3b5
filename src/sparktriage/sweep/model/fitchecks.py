"""Tests of the fitted step curve against the launches: lack of fit, a jump, a fall with depth.

* `lack_of_fit` (needs a depth measured twice): the F-test of what the curve leaves after the
  replicates' own spread, F = (SS_lack / (m − 2)) / (SS_pure / (n − m)), m distinct depths.
* `jump`: the curve against the same curve with one more free factor on every depth from d on,
  for every place a kernel path or graph-capture bucket switch could sit between the measured
  depths; the nested F-test (1 and n − 3 df) of the best of them, Bonferroni over the m − 1
  places (a slow or fast path at one width alone is left to `lack_of_fit` and `monotone`).
  It needs no replicate and aims its power at the failures the field reports (GLM-4.5-Air 170 →
  111 tok/s from 1 to 2 tokens when the kernel path switched).
* `monotone`: no deeper depth has a mean step time lower than a shallower one beyond its spread
  (one-sided t, Bonferroni over the pairs).

Each returns a `Check` (passed True/False, or None when it cannot run yet) at the caller's level
(sweep.model.depth: small levels spent over every launch, the full level when the model would
settle).
"""

from __future__ import annotations

import math

from sparktriage.stats.tdist import f_sf, t_ppf
from sparktriage.sweep.model.acceptance_model import Check
from sparktriage.sweep.model.stepfit import ALPHA, StepFit, minimise

def _groups(points) -> dict[int, list[float]]:
    out: dict[int, list[float]] = {}
    for p in points:
        out.setdefault(p.depth, []).append(p.y)
    return out


def lack_of_fit(fitted: StepFit, alpha: float = ALPHA) -> Check:
    """The F-test of the curve against the replicates' own spread (see module doc)."""
    groups = _groups(fitted.points)
    m, n = len(groups), fitted.n
    pure = sum(sum((y - sum(v) / len(v)) ** 2 for y in v) for v in groups.values())
    df_lack, df_pure = m - 2, n - m
    figures = {"depths": m, "launches": n, "df_lack": df_lack, "df_pure": df_pure}
    if df_lack < 1 or df_pure < 1:
        why = ("fewer than three depths measured" if df_lack < 1
               else "no depth measured twice (the launch spread is not known apart from the fit)")
        return Check("lack_of_fit", None, f"not tested yet: {why}", figures)
    lack = max(0.0, fitted.rss - pure)
    if pure <= 1e-18:
        stat, p = (math.inf, 0.0) if lack > 1e-12 else (0.0, 1.0)
    else:
        stat = (lack / df_lack) / (pure / df_pure)
        p = f_sf(stat, df_lack, df_pure)
    figures.update(F=round(stat, 4) if math.isfinite(stat) else None, p_value=round(p, 6),
                   alpha=alpha)
    if p < alpha:
        return Check("lack_of_fit", False,
                     f"the measured launch means disagree with the fitted curve beyond the launch "
                     f"spread (F = {stat:.2f} on {df_lack} and {df_pure} df, p = {p:.3g} < {alpha:.2g}): a step "
                     "cost that jumps at some depth (a kernel path or graph-capture bucket switch)",
                     figures)
    return Check("lack_of_fit", True,
                 f"the launch means follow the fitted curve within the launch spread (F = "
                 f"{stat:.2f} on {df_lack} and {df_pure} df, p = {p:.2f})", figures)


def monotone_check(fitted: StepFit, alpha: float = ALPHA) -> Check:
    """Mean step time must not fall with depth beyond its spread."""
    groups = _groups(fitted.points)
    depths = sorted(groups)
    pure_df = fitted.n - len(groups)
    if pure_df >= 1:
        pure = sum(sum((y - sum(v) / len(v)) ** 2 for y in v) for v in groups.values())
        sigma, df = math.sqrt(pure / pure_df), pure_df
    else:
        sigma, df = fitted.sigma, fitted.df
    means = {d: sum(v) / len(v) for d, v in groups.items()}
    figures = {"mean_step_s": {str(d): round(math.exp(means[d]), 6) for d in depths}}
    pairs = [(a, b) for i, a in enumerate(depths) for b in depths[i + 1:]]
    if not sigma or df < 1 or not pairs:
        falling = [(a, b) for a, b in pairs if means[b] < means[a]]
        if falling and sigma == 0.0:
            a, b = falling[0]
            return Check("monotone", False, f"the step time falls from depth {a} to depth {b}",
                         figures)
        return Check("monotone", None, "not tested yet: no spread to judge a fall against", figures)
    crit = t_ppf(1.0 - alpha / len(pairs), df)
    for a, b in pairs:
        se = sigma * math.sqrt(1.0 / len(groups[a]) + 1.0 / len(groups[b]))
        if (means[a] - means[b]) / se > crit:
            return Check("monotone", False,
                         f"the step time falls from {math.exp(means[a]) * 1e3:.2f} ms at depth {a} to "
                         f"{math.exp(means[b]) * 1e3:.2f} ms at depth {b}, beyond the launch spread: "
                         "a kernel path or graph-capture bucket switch between them", figures)
    return Check("monotone", True, "the step time does not fall with depth", figures)


def _rss_with_factor(fitted: StepFit, flags: list[bool], slope: float) -> float:
    groups: dict[bool, list[float]] = {False: [], True: []}
    for p, flag in zip(fitted.points, flags):
        groups[flag].append(p.y - math.log1p(slope * p.x(fitted.shape)))
    return sum(sum((r - sum(v) / len(v)) ** 2 for r in v) for v in groups.values() if v)


def _best_rss(fitted: StepFit, flags: list[bool]) -> tuple[float, float]:
    """The alternative's smallest RSS and the slope at which it is reached."""
    slope = minimise(lambda s: _rss_with_factor(fitted, flags, s), rounds=24)
    return _rss_with_factor(fitted, flags, slope), slope


def jump_test(fitted: StepFit, alpha: float = ALPHA) -> Check:
    """The curve against a jump or a one-depth path switch (see module doc)."""
    depths = sorted({p.depth for p in fitted.points})
    n, m = fitted.n, len(depths)
    alternatives = [(f"jump from depth {d}", {k for k in depths if k >= d}) for d in depths[1:]]
    figures: dict = {"alternatives": len(alternatives), "launches": n}
    if m < 3 or n < 4:
        return Check("jump", None, "not tested yet: needs three depths and four launches", figures)
    best = None
    for name, members in alternatives:
        rss1, slope1 = _best_rss(fitted, [p.depth in members for p in fitted.points])
        df = n - 3
        if rss1 <= 1e-18:
            stat, p = (math.inf, 0.0) if fitted.rss > 1e-12 else (0.0, 1.0)
        else:
            stat = max(0.0, fitted.rss - rss1) / (rss1 / df)
            p = f_sf(stat, 1, df)
        if best is None or p < best[2]:
            best = (name, stat, p, members, slope1)
    assert best is not None
    name, stat, p, members, slope1 = best
    adjusted = min(1.0, p * len(alternatives))
    factor = _factor(fitted, members, slope1)
    figures.update(best=name, F=round(stat, 4) if math.isfinite(stat) else None,
                   p_value=round(p, 6), p_adjusted=round(adjusted, 6), alpha=alpha,
                   factor=round(factor, 4) if factor else None)
    if adjusted < alpha:
        return Check("jump", False,
                     f"the step time jumps: a free factor on {name} (×{factor:.2f}) fits the launches "
                     f"better than the smooth curve beyond the launch spread (F = {stat:.2f} on 1 and "
                     f"{n - 3} df, p = {adjusted:.3g} over {len(alternatives)} alternatives): a "
                     "kernel path or graph-capture bucket switch", figures)
    return Check("jump", True,
                 f"no jump or one-depth path switch fits better than the smooth curve (best: "
                 f"{name}, p = {adjusted:.2f} over {len(alternatives)} alternatives)", figures)


def _factor(fitted: StepFit, members: set[int], slope: float) -> float | None:
    """The step-time factor of an alternative at its own best slope (for the reason)."""
    inside = [p.y - math.log1p(slope * p.x(fitted.shape)) for p in fitted.points if p.depth in members]
    outside = [p.y - math.log1p(slope * p.x(fitted.shape)) for p in fitted.points
               if p.depth not in members]
    if not inside or not outside:
        return None
    return math.exp(sum(inside) / len(inside) - sum(outside) / len(outside))
