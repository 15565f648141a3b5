"""The cost of an engine step at depth k, fitted to every launch's measured step time.

A launch's step time is its tokens per engine step (its counts, sweep.evidence.counts; 1 at depth 0)
over its delivered decode rate: the mean time between two engine steps as the client sees it
(with one stream each step sends one chunk). The curve has two parameters:

    step(k) = t0 · (1 + s · g(k))

t0 the plain decode step, s the cost of the extra verified tokens relative to it. The shape g is
fixed by the model profile (`StepShape`): for a mixture-of-experts target the verify step of
k + 1 tokens reads the union of their routed experts, g(k) = r(k + 1) − 1 with r the expert-union
ratio (roofline.experts, routing correlation from the profile); for a dense target or without
a profile g(k) = k (a fixed cost per verified token). On log step times the launch-to-launch
spread is one relative error σ at every depth: log step_j = log t0 + log(1 + s·g(k_j)) + ε_j.

Fit: least squares over s ∈ [0, S_MAX] (log t0 profiled out); σ² = RSS / (n − 2). The 95%
confidence set of s is {s : RSS(s) ≤ RSS_min · (1 + t²_{n−2} / (n − 2))} (the profile
likelihood's F form), found by bisection on each side of the minimum.

Routing reuse ρ: the share of a token's routed experts that the previous token of the
same sequence already picked, the expert union's correlation (roofline.experts), bounded to
[0, REUSE_MAX]. It is fitted from the step-time ratios measured inside launches
(sweep.model.ratiofit), where a step of two sequences, which route independently of each other, and
a step of one tell it apart from the slope; the fit then uses the shape at the fitted ρ and its
confidence set is a `region` of rows (ρ, s_low, s_high) over every ρ the ratios allow. Launch
step times alone cannot tell ρ from s (for 8 of 384 experts g(k) ≈ (1 − ρ)·k): the free fit
keeps ρ's prior range as rows at both ends of [0, REUSE_MAX]. Every prediction's interval and
the decision (sweep.policy.model_rule, over `candidates()`) take in every (s, ρ) of the region.

The tests of the curve against the launches are in sweep.model.fitchecks.
"""

from __future__ import annotations

import math
from dataclasses import dataclass, replace
from functools import cached_property, lru_cache
from typing import Callable

from sparktriage.roofline import experts as expert_union
from sparktriage.stats.tdist import t_ppf

S_MAX = 20.0
ALPHA = 0.05
REUSE_MAX = 0.6  # routing reuse's prior range is [0, REUSE_MAX]
PRIOR_ROWS = (0.0, REUSE_MAX)  # the rows a fit that cannot tell ρ keeps beside its own
_GRID = (0.0,) + tuple(0.002 * 1.3 ** i for i in range(36))  # 0.002 .. ~20


@dataclass(frozen=True)
class StepShape:
    """g(k): how the verify step's cost grows with depth (linear, or the expert union)."""

    kind: str = "linear"  # linear | expert-union
    experts: int | None = None
    experts_per_token: int | None = None
    correlation: float = 0.0
    profile: str | None = None

    def g(self, depth: int, streams: int = 1) -> float:
        """The extra cost of a step verifying depth + 1 tokens of each of `streams` sequences,
        in units of s (0 for one plain step)."""
        if self.kind == "expert-union" and self.experts and self.experts_per_token:
            return _union_g(self.experts, self.experts_per_token, self.correlation, depth, streams)
        return float(streams * (depth + 1) - 1)

    @property
    def reusable(self) -> bool:
        """Whether routing reuse changes g (an expert-union shape)."""
        return self.kind == "expert-union" and bool(self.experts and self.experts_per_token)

    def at(self, reuse: float) -> "StepShape":
        """The shape at routing reuse `reuse` (itself where reuse does not apply)."""
        return replace(self, correlation=reuse) if self.reusable else self

    def as_dict(self) -> dict:
        return {"kind": self.kind, "profile": self.profile, "experts": self.experts,
                "experts_per_token": self.experts_per_token, "routing_correlation": self.correlation}


