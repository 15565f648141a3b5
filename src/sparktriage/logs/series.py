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
import operator
import re
from collections import Counter
from dataclasses import dataclass, field

from sparktriage.logs.catalog import Hit
from sparktriage.logs.events import LogEvent

DEFAULT_INTERVAL_S = 10.0
_BY_TIME = operator.attrgetter("t")
MAX_WINDOWS_KEPT = 20000

_PAIR = re.compile(r"(?:^|, )([A-Za-z][\w +-]*?): (-?\d+(?:\.\d+)?|nan)")
_STATS_NAMES = {"running": "running", "waiting": "waiting", "pending": "waiting",
                "deferred": "deferred", "preemptions": "preemptions", "corrupted": "corrupted",
                "prefix cache hit rate": "prefix_hit_pct",
                "external prefix cache hit rate": "external_prefix_hit_pct",
                "mm cache hit rate": "mm_cache_hit_pct"}
_SPEC_NAMES = {"mean acceptance length": "mean_acceptance_length", "accepted throughput":
               "accepted_tps", "drafted throughput": "drafted_tps", "accepted": "accepted",
               "drafted": "drafted", "avg draft acceptance rate": "acceptance_pct",
               "draft acceptance rate": "acceptance_pct",
               "number of accepted tokens": "accepted", "number of draft tokens": "drafted"}
_COUNTS = {"running", "waiting", "deferred", "preemptions", "corrupted", "accepted", "drafted"}
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
    start_estimated: bool = False  # the previous line was hidden (idle): start = end - interval

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
    except (ValueError, OverflowError):
        return None
    return value if math.isfinite(value) else None


def _number(name: str, text: str):
    if name in _COUNTS:
        return int(text) if text.isdigit() and len(text) <= 15 else None
    return _float(text)


# The shapes of 0.14-0.33 (parts after the two throughputs, and the spec line), matched in one
# go; anything else falls back to the `Name: value` scan.
_STATS_COMMON = re.compile(
    r", Running: (\d{1,9}) reqs, Waiting: (\d{1,9}) reqs, (?:GPU|CPU|XPU|TPU|HPU|NPU) KV cache "
    r"usage: (\d{1,3}\.\d)%(?:, Prefix cache hit rate: (\d{1,3}\.\d)%)?$")
_SPEC_COMMON = re.compile(
    r"Mean acceptance length: (\d{1,6}\.\d\d), Accepted throughput: (\d{1,9}\.\d\d) tokens/s, "
    r"Drafted throughput: (\d{1,9}\.\d\d) tokens/s, Accepted: (\d{1,15}) tokens, Drafted: "
    r"(\d{1,15}) tokens, Per-position acceptance rate: ((?:\d\.\d{3}(?:, \d\.\d{3})*)?), Avg Draft "
    r"acceptance rate: (\d{1,3}\.\d|nan)%$")


def _stats_parts(rest: str) -> dict:
    m = _STATS_COMMON.match(rest)
    if m is None:
        return _pairs(rest, _STATS_NAMES)
    parts = {"running": int(m.group(1)), "waiting": int(m.group(2)),
             "kv_usage_pct": float(m.group(3))}
    if m.group(4) is not None:
        parts["prefix_hit_pct"] = float(m.group(4))
    return parts


def _pairs(text: str, names: dict) -> dict:
    """`Name: value` parts of a stats or spec line, under our names (unknown parts skipped)."""
    out = {}
    for name, value in _PAIR.findall(text):
        key = name.lower()
        field_name = names.get(key)
        if field_name is None and key.endswith("kv cache usage"):
            field_name = "kv_usage_pct"
        if field_name is not None and field_name not in out:
            number = _number(field_name, value)
            if number is not None:
                out[field_name] = number
    return out


