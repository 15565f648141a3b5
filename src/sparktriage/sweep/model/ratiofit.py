"""The step cost's slope from step times measured inside launches, and its check.

Each launch at depth k ≥ 1 whose drafter sometimes proposed nothing measures ρ_k, its verify
step's time over its plain step's (sweep.evidence.steptimes), free of the launch-to-launch spread,
with a standard error sd_k. The step curve (sweep.model.stepfit) says a verify step costs 1 + s·g(k)
plain steps (a launch whose steps draft at a share q has the mean step 1 + s·q·g(k)), so

    χ²(s) = Σ_j (log ρ_j − log(1 + s·g(k_j)))² / sd_j²

is minimised over s, and the slope's 95% set is {s : χ²(s) ≤ χ²_min + 3.84·φ}, φ = max(1,
χ²_min / (m − 1)) the overdispersion of m ratios (1 with one ratio). A slope known this well makes
the ranking of the depths (which depends on s alone, sweep.policy.model_rule) a matter of the
counts.

A launch whose drafter drafts at every step has no plain step; its two-stream phase measures
π_k, a step serving two sequences over a step serving one (sweep.evidence.pairtimes), whose curve is
(1 + s·g₂(k)) / (1 + s·g(k)) with g₂ the cost of both sequences' k + 1 tokens (points of kind
"pair"; at depth 0 too, where π = 1 + s·g₂(0)). The model reads pair points only where no launch
measured a verify ratio (sweep.model.depth).

Routing reuse ρ (sweep.model.stepfit): on an expert-union shape the slope and
ρ ∈ [0, REUSE_MAX] are fitted together on a grid of ρ (0.025 apart; s on a fine grid at each ρ,
then refined at the best ρ). A verify ratio sees 1 + s·g(k), and for 8 of 384 experts
g(k) ≈ (1 − ρ)·k: verify ratios alone cannot tell ρ from s. A pair ratio at depth 0,
π = 1 + s·g₂(0), does not depend on ρ (two tokens of two sequences), so pairs pin s, and ρ
follows from what a one-sequence step costs: the pair ratios at another depth, or the launches'
own step times (whose curve is log t0 + log(1 + s·q·g(k))), which weigh in as χ² terms
RSS(s, ρ) / σ², σ their spread around the best curve (at least 1%). So ρ is fitted where pair
points exist together with pair points at a second depth or launches at two depths; the set is
then {(s, ρ) : χ²(s, ρ) + RSS(s, ρ)/σ² ≤ its minimum + t²·φ} (t on the launches' n − 2 df).
Otherwise (verify ratios, or one pair and nothing to compare with) ρ stays at the profile's
value and its whole prior range enters the set (every ρ whose best s meets the same bound):
"not fitted, prior range kept". Each row of the set (ρ, s_low, s_high) widens the predictions
(sweep.model.stepfit.log_step_sd) and the decision (sweep.policy.model_rule). The `step_ratios`
check below then runs at the fitted ρ, and so do the launch-level checks (sweep.model.fitchecks), so
that real reuse does not read as lack of fit; ρ is bounded, so a cost that the ratios cannot see and
that makes the launches' steps dearer than the pairs say (ρ < 0) is still found.

`check` (`step_ratios`) rejects the model when the ratios disagree with the one-parameter curve
(χ²_min on m − 1 df: a verify step whose cost jumps at some width, which a launch-level fit
smooths over) or when the launches' own step times disagree with the curve at this slope beyond
the launch spread (F of the pinned fit against the free one, 1 and n − 2 df: a cost on every
speculative step that the ratios cannot see, such as the speculative path's own overhead).
"""

from __future__ import annotations

import math
from dataclasses import dataclass

import numpy as np

from sparktriage.stats.tdist import f_sf, t_ppf
from sparktriage.sweep.model.acceptance_model import Check
from sparktriage.sweep.model.stepfit import (REUSE_MAX, S_MAX, ReuseReading, StepFit, StepShape, edge,
                                       minimise, rss_at)

CHI2_95_1DF = 3.841459
REUSE_GRID = tuple(round(0.025 * i, 3) for i in range(int(round(REUSE_MAX / 0.025)) + 1))
LAUNCH_SD_FLOOR = 0.01  # the launches' log step times weigh in with σ at least this (1%)
_S = np.concatenate(([0.0], np.geomspace(0.002, S_MAX, 320)))


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
class RatioFit(ReuseReading):
    shape: StepShape  # at the fitted ρ
    points: tuple[RatioPoint, ...]
    slope: float
    low: float
    high: float
    chi2: float
    region: tuple[tuple[float, float, float], ...] = ()  # rows (ρ, s_low, s_high) of the set
    reuse_fitted: bool = False  # ρ told apart from s (module doc)

    @property
    def df(self) -> int:
        """The ratios' own df (ρ leans on the launches where any were weighed in: m − 1)."""
        return len(self.points) - 1

    def allowed(self, point: RatioPoint) -> tuple[float, float]:
        """The lowest and highest ratio the curve gives at `point` over the set."""
        rows = self.region or ((self.reuse, self.low, self.high),)
        values = [math.exp(point.curve(self.shape.at(rho), s))
                  for rho, a, b in rows for s in (a, b)]
        return min(values), max(values)

    def as_dict(self) -> dict:
        return {"slope": self.slope, "slope_ci95": [self.low, self.high],
                "routing_reuse": self.reuse if self.shape.reusable else None,
                "routing_reuse_ci95": list(self.reuse_range) if self.shape.reusable else None,
                "routing_reuse_fitted": self.reuse_fitted,
                "chi2": round(self.chi2, 4), "df": self.df,
                "ratios": [{"label": p.label, "depth": p.depth, "kind": p.kind,
                            "ratio": round(math.exp(p.y), 5), "log_sd": round(p.sd, 5),
                            "curve": round(math.exp(p.curve(self.shape, self.slope)), 5)}
                           for p in self.points]}


