"""Compare two configurations with the launch as the unit of replication.

Welch's t-test on launch means (unequal variances, Welch–Satterthwaite degrees of freedom),
the difference of means with its 95% interval, and a plain-words verdict that says "not
significant" out loud when the interval includes zero (pyperf's habit). Launches whose
checked metadata differ must not be pooled: `check_poolable` says why they cannot be.
"""

from __future__ import annotations

import math
from dataclasses import asdict, dataclass

from sparktriage.stats.tdist import t_cdf, t_ppf


@dataclass(frozen=True)
class Comparison:
    """B relative to A over launch means."""

    n_a: int
    n_b: int
    mean_a: float | None
    mean_b: float | None
    difference: float | None  # mean_b - mean_a
    ci95_low: float | None
    ci95_high: float | None
    relative: float | None  # difference / mean_a
    df: float | None
    p_value: float | None
    significant: bool
    verdict: str

    def as_dict(self) -> dict:
        return asdict(self)


def _mean_var(values: list[float]) -> tuple[float, float | None]:
    mean = sum(values) / len(values)
    if len(values) < 2:
        return mean, None
    return mean, sum((v - mean) ** 2 for v in values) / (len(values) - 1)


def welch(a: list[float], b: list[float], alpha: float = 0.05) -> Comparison:
    """Welch's two-sample t-test of B against A (values are launch means)."""
    a = [float(v) for v in a if v is not None and math.isfinite(v)]
    b = [float(v) for v in b if v is not None and math.isfinite(v)]
    if not a or not b:
        return Comparison(len(a), len(b), None, None, None, None, None, None, None, None, False,
                          "cannot compare: a side has no measured launch")
    mean_a, var_a = _mean_var(a)
    mean_b, var_b = _mean_var(b)
    diff = mean_b - mean_a
    relative = diff / mean_a if mean_a else None
    if var_a is None or var_b is None:
        return Comparison(len(a), len(b), mean_a, mean_b, diff, None, None, relative, None, None,
                          False, "not significant: at least two launches per side are needed")
    se2_a, se2_b = var_a / len(a), var_b / len(b)
    se = math.sqrt(se2_a + se2_b)
    if se == 0.0:
        significant = diff != 0.0
        verdict = "identical" if not significant else "different (no spread within either side)"
        return Comparison(len(a), len(b), mean_a, mean_b, diff, diff, diff, relative, None,
                          0.0 if significant else 1.0, significant, verdict)
    df = (se2_a + se2_b) ** 2 / (
        (se2_a**2 / (len(a) - 1) if len(a) > 1 else 0.0) + (se2_b**2 / (len(b) - 1) if len(b) > 1 else 0.0)
    )
    t = diff / se
    p = 2.0 * (1.0 - t_cdf(abs(t), df))
    half = t_ppf(1.0 - alpha / 2.0, df) * se
    significant = p < alpha
    if significant:
        word = "faster" if diff > 0 else "slower"
        verdict = f"significant: B is {abs(relative or 0) * 100:.1f}% {word} (p={p:.3g})"
    else:
        verdict = f"not significant (p={p:.3g}; the 95% interval of the difference includes 0)"
    return Comparison(len(a), len(b), mean_a, mean_b, diff, diff - half, diff + half, relative,
                      df, p, significant, verdict)


POOL_KEYS = ("model", "server_version", "deployment_hash", "parallelism", "nodes", "driver")


def _shown(value) -> str:
    """A metadata value as a reader sees it (never a Python repr)."""
    return "none" if value is None else str(value)


def check_poolable(metadata: list[dict], keys: tuple[str, ...] = POOL_KEYS) -> list[str]:
    """Reasons why launches with these metadata cannot be pooled (empty when they can)."""
    reasons = []
    for key in keys:
        values = {_shown(m.get(key)) for m in metadata if key in m}
        if len(values) > 1:
            reasons.append(f"launches differ in {key.replace('_', ' ')}: {', '.join(sorted(values))}")
    return reasons
