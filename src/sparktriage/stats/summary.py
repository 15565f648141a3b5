"""Summaries of a sample: mean with a t-interval, median, MAD, and launch-level aggregation.

Definitions (docs/metrics.md): the 95% interval is mean ± t(0.975, n-1) · s/√n with s the
sample standard deviation (n-1 denominator); MAD is the raw median absolute deviation from the
median (no 1.4826 scaling). Across launches the launch is the unit of replication: the interval
is over launch means, and the within- and between-launch variances are reported beside it.
"""

from __future__ import annotations

import math
from dataclasses import asdict, dataclass
from statistics import median

from sparktriage.stats.tdist import t_ppf


@dataclass(frozen=True)
class Summary:
    """Mean, 95% t-interval, median, MAD, standard deviation and size of one sample."""

    n: int
    mean: float | None
    ci95_low: float | None
    ci95_high: float | None
    median: float | None
    mad: float | None
    stdev: float | None
    min: float | None
    max: float | None

    def as_dict(self) -> dict:
        return asdict(self)


def _stdev(values: list[float], mean: float) -> float | None:
    if len(values) < 2:
        return None
    return math.sqrt(sum((v - mean) ** 2 for v in values) / (len(values) - 1))


def t_interval(values: list[float], confidence: float = 0.95) -> tuple[float, float] | None:
    """Two-sided t-interval of the mean; None with fewer than two values."""
    n = len(values)
    if n < 2:
        return None
    mean = sum(values) / n
    sd = _stdev(values, mean) or 0.0
    half = t_ppf(0.5 + confidence / 2.0, n - 1) * sd / math.sqrt(n)
    return mean - half, mean + half


def summarize(values: list[float]) -> Summary:
    """Summary of finite values; an empty sample gives n=0 and None everywhere."""
    clean = [float(v) for v in values if v is not None and math.isfinite(v)]
    n = len(clean)
    if n == 0:
        return Summary(0, None, None, None, None, None, None, None, None)
    mean = sum(clean) / n
    med = median(clean)
    mad = median(abs(v - med) for v in clean)
    interval = t_interval(clean)
    low, high = interval if interval else (None, None)
    return Summary(n, mean, low, high, med, mad, _stdev(clean, mean), min(clean), max(clean))


@dataclass(frozen=True)
class LaunchAggregate:
    """Across launches: mean of launch means with its interval, and the variance split."""

    launches: int
    across: Summary
    within_variance: float | None
    between_variance: float | None
    stable: bool
    reasons: tuple[str, ...]
    notes: tuple[str, ...]

    def as_dict(self) -> dict:
        out = asdict(self)
        out["across"] = self.across.as_dict()
        out["reasons"] = list(self.reasons)
        out["notes"] = list(self.notes)
        return out


def aggregate_launches(samples: list[list[float]]) -> LaunchAggregate:
    """Aggregate per-launch samples with the launch as the unit of replication.

    Stability: launches disagree when the spread of launch means is larger than their
    within-launch spread predicts (between-launch variance of the means above
    within-variance / n per launch, by more than a factor 4, i.e. twice the standard error),
    or when one launch's interval does not overlap the interval of the others' pooled mean.
    """
    per_launch = [summarize(s) for s in samples]
    used = [s for s in per_launch if s.n > 0 and s.mean is not None]
    across = summarize([s.mean for s in used])
    reasons: list[str] = []
    within = None
    between = None
    if used:
        variances = [s.stdev**2 for s in used if s.stdev is not None]
        within = sum(variances) / len(variances) if variances else None
    if len(used) >= 2:
        between = across.stdev**2 if across.stdev is not None else None
        mean_n = sum(s.n for s in used) / len(used)
        expected = (within or 0.0) / mean_n if mean_n else 0.0
        if between is not None and between > 4.0 * expected and between > 0:
            ratio = math.sqrt(between / expected) if expected > 0 else math.inf
            reasons.append(
                f"launch means spread {ratio:.1f}x more than within-launch noise predicts "
                f"(sd of launch means {math.sqrt(between):.3g}); the launch, not the request, "
                "sets the uncertainty: run more launches"
            )
    notes = ("one launch only: launch-to-launch variation is unknown",) if len(used) == 1 else ()
    return LaunchAggregate(len(used), across, within, between, not reasons, tuple(reasons), notes)
