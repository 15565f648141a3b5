"""Throughput and speculative-decoding time series from vLLM's periodic stats lines (§5).

Every ``Engine NNN: Avg prompt throughput: … Avg generation throughput: …`` line is one window
ending at the line's time; its start is the previous line of the same engine when that one is at
most 1.5 intervals back, else one interval before (idle windows drop to DEBUG after two zero
intervals, so a longer gap hides idle windows). The interval is the median spacing of
consecutive lines (10 s, `VLLM_LOG_STATS_INTERVAL`, when it cannot be measured). Summaries:
mean over the logged windows, mean over active windows (rate > 0), peak.

``SpecDecoding metrics:`` lines carry per-window accepted and drafted counts; totals are summed.
The number of drafts is not printed, so each window's is recovered from the accepted count and
the per-position rates (Σ rate = accepted / drafts; more digits than the mean acceptance
length), and the mean acceptance length over the whole log is 1 + Σ accepted / Σ drafts.
"""

from __future__ import annotations

import math
import re
import statistics
from dataclasses import dataclass, field

from sparktriage.evidence.catalog import Hit
from sparktriage.evidence.events import LogEvent

DEFAULT_INTERVAL_S = 10.0
MAX_WINDOWS_KEPT = 20000

_PART = {
    "running": re.compile(r"Running: (\d+) reqs"),
    "waiting": re.compile(r"(?:Waiting|Pending): (\d+) reqs"),
    "deferred": re.compile(r"Deferred: (\d+) reqs"),
    "preemptions": re.compile(r"Preemptions: (\d+)"),
    "kv_usage_pct": re.compile(r"(?:^|, )(?:GPU|CPU|XPU|TPU|HPU|NPU|\w+) KV cache usage: ([\d.]+)%"),
    "prefix_hit_pct": re.compile(r"(?<!External )Prefix cache hit rate: ([\d.]+)%"),
    "external_prefix_hit_pct": re.compile(r"External prefix cache hit rate: ([\d.]+)%"),
    "mm_cache_hit_pct": re.compile(r"MM cache hit rate: ([\d.]+)%"),
}
_SPEC = {
    "mean_acceptance_length": re.compile(r"Mean acceptance length: ([\d.]+|nan)"),
    "accepted_tps": re.compile(r"Accepted throughput: ([\d.]+|nan) tokens/s"),
    "drafted_tps": re.compile(r"Drafted throughput: ([\d.]+|nan) tokens/s"),
    "accepted": re.compile(r"(?:^|, )Accepted: (\d+) tokens"),
    "drafted": re.compile(r"(?:^|, )Drafted: (\d+) tokens"),
    "acceptance_pct": re.compile(r"(?:Avg )?Draft acceptance rate: ([\d.]+|nan)%"),
}
_PER_POS = re.compile(r"Per-position acceptance rate: ((?:[\d.]+|nan)(?:, (?:[\d.]+|nan))*)")


@dataclass
class StatsWindow:
    """One periodic stats line."""

    t: float
    engine: str
    prompt: float
    generation: float
    level: str | None
    node: str
    start: float | None = None
    parts: dict = field(default_factory=dict)

    @property
    def length_s(self) -> float | None:
        return None if self.start is None else self.t - self.start


@dataclass
class SpecWindow:
    """One SpecDecoding metrics line."""

    t: float
    node: str
    values: dict
    per_position: list[float]
    drafts: float | None  # recovered number of drafts in the window
    drafts_exact: bool


def _float(text: str) -> float | None:
    try:
        value = float(text)
    except ValueError:
        return None
    return value if math.isfinite(value) else None


def parse_stats(hit: Hit, event: LogEvent) -> StatsWindow | None:
    m = hit.match
    prompt, gen = _float(m["prompt"]), _float(m["gen"])
    if prompt is None or gen is None or event.t is None:
        return None
    engine = m["engine"] if m["engine"] is not None else (
        f"aggregated({m['n']})" if m["n"] else "0")
    if engine.isdigit():
        engine = str(int(engine))
    rest = m["rest"] or ""
    parts = {}
    for name, regex in _PART.items():
        found = regex.search(rest)
        if found:
            parts[name] = _float(found.group(1)) if "pct" in name else int(found.group(1))
    return StatsWindow(event.t, engine, prompt, gen, event.level, event.node, parts=parts)


