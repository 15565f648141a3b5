"""Number and text formatting shared by the Markdown and PDF renderers (pure functions)."""

from __future__ import annotations

from sparktriage.textsafe import escape_controls
from sparktriage.report.values import scalar


def number(value: float | None, digits: int = 1) -> str:
    """A number with fixed decimals, or an en dash when it is unknown."""
    if value is None:
        return "–"
    return f"{value:,.{digits}f}"


def interval(low: float | None, high: float | None, digits: int = 1) -> str:
    """A 95% interval as `[low, high]`, or nothing when it is unknown."""
    if low is None or high is None:
        return "[no interval]"
    return f"[{low:,.{digits}f}, {high:,.{digits}f}]"


def seconds(value: float | None) -> str:
    return "–" if value is None else f"{value:,.1f} s"


def cell(value) -> str:
    """Any value as table-cell text (control characters from configs shown escaped)."""
    if isinstance(value, float):
        return f"{value:.4g}"
    return escape_controls(scalar(value) if not isinstance(value, str) else value)


def percent(fraction: float | None) -> str:
    return "–" if fraction is None else f"{fraction * 100:.0f}%"


def pool_notes(pools: list[dict]) -> list[str]:
    """Stability reasons (prefixed with their configuration) and pooling notes, without repeats."""
    out: list[str] = []
    for pool in pools:
        name = pool["workload"] + ("" if pool["depth"] is None else f", depth {pool['depth']}")
        for line in [f"{name}: {reason}" for reason in pool["reasons"]] + pool["notes"]:
            if line not in out:
                out.append(line)
    return out
