"""The step cost's slope from step times measured inside launches, and its check.

Each launch at depth k ≥ 1 whose drafter sometimes proposed nothing measures ρ_k, its verify
step's time over its plain step's (sweep.steptimes), free of the launch-to-launch spread, with a
standard error sd_k. The step curve (sweep.stepfit) says a verify step costs 1 + s·g(k) plain
steps (a launch whose steps draft at a share q has the mean step 1 + s·q·g(k)), so

    χ²(s) = Σ_j (log ρ_j − log(1 + s·g(k_j)))² / sd_j²

is minimised over s, and the slope's 95% set is {s : χ²(s) ≤ χ²_min + 3.84·φ}, φ = max(1,
χ²_min / (m − 1)) the overdispersion of m ratios (1 with one ratio). A slope known this well makes
the ranking of the depths (which depends on s alone, sweep.model_rule) a matter of the counts.

A launch whose drafter drafts at every step has no plain step; its two-stream phase measures
π_k, a step serving two sequences over a step serving one (sweep.pairtimes), whose curve is
(1 + s·g₂(k)) / (1 + s·g(k)) with g₂ the cost of both sequences' k + 1 tokens (points of kind
"pair"; at depth 0 too, where π = 1 + s·g₂(0)). The model reads pair points only where no launch
measured a verify ratio (sweep.model).

`check` (`step_ratios`) rejects the model when the ratios disagree with the one-parameter curve
(χ²_min on m − 1 df: a verify step whose cost jumps at some width, which a launch-level fit
smooths over) or when the launches' own step times disagree with the curve at this slope beyond
the launch spread (F of the pinned fit against the free one, 1 and n − 2 df: a cost on every
speculative step that the ratios cannot see, such as the speculative path's own overhead).
"""

from __future__ import annotations

import math
from dataclasses import dataclass

from sparktriage.stats.tdist import f_sf
from sparktriage.sweep.acceptance_model import Check
from sparktriage.sweep.stepfit import S_MAX, StepFit, StepShape, edge, minimise, rss_at

CHI2_95_1DF = 3.841459


@dataclass(frozen=True)
class RatioPoint:
    """One launch's log ρ at its depth and its sd; `kind` "verify" (a verify step over a plain
    step) or "pair" (a step of two streams over a step of one, at the launch's depth)."""

    label: str
    depth: int
    y: float
    sd: float
    kind: str = "verify"

    def curve(self, shape: StepShape, slope: float) -> float:
        """log ρ the one-parameter curve gives at `slope`."""
        one = math.log1p(slope * shape.g(self.depth))
        if self.kind == "pair":
            return math.log1p(slope * shape.g(self.depth, 2)) - one
        return one

    def informative(self, shape: StepShape) -> bool:
        """Whether the ratio moves with the slope (a verify ratio at depth 0 does not)."""
        if self.sd <= 0:
            return False
        if self.kind == "pair":
            return shape.g(self.depth, 2) > shape.g(self.depth)
        return self.depth > 0 and shape.g(self.depth) > 0


@dataclass(frozen=True)
class RatioFit:
    shape: StepShape
    points: tuple[RatioPoint, ...]
    slope: float
    low: float
    high: float
    chi2: float

    @property
    def df(self) -> int:
        return len(self.points) - 1

    def as_dict(self) -> dict:
        return {"slope": self.slope, "slope_ci95": [self.low, self.high],
                "chi2": round(self.chi2, 4), "df": self.df,
                "ratios": [{"label": p.label, "depth": p.depth, "kind": p.kind,
                            "ratio": round(math.exp(p.y), 5), "log_sd": round(p.sd, 5),
                            "curve": round(math.exp(p.curve(self.shape, self.slope)), 5)}
                           for p in self.points]}


def chi2_at(points: tuple[RatioPoint, ...], shape: StepShape, slope: float) -> float:
    return sum(((p.y - p.curve(shape, slope)) / p.sd) ** 2 for p in points)