@lru_cache(maxsize=1024)
def _union_g(experts: int, per_token: int, correlation: float, depth: int, streams: int) -> float:
    return expert_union.ratio(experts, per_token, depth + 1, correlation, streams) - 1.0


@dataclass(frozen=True)
class StepPoint:
    """One launch's step time (seconds) at its depth."""

    label: str
    depth: int
    step_s: float
    share: float = 1.0  # q: the share of its steps that drafted (the rest are plain steps)

    @cached_property
    def y(self) -> float:
        return math.log(self.step_s)

    def x(self, shape: "StepShape") -> float:
        """q·g(k): the launch's mean step is t0·(1 + s·q·g(k)) (plain steps cost t0)."""
        return self.share * shape.g(self.depth)


class ReuseReading:
    """What a fit over (s, ρ) says of routing reuse, for the fits that carry a `shape` at the
    fitted ρ and a 95% `region` of rows (ρ, s_low, s_high): StepFit and ratiofit.RatioFit."""

    shape: StepShape
    region: tuple[tuple[float, float, float], ...]

    @property
    def reuse(self) -> float:
        return self.shape.correlation

    @property
    def reuse_range(self) -> tuple[float, float]:
        rows = [r[0] for r in self.region] or [self.reuse]
        return min(rows), max(rows)


@dataclass(frozen=True)
class StepFit(ReuseReading):
    """The fitted curve, its spread and the confidence set of its slope."""

    shape: StepShape
    points: tuple[StepPoint, ...]
    slope: float
    log_t0: float
    rss: float
    slope_low: float | None
    slope_high: float | None
    pinned: bool = False  # the slope and its set come from the step times inside launches
    # the 95% set over (s, ρ): rows (ρ, s_low, s_high); empty: s's set at the shape's ρ alone
    region: tuple[tuple[float, float, float], ...] = ()
    reuse_fitted: bool = False  # ρ fitted from ratios (else its prior range is kept in `region`)

    def candidates(self, grid: int = 24) -> list[tuple[float, float]]:
        """(s, ρ) points spanning the 95% set: the slope's set at the fitted ρ on a grid of
        `grid` steps, and each other row's ends and middle (a depth's log step, and two depths'
        difference, are monotone in s at a given ρ)."""
        lo = self.slope if self.slope_low is None else self.slope_low
        hi = self.slope if self.slope_high is None else self.slope_high
        out = {(self.slope, self.reuse), *((lo + (hi - lo) * i / grid, self.reuse)
                                          for i in range(grid + 1))}
        rows = sorted(self.region)
        for n, (rho, a, b) in enumerate(rows):  # the ends of ρ's range, and every 0.1 between
            if rho != self.reuse and (n in (0, len(rows) - 1)
                                      or abs(rho * 10 - round(rho * 10)) < 1e-6):
                out.update({(a, rho), (0.5 * (a + b), rho), (b, rho)})
        return sorted(out)

    @property
    def n(self) -> int:
        return len(self.points)

    @property
    def df(self) -> int:
        return self.n - (1 if self.pinned else 2)

    @property
    def sigma(self) -> float | None:
        return math.sqrt(self.rss / self.df) if self.df > 0 else None

    def log_h(self, depth: int, slope: float | tuple[float, float] | None = None,
              share: float = 1.0) -> float:
        """log mean step at `depth` over a plain step, `share` of its steps drafting; `slope`
        another s, or an (s, ρ) point of the region."""
        if isinstance(slope, tuple):
            return math.log1p(slope[0] * share * self.shape.at(slope[1]).g(depth))
        return math.log1p((self.slope if slope is None else slope) * share * self.shape.g(depth))

    def log_h_span(self, depth: int, share: float = 1.0) -> float:
        """The range of log_h at `depth` over the region's rows (0 without one)."""
        if not self.region:
            return 0.0
        values = [self.log_h(depth, (s, rho), share) for rho, a, b in self.region for s in (a, b)]
        return max(values) - min(values)

    def step_s(self, depth: int, share: float = 1.0) -> float:
        return math.exp(self.log_t0 + self.log_h(depth, None, share))

    def log_step_sd(self, depth: int, share: float = 1.0) -> float | None:
        """Delta-method sd of the fitted log step time at `depth` (None without spread)."""
        sigma = self.sigma
        if sigma is None:
            return None
        x_d = share * self.shape.g(depth)
        if self.pinned:  # log t0 from the launches, the slope's error from its set (≈ ±1.96 sd)
            g = x_d / (1.0 + self.slope * x_d)
            slope_sd = ((self.slope_high or self.slope) - (self.slope_low or self.slope)) / 3.92
            curve_sd = max(g * slope_sd, self.log_h_span(depth, share) / 3.92)  # ρ's rows too
            return math.sqrt(sigma * sigma / self.n + curve_sd ** 2)
        rows = [(1.0, p.x(self.shape) / (1.0 + self.slope * p.x(self.shape))) for p in self.points]
        a = sum(1.0 for _ in rows)
        b = sum(r[1] for r in rows)
        c = sum(r[1] * r[1] for r in rows)
        det = a * c - b * b
        g = x_d / (1.0 + self.slope * x_d)
        if det <= 1e-12:  # slope not identified: the depths measured cannot tell it
            return sigma * math.sqrt(1.0 / a) if depth == 0 else None
        var = (c - 2.0 * b * g + a * g * g) / det  # [1 g] (JᵀJ)⁻¹ [1 g]ᵀ
        return max(sigma * math.sqrt(max(0.0, var)), self.log_h_span(depth, share) / 3.92)

    def as_dict(self) -> dict:
        return {"shape": self.shape.as_dict(), "t0_s": math.exp(self.log_t0),
                "slope": self.slope, "slope_ci95": ([self.slope_low, self.slope_high]
                                                    if self.slope_low is not None else None),
                "sigma": self.sigma, "df": self.df, "launches": self.n,
                "slope_from": ("step times inside launches (sweep.steptimes)" if self.pinned
                               else "launch step times"),
                "routing_reuse": self.reuse if self.shape.reusable else None,
                "routing_reuse_ci95": list(self.reuse_range) if self.shape.reusable else None,
                "routing_reuse_from": self._reuse_from()}

    def _reuse_from(self) -> str | None:
        if not self.shape.reusable:
            return None
        if self.reuse_fitted:
            return ("fitted to the two-stream ratios measured inside launches and the launches' "
                    "step times")
        what = "the ratios measured" if self.pinned else "launch step times"
        return (f"not fitted (too little evidence: {what} cannot tell it from the slope); its "
                f"prior range 0-{REUSE_MAX:g} is kept in every interval")