def chi2_at(points: tuple[RatioPoint, ...], shape: StepShape, slope: float) -> float:
    return sum(((p.y - p.curve(shape, slope)) / p.sd) ** 2 for p in points)


def _grid(pts: tuple[RatioPoint, ...], shape: StepShape) -> np.ndarray:
    """χ² over the slope grid _S at this shape's ρ."""
    g1 = np.array([shape.g(p.depth) for p in pts])
    g2 = np.array([shape.g(p.depth, 2) for p in pts])
    pair = np.array([p.kind == "pair" for p in pts])
    y = np.array([p.y for p in pts])
    sd = np.array([p.sd for p in pts])
    one = np.log1p(_S[:, None] * g1[None, :])
    curve = np.where(pair[None, :], np.log1p(_S[:, None] * g2[None, :]) - one, one)
    return (((y[None, :] - curve) / sd[None, :]) ** 2).sum(axis=1)


def _span(chi: np.ndarray, limit: float) -> tuple[float, float] | None:
    """The ends of {s : χ²(s) ≤ limit} on the grid, interpolated between grid points."""
    inside = np.nonzero(chi <= limit)[0]
    if not len(inside):
        return None
    i, j = int(inside[0]), int(inside[-1])

    def cross(a: int, b: int) -> float:  # a inside, b outside
        if chi[b] == chi[a]:
            return float(_S[a])
        t = (limit - chi[a]) / (chi[b] - chi[a])
        return float(_S[a] + t * (_S[b] - _S[a]))

    return (float(_S[0]) if i == 0 else cross(i, i - 1),
            float(_S[-1]) if j == len(_S) - 1 else cross(j, j + 1))


def _launch_grid(launches: tuple, shape: StepShape) -> np.ndarray:
    """The launches' RSS over the slope grid _S at this shape's ρ (log t0 profiled out)."""
    x = np.array([p.share * shape.g(p.depth) for p in launches])
    y = np.array([p.y for p in launches])
    resid = y[None, :] - np.log1p(_S[:, None] * x[None, :])
    return ((resid - resid.mean(axis=1, keepdims=True)) ** 2).sum(axis=1)


def identifies_reuse(pts: tuple[RatioPoint, ...], shape: StepShape, launches: tuple = ()) -> bool:
    """Whether routing reuse can be told apart from the slope (module doc): pair points and, to
    compare with, pair points at a second depth or launches at two depths with a spread."""
    if not shape.reusable or not any(p.kind == "pair" for p in pts):
        return False
    return (len({p.depth for p in pts if p.kind == "pair"}) >= 2
            or (len(launches) >= 3 and len({p.depth for p in launches}) >= 2))


def fit(points: list[RatioPoint], shape: StepShape, launches: tuple = ()) -> RatioFit | None:
    """The slope, and routing reuse where it can be told (module doc), from the ratios and, for
    reuse, the launches' step times (`launches`: sweep.model.stepfit.StepPoint). None without any
    informative ratio."""
    pts = tuple(p for p in points if p.informative(shape))
    if not pts:
        return None
    fitted = identifies_reuse(pts, shape, launches)
    rows = REUSE_GRID if shape.reusable else (shape.correlation,)
    grids = {rho: _grid(pts, shape.at(rho)) for rho in rows}
    if shape.reusable and shape.correlation not in grids:
        grids[shape.correlation] = _grid(pts, shape)
    weight = 0.0  # 1 / σ² of the launches' log step times (0: the ratios alone)
    spread = {}
    if fitted and len(launches) >= 3 and len({p.depth for p in launches}) >= 2:
        spread = {rho: _launch_grid(launches, shape.at(rho)) for rho in grids}
        least = min(float(v.min()) for v in spread.values())
        weight = 1.0 / max(least / (len(launches) - 2), LAUNCH_SD_FLOOR ** 2)
    total = {rho: grids[rho] + weight * spread[rho] if weight else grids[rho] for rho in grids}
    rho = min(total, key=lambda r: float(total[r].min())) if fitted else shape.correlation
    best = shape.at(rho)
    if weight:
        loss = lambda s: (chi2_at(pts, best, s)  # noqa: E731
                          + weight * rss_at(launches, best, s)[0])
    else:
        loss = lambda s: chi2_at(pts, best, s)  # noqa: E731
    slope = minimise(loss)
    chi2 = chi2_at(pts, best, slope)
    df = len(pts) - (2 if fitted and not weight else 1)
    phi = max(1.0, chi2 / df) if df >= 1 else 1.0
    least = loss(slope)
    # with the launches weighed in, their spread is estimated (n − 2 df): t² instead of 3.84
    crit = t_ppf(0.975, len(launches) - 2) ** 2 if weight else CHI2_95_1DF
    limit = least + crit * phi
    low, high = edge(loss, slope, 0.0, limit), edge(loss, slope, S_MAX, limit)
    region = [(rho, low, high)]
    if shape.reusable:
        for other in sorted(total):
            span = _span(total[other], limit) if other != rho else None
            if span is not None:
                region.append((other, *span))
    return RatioFit(best, pts, slope, low, high, chi2, tuple(sorted(region)), fitted)


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
