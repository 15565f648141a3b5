"""Numbers people can read: units on every number, digits that match the
interval, durations in minutes and seconds, never scientific notation.

Pure functions from numbers to text, used by page one (page_one.py, findings.py) so that the
words in report.json are the words every renderer prints. The rule for digits: a value with a
95% interval is printed to the decimal place of the interval half-width's second significant
digit (28.2 ± 1.3, 0.412 ± 0.021); a value without one to three significant digits. Nothing here
ever returns an exponent (docs/report.md, Numbers).
"""

from __future__ import annotations

import math


def _decimals_for(spread: float) -> int:
    """Decimals that show the second significant digit of `spread` (0 to 4)."""
    if not math.isfinite(spread) or spread <= 0:
        return 1
    return max(0, min(4, 1 - math.floor(math.log10(spread))))


def plain(value: float, decimals: int) -> str:
    """A fixed-point number with thousands separators (never an exponent)."""
    text = f"{value:,.{decimals}f}"
    return text[1:] if text.startswith("-") and not text.strip("-0.,") else text


def significant(value: float, digits: int = 3) -> str:
    """`digits` significant digits in fixed point: 33.969 -> 34.0, 0.001464 -> 0.00146."""
    if value == 0 or not math.isfinite(value):
        return "0" if value == 0 else str(value)
    decimals = max(0, min(6, digits - 1 - math.floor(math.log10(abs(value)))))
    return plain(value, decimals)


def with_interval(mean: float | None, low: float | None, high: float | None, unit: str) -> str:
    """`34.0 tok/s (95% CI 32.8–35.2)`, digits chosen by the interval's half-width."""
    if mean is None:
        return "not measured"
    if low is None or high is None:
        return f"{significant(mean)} {unit} (no interval)"
    decimals = _decimals_for((high - low) / 2)
    return f"{plain(mean, decimals)} {unit} (95% CI {plain(low, decimals)}–{plain(high, decimals)})"


def fitted(mean: float | None, low: float | None, high: float | None) -> tuple[str, str]:
    """A mean and its interval in table cells, with the digits `with_interval` gives them:
    ('34.0', '32.8–35.2'); without an interval ('34.0', '–'); unmeasured ('–', '–')."""
    if mean is None:
        return "–", "–"
    if low is None or high is None:
        return significant(mean), "–"
    decimals = _decimals_for((high - low) / 2)
    return plain(mean, decimals), f"{plain(low, decimals)}–{plain(high, decimals)}"


def rate(value: float | None, unit: str = "tok/s") -> str:
    return "not measured" if value is None else f"{significant(value)} {unit}"


def signed_rate(value: float, unit: str = "tok/s") -> str:
    return ("+" if value >= 0 else "−") + f"{significant(abs(value))} {unit}"


def percent(fraction: float | None) -> str:
    """A fraction as a percentage, two significant digits (0.3297 -> 33%, 0.047 -> 4.7%)."""
    if fraction is None:
        return "–"
    value = fraction * 100
    return f"{significant(value, 2) if abs(value) < 10 else plain(value, 0)}%"


def duration(value: float | None) -> str:
    """Seconds as `48.3 s`, `2 min 20 s` or `1 h 05 min`."""
    if value is None:
        return "not measured"
    sign, value = ("−" if value < 0 else ""), abs(value)
    if value < 60:
        return f"{sign}{significant(value, 3) if value >= 1 else significant(value, 2)} s"
    if value < 3600:
        minutes, rest = divmod(round(value), 60)
        return f"{sign}{minutes} min {rest:02d} s"
    hours, rest = divmod(round(value / 60), 60)
    return f"{sign}{hours} h {rest:02d} min"


def p_value(p: float | None) -> str:
    """A p-value without an exponent: `p = 0.043`, `p < 0.001`."""
    if p is None:
        return "p unknown"
    return "p < 0.001" if p < 0.001 else f"p = {significant(p, 2)}"


def count(n: int, thing: str, plural: str | None = None) -> str:
    return f"{n} {thing if n == 1 else (plural or thing + 's')}"