def parse_stats(hit: Hit, event: LogEvent) -> StatsWindow | None:
    m = hit.match
    prompt, gen = _float(m["prompt"]), _float(m["gen"])
    if prompt is None or gen is None or event.t is None:
        return None
    engine = m["engine"]
    if engine is None:
        engine = f"aggregated({m['n']})" if m["n"] else "0"
    elif engine.isdigit() and len(engine) < 10:
        engine = str(int(engine))
    return StatsWindow(event.t, engine, prompt, gen, event.level, event.node,
                       parts=_stats_parts(m["rest"] or ""))


def parse_spec(hit: Hit, event: LogEvent) -> SpecWindow | None:
    rest = hit.match["rest"] or ""
    if event.t is None:
        return None
    m = _SPEC_COMMON.match(rest)
    if m is not None:
        values = {"mean_acceptance_length": float(m.group(1)), "accepted_tps": float(m.group(2)),
                  "drafted_tps": float(m.group(3)), "accepted": int(m.group(4)),
                  "drafted": int(m.group(5)), "acceptance_pct": _float(m.group(7))}
        per_position = [float(x) for x in m.group(6).split(", ") if x]
    else:
        values = _pairs(rest, _SPEC_NAMES)
        if "accepted" not in values and "drafted" not in values:
            return None
        per_pos_m = _PER_POS.search(rest)
        per_position = [v for v in (_float(x) for x in per_pos_m.group(1).split(", "))
                        if v is not None] if per_pos_m else []
    drafts, exact = _drafts(values, per_position)
    return SpecWindow(event.t, event.node, values, per_position, drafts, exact)


def _drafts(values: dict, per_position: list[float]) -> tuple[float | None, bool]:
    accepted = values.get("accepted")
    if accepted:
        total_rate = 0.0
        for rate in per_position:  # in order, one addition each (the compiled scanner's way;
            total_rate += rate     # builtin sum() compensates since Python 3.12)
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
    counts: Counter = Counter(round(b - a, 1) for a, b in zip(times, times[1:]))
    return _interval(counts)


def _interval(diffs: Counter) -> float:
    usable = {d: n for d, n in diffs.items() if d > 0.5}
    if not usable:
        return DEFAULT_INTERVAL_S
    shortest = min(usable)
    short = sorted((d, n) for d, n in usable.items() if d <= 1.5 * shortest + 1.0)
    half, seen = sum(n for _, n in short) / 2, 0
    for d, n in short:  # weighted median
        seen += n
        if seen >= half:
            return d
    return short[-1][0]


class _Rates:
    """Streaming {windows, mean, mean_active, peak} of per-window rates."""

    def __init__(self) -> None:
        self.n = self.active = 0
        self.total = self.total_active = 0.0
        self.peak: float | None = None

    def add(self, value: float) -> None:
        self.n += 1
        self.total += value
        if value > 0:
            self.active += 1
            self.total_active += value
        if self.peak is None or value > self.peak:
            self.peak = value

    def summary(self) -> dict:
        return {
            "windows": self.n,
            "mean": round(self.total / self.n, 3) if self.n else None,
            "mean_active": round(self.total_active / self.active, 3) if self.active else None,
            "peak": self.peak,
        }