def parse_spec(hit: Hit, event: LogEvent) -> SpecWindow | None:
    rest = hit.match["rest"] or ""
    if event.t is None:
        return None
    values: dict = {}
    for name, regex in _SPEC.items():
        found = regex.search(rest)
        if found:
            values[name] = int(found.group(1)) if name in ("accepted", "drafted") else _float(found.group(1))
    per_pos_m = _PER_POS.search(rest)
    per_position = [v for v in (_float(x) for x in per_pos_m.group(1).split(", "))
                    if v is not None] if per_pos_m else []
    if "accepted" not in values and "drafted" not in values:
        return None
    drafts, exact = _drafts(values, per_position)
    return SpecWindow(event.t, event.node, values, per_position, drafts, exact)


def _drafts(values: dict, per_position: list[float]) -> tuple[float | None, bool]:
    accepted = values.get("accepted")
    if accepted:
        total_rate = sum(per_position)
        if total_rate > 0:
            return accepted / total_rate, False
        mal = values.get("mean_acceptance_length")
        if mal is not None and mal > 1:
            return accepted / (mal - 1), False
    drafted = values.get("drafted")
    if drafted is not None and per_position:
        return drafted / len(per_position), False  # every draft proposes k tokens (upper bound)
    return None, False


def interval_of(times: list[float]) -> float:
    """Median spacing of consecutive stats lines (the logging interval), or the default."""
    diffs = [b - a for a, b in zip(times, times[1:]) if b - a > 0.5]
    if not diffs:
        return DEFAULT_INTERVAL_S
    short = [d for d in diffs if d <= 1.5 * min(diffs) + 1.0]
    return statistics.median(short)


def place_windows(windows: list[StatsWindow]) -> tuple[float, int]:
    """Set every window's start; return (interval, idle windows hidden between logged ones)."""
    by_engine: dict[str, list[StatsWindow]] = {}
    for w in windows:
        by_engine.setdefault((w.node, w.engine), []).append(w)
    intervals = []
    hidden = 0
    for series in by_engine.values():
        series.sort(key=lambda w: w.t)
        interval = interval_of([w.t for w in series])
        intervals.append(interval)
        prev = None
        for w in series:
            if prev is not None and w.t - prev.t <= 1.5 * interval + 1.0:
                w.start = prev.t
            else:
                w.start = w.t - interval
                if prev is not None:
                    hidden += max(0, round((w.t - prev.t) / interval) - 1)
            prev = w
    return (statistics.median(intervals) if intervals else DEFAULT_INTERVAL_S), hidden


def summary(values: list[float]) -> dict:
    """{windows, mean, mean_active, peak} of per-window rates (tokens/s)."""
    active = [v for v in values if v > 0]
    return {
        "windows": len(values),
        "mean": round(statistics.fmean(values), 3) if values else None,
        "mean_active": round(statistics.fmean(active), 3) if active else None,
        "peak": max(values) if values else None,
    }


def spec_summary(windows: list[SpecWindow]) -> dict | None:
    """Totals over all SpecDecoding windows; None when there were none."""
    if not windows:
        return None
    accepted = sum(w.values.get("accepted", 0) for w in windows)
    drafted = sum(w.values.get("drafted", 0) for w in windows)
    drafts = sum(w.drafts for w in windows if w.drafts is not None)
    positions = max((len(w.per_position) for w in windows), default=0)
    per_position = []
    if drafts > 0:
        for i in range(positions):
            acc_i = sum(w.per_position[i] * w.drafts for w in windows
                        if w.drafts is not None and i < len(w.per_position))
            per_position.append(round(acc_i / drafts, 4))
    return {
        "windows": len(windows),
        "mean_acceptance_length": round(1 + accepted / drafts, 4) if drafts > 0 else None,
        "accepted": accepted,
        "drafted": drafted,
        "per_position": per_position,
        "acceptance_rate": round(accepted / drafted, 4) if drafted else None,
        "drafts_estimated": round(drafts, 1) if drafts else None,
        "num_speculative_tokens": positions or None,
        "peak_accepted_tps": max((w.values.get("accepted_tps") or 0.0 for w in windows), default=None),
    }


__all__ = ["StatsWindow", "SpecWindow", "parse_stats", "parse_spec", "place_windows", "summary",
           "spec_summary", "interval_of", "DEFAULT_INTERVAL_S", "MAX_WINDOWS_KEPT"]