def rss_at(points: tuple[StepPoint, ...], shape: StepShape, slope: float) -> tuple[float, float]:
    """Residual sum of squares and log t0 at a given slope (log t0 profiled out)."""
    residuals = [p.y - math.log1p(slope * p.x(shape)) for p in points]
    log_t0 = sum(residuals) / len(residuals)
    return sum((r - log_t0) ** 2 for r in residuals), log_t0


def minimise(loss: Callable[[float], float], rounds: int = 48) -> float:
    """The slope in [0, S_MAX] that minimises `loss`: the best point of a geometric grid, then a
    golden-section search between its neighbours."""
    values = [loss(s) for s in _GRID]
    i = min(range(len(_GRID)), key=values.__getitem__)
    a, b = _GRID[max(0, i - 1)], _GRID[min(len(_GRID) - 1, i + 1)]
    ratio = (math.sqrt(5.0) - 1.0) / 2.0
    for _ in range(rounds):
        c, d = b - ratio * (b - a), a + ratio * (b - a)
        if loss(c) <= loss(d):
            b = d
        else:
            a = c
    best = 0.5 * (a + b)
    return best if loss(best) <= values[i] else _GRID[i]


def edge(loss: Callable[[float], float], inside: float, outside: float, limit: float) -> float:
    """The end of {s : loss(s) ≤ limit} between `inside` (in the set) and `outside`, by bisection."""
    if loss(outside) <= limit:
        return outside
    for _ in range(40):
        mid = 0.5 * (inside + outside)
        if loss(mid) <= limit:
            inside = mid
        else:
            outside = mid
    return inside


