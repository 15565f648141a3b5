"""Text formatting shared by the Markdown and PDF renderers (pure functions).

Every number is printed through report.readable (the one number formatter: page one, findings
and the body print the same value alike, e.g. a roofline share of 4.7% is 4.7% everywhere);
`number`, `interval` and `percent` here are its table forms."""

from __future__ import annotations

import datetime as _dt
import re

from sparktriage.textsafe import escape_controls
from sparktriage.report.readable import duration, plain
from sparktriage.report.readable import percent as readable_percent
from sparktriage.report.values import fixed, scalar


def number(value: float | None, digits: int = 1) -> str:
    """A number with fixed decimals, or an en dash when it is unknown."""
    if value is None:
        return "–"
    return plain(value, digits)


def interval(low: float | None, high: float | None, digits: int = 1) -> str:
    """A 95% interval as `[low, high]`, or nothing when it is unknown."""
    if low is None or high is None:
        return "[no interval]"
    return f"[{plain(low, digits)}, {plain(high, digits)}]"


def seconds(value: float | None) -> str:
    """A duration as people read it: `48.3 s`, `2 min 20 s`, `1 h 05 min` (readable.duration)."""
    return "–" if value is None else duration(value)


TIME_ZONE_NOTE = "times in UTC: the run records no local time zone"


def when(value: str | None) -> str:
    """An ISO 8601 time as a date and time with its zone stated: `2026-03-01 12:00:00 UTC`.

    Run directories record times in UTC and no local zone (docs/report.md, "Times"), so the
    report shows UTC and says so; text that is not a time is returned as it is."""
    if not value:
        return "unknown"
    try:
        parsed = _dt.datetime.fromisoformat(value.replace("Z", "+00:00").replace("z", "+00:00"))
    except ValueError:
        return value
    if parsed.tzinfo is None:
        parsed = parsed.replace(tzinfo=_dt.timezone.utc)
    return parsed.astimezone(_dt.timezone.utc).strftime("%Y-%m-%d %H:%M:%S UTC")


def cell(value) -> str:
    """Any value as table-cell text (control characters from configs shown escaped)."""
    if isinstance(value, float):
        return fixed(value, 4)
    return escape_controls(scalar(value) if not isinstance(value, str) else value)


def percent(fraction: float | None) -> str:
    """A fraction as a percentage, as everywhere in the report (readable.percent: 4.7%, 33%)."""
    return readable_percent(fraction)


def pool_notes(pools: list[dict]) -> list[str]:
    """Stability reasons (prefixed with their configuration) and pooling notes, without repeats."""
    out: list[str] = []
    for pool in pools:
        name = pool["workload"] + ("" if pool["depth"] is None else f", depth {pool['depth']}")
        for line in [f"{name}: {reason}" for reason in pool["reasons"]] + pool["notes"]:
            if line not in out:
                out.append(line)
    return out


ONE_LAUNCH = "not measured (one launch)"


def stability_words(pool: dict) -> str:
    """The one wording of stability across launches, the same as the summary's verdict: a pool
    of one launch is "not measured", never "stable"."""
    if pool.get("n_launches", len(pool.get("launches") or [])) < 2:
        return ONE_LAUNCH
    return "stable" if pool.get("stable") else "UNSTABLE"


def delivered_label(row: dict) -> str:
    """A reconciliation row's delivered mean with its unit and the workload it is a mean of."""
    if row.get("delivered_mean") is None:
        return "-"
    workload = row.get("delivered_workload")
    return f"{number(row['delivered_mean'])} tok/s" + (f" ({workload})" if workload else "")


def readable_key(key: str) -> str:
    """A flattened document key as words: "model.active_params" -> "model / active_params",
    "nodes[0].host" -> "nodes 1 / host" (the JSON in data/ keeps the original)."""
    key = re.sub(r"\[(\d+)\]", lambda m: f" {int(m.group(1)) + 1}", key)
    return " / ".join(part for part in key.split("."))