class StatsSeries:
    """All periodic stats windows of a log: streaming summaries, the first windows kept."""

    def __init__(self, keep: int = MAX_WINDOWS_KEPT,
                 around: tuple[float, float] | None = None) -> None:
        self.keep = keep
        self.around = around  # keep only windows ending in this time range (reconciliation)
        self.windows: list[StatsWindow] = []
        self.generation = _Rates()
        self.prompt = _Rates()
        self._last: dict[tuple, float] = {}
        self._diffs: Counter = Counter()
        self.engines: set[str] = set()

    def add(self, w: StatsWindow) -> None:
        self.generation.add(w.generation)
        self.prompt.add(w.prompt)
        key = (w.node, w.engine)
        self.engines.add(w.engine)
        last = self._last.get(key)
        if last is not None and w.t >= last and len(self._diffs) < 100_000:
            self._diffs[round(w.t - last, 1)] += 1
        self._last[key] = w.t
        if self.around is not None and not self.around[0] <= w.t <= self.around[1]:
            return
        if len(self.windows) < self.keep:
            self.windows.append(w)

    def interval(self) -> float:
        return _interval(self._diffs)

    def hidden_idle(self) -> int:
        """Windows that were not logged (idle windows drop to DEBUG) between logged ones."""
        interval = self.interval()
        return sum(n * max(0, round(d / interval) - 1) for d, n in self._diffs.items()
                   if d > 1.5 * interval + 1.0)

    def place(self) -> None:
        """Set the start of every kept window (see the module docstring)."""
        interval = self.interval()
        near = 1.5 * interval + 1.0
        prev: dict[tuple, StatsWindow] = {}
        for w in sorted(self.windows, key=_BY_TIME):
            key, t = (w.node, w.engine), w.t
            before = prev.get(key)
            if before is not None and 0 <= t - before.t <= near:
                w.start, w.start_estimated = before.t, False
            else:
                w.start, w.start_estimated = t - interval, True
            prev[key] = w


def place_windows(windows: list[StatsWindow]) -> tuple[float, int]:
    """Set every window's start; return (interval, idle windows hidden between logged ones)."""
    series = StatsSeries(keep=len(windows) + 1)
    for w in sorted(windows, key=lambda x: x.t):
        series.add(w)
    series.windows = windows
    series.place()
    return series.interval(), series.hidden_idle()


def summary(values: list[float]) -> dict:
    """{windows, mean, mean_active, peak} of per-window rates (tokens/s)."""
    rates = _Rates()
    for v in values:
        rates.add(v)
    return rates.summary()


class SpecSeries:
    """All SpecDecoding windows: totals over every window, the first windows kept."""

    def __init__(self, keep: int = MAX_WINDOWS_KEPT) -> None:
        self.keep = keep
        self.windows: list[SpecWindow] = []
        self.n = self.accepted = self.drafted = 0
        self.drafts = 0.0
        self.per_pos_accepted: list[float] = []
        self.peak_accepted_tps: float | None = None

    def add(self, w: SpecWindow) -> None:
        self.n += 1
        self.accepted += w.values.get("accepted", 0)
        self.drafted += w.values.get("drafted", 0)
        if w.drafts is not None:
            self.drafts += w.drafts
            for i, rate in enumerate(w.per_position[:64]):
                if i >= len(self.per_pos_accepted):
                    self.per_pos_accepted.append(0.0)
                self.per_pos_accepted[i] += rate * w.drafts
        tps = w.values.get("accepted_tps")
        if tps is not None and (self.peak_accepted_tps is None or tps > self.peak_accepted_tps):
            self.peak_accepted_tps = tps
        if len(self.windows) < self.keep:
            self.windows.append(w)

    def summary(self) -> dict | None:
        """Totals over all windows; None when there were none."""
        if not self.n:
            return None
        drafts = self.drafts
        return {
            "windows": self.n,
            "mean_acceptance_length": round(1 + self.accepted / drafts, 4) if drafts > 0 else None,
            "accepted": self.accepted,
            "drafted": self.drafted,
            "per_position": [round(a / drafts, 4) for a in self.per_pos_accepted] if drafts > 0 else [],
            "acceptance_rate": round(self.accepted / self.drafted, 4) if self.drafted else None,
            "drafts_estimated": round(drafts, 1) if drafts else None,
            "num_speculative_tokens": len(self.per_pos_accepted) or None,
            "peak_accepted_tps": self.peak_accepted_tps,
        }


def spec_summary(windows: list[SpecWindow]) -> dict | None:
    """Totals over a list of SpecDecoding windows."""
    series = SpecSeries()
    for w in windows:
        series.add(w)
    return series.summary()


__all__ = ["StatsWindow", "SpecWindow", "StatsSeries", "SpecSeries", "parse_stats", "parse_spec",
           "place_windows", "summary", "spec_summary", "interval_of", "DEFAULT_INTERVAL_S",
           "MAX_WINDOWS_KEPT"]