def _minimise(points, shape) -> float:
    return minimise(lambda s: rss_at(points, shape, s)[0])


def _edge(points, shape, inside: float, outside: float, limit: float) -> float:
    return edge(lambda s: rss_at(points, shape, s)[0], inside, outside, limit)


def fit(points: list[StepPoint], shape: StepShape, prior: bool = True) -> StepFit | None:
    """Fit the curve to the launches' step times (None with fewer than two depths). `prior`:
    keep routing reuse's prior range as rows of the region (module doc); off where the ratios
    fit ρ (the fit is then at their ρ, sweep.model.depth)."""
    pts = tuple(points)
    if len({p.depth for p in pts}) < 2:
        return None
    slope = _minimise(pts, shape)
    rss, log_t0 = rss_at(pts, shape, slope)
    low = high = None
    df = len(pts) - 2
    region: tuple = ()
    if df >= 1:
        limit = rss * (1.0 + t_ppf(1.0 - ALPHA / 2.0, df) ** 2 / df)
        low, high = _edge(pts, shape, slope, 0.0, limit), _edge(pts, shape, slope, S_MAX, limit)
        if prior and shape.reusable:
            region = ((shape.correlation, low, high),) + _prior_rows(pts, shape, limit)
    return StepFit(shape, pts, slope, log_t0, rss, low, high, region=region)


def _prior_rows(pts, shape: StepShape, limit: float) -> tuple:
    """Rows (ρ, s_low, s_high) of the set at the ends of ρ's prior range."""
    rows = []
    for rho in PRIOR_ROWS:
        if rho == shape.correlation:
            continue
        other = shape.at(rho)
        best = _minimise(pts, other)
        if rss_at(pts, other, best)[0] <= limit:
            rows.append((rho, _edge(pts, other, best, 0.0, limit),
                         _edge(pts, other, best, S_MAX, limit)))
    return tuple(rows)


def pinned(points: tuple[StepPoint, ...], shape: StepShape, slope: float, low: float,
           high: float, region: tuple = (), reuse_fitted: bool = False) -> StepFit:
    """The curve with its slope (and the slope's 95% set) measured inside launches
    (sweep.model.ratiofit), `shape` at the ratios' ρ and `region` their set over (s, ρ): log t0 and
    the launch spread fitted to the launches at that slope."""
    rss, log_t0 = rss_at(points, shape, slope)
    return StepFit(shape, points, slope, log_t0, rss, low, high, True, region, reuse_fitted)


def with_point(fitted: StepFit, depth: int, share: float = 1.0) -> StepFit:
    """The fit as it would be after one more launch at `depth` landing on the curve (the
    allocation's look-ahead: same slope and RSS, one more degree of freedom, more leverage)."""
    extra = StepPoint("next", depth, fitted.step_s(depth, share), share)
    pts = fitted.points + (extra,)
    if fitted.pinned:  # the set is the inside-launch one; one more launch hardly moves it
        return replace(fitted, points=pts)
    low = high = None
    df = len(pts) - 2
    region: tuple = ()
    if df >= 1:
        limit = fitted.rss * (1.0 + t_ppf(1.0 - ALPHA / 2.0, df) ** 2 / df)
        low = _edge(pts, fitted.shape, fitted.slope, 0.0, limit)
        high = _edge(pts, fitted.shape, fitted.slope, S_MAX, limit)
        if fitted.region and fitted.slope_low is not None and fitted.slope_high is not None:
            # the prior rows shrink as the fitted row does (a look-ahead, not a refit)
            old = max(fitted.slope_high - fitted.slope_low, 1e-12)
            shrink = (high - low) / old
            region = tuple((rho, 0.5 * (a + b) - 0.5 * (b - a) * shrink,
                            0.5 * (a + b) + 0.5 * (b - a) * shrink)
                           if rho != fitted.reuse else (rho, low, high)
                           for rho, a, b in fitted.region)
    return StepFit(fitted.shape, pts, fitted.slope, fitted.log_t0, fitted.rss, low, high,
                   region=region)