def fit(points: list[RatioPoint], shape: StepShape) -> RatioFit | None:
    """The slope from the ratios (None without any)."""
    pts = tuple(p for p in points if p.informative(shape))
    if not pts:
        return None
    loss = lambda s: chi2_at(pts, shape, s)  # noqa: E731
    slope = minimise(loss)
    chi2 = loss(slope)
    phi = max(1.0, chi2 / (len(pts) - 1)) if len(pts) > 1 else 1.0
    limit = chi2 + CHI2_95_1DF * phi
    return RatioFit(shape, pts, slope, edge(loss, slope, 0.0, limit),
                    edge(loss, slope, S_MAX, limit), chi2)


def chi2_sf(x: float, k: int) -> float:
    """P(χ²_k > x): the regularized upper incomplete gamma Q(k/2, x/2)."""
    if x <= 0:
        return 1.0
    a, z = k / 2.0, x / 2.0
    lead = math.exp(-z + a * math.log(z) - math.lgamma(a))
    if z < a + 1.0:  # series for P, then Q = 1 − P
        term = total = 1.0 / a
        n = a
        for _ in range(500):
            n += 1.0
            term *= z / n
            total += term
            if abs(term) < abs(total) * 1e-15:
                break
        return max(0.0, 1.0 - total * lead)
    b, c, d = z + 1.0 - a, 1.0 / 1e-300, 1.0 / (z + 1.0 - a)  # continued fraction for Q
    h = d
    for i in range(1, 500):
        an = -i * (i - a)
        b += 2.0
        d = an * d + b
        d = 1e-300 if abs(d) < 1e-300 else d
        c = b + an / c
        c = 1e-300 if abs(c) < 1e-300 else c
        d = 1.0 / d
        delta = d * c
        h *= delta
        if abs(delta - 1.0) < 1e-15:
            break
    return min(1.0, lead * h)


def _named(point: RatioPoint) -> str:
    if point.kind == "pair":
        return f"depth {point.depth}, two streams over one,"
    return f"depth {point.depth}"


def check(ratios: RatioFit, free: StepFit | None, alpha: float) -> Check:
    """`step_ratios`: the ratios against the curve, and the launches against the ratios' slope
    (module doc); Bonferroni over the two tests."""
    figures: dict = {"ratios": len(ratios.points), "chi2": round(ratios.chi2, 4),
                     "df": ratios.df, "slope": round(ratios.slope, 5), "alpha": alpha}
    level = alpha / 2.0
    if ratios.df >= 1:
        p = chi2_sf(ratios.chi2, ratios.df)
        figures["p_value"] = round(p, 6)
        if p < level:
            worst = max(ratios.points, key=lambda q: abs(q.y - q.curve(ratios.shape,
                                                                        ratios.slope)) / q.sd)
            return Check("step_ratios", False,
                         f"the step time ratios measured inside the launches do not follow one "
                         f"step-cost curve (χ² = {ratios.chi2:.1f} on {ratios.df} df, "
                         f"p = {p:.3g}; furthest: {_named(worst)} at "
                         f"×{math.exp(worst.y):.3f} against ×"
                         f"{math.exp(worst.curve(ratios.shape, ratios.slope)):.3f}): a kernel "
                         "path or graph-capture bucket switch at some width", figures)
    if free is not None and free.df >= 1 and free.rss > 1e-18:
        pinned_rss = rss_at(free.points, free.shape, ratios.slope)[0]
        stat = max(0.0, pinned_rss - free.rss) / (free.rss / free.df)
        p = f_sf(stat, 1, free.df)
        figures.update(agreement_F=round(stat, 4), agreement_p=round(p, 6),
                       launch_slope=round(free.slope, 5))
        if p < level:
            return Check("step_ratios", False,
                         f"the launches' step times disagree with the slope measured inside them "
                         f"({ratios.slope:.3g} inside, {free.slope:.3g} across launches; F = "
                         f"{stat:.2f} on 1 and {free.df} df, p = {p:.3g}): a cost on every "
                         "speculative step that the ratios cannot see", figures)
    return Check("step_ratios", True,
                 f"{len(ratios.points)} step-time ratio(s) measured inside launches follow the "
                 f"curve, and the launches agree with their slope {ratios.slope:.3g} "
                 f"({ratios.low:.3g}-{ratios.high:.3g}, 95%)", figures)
