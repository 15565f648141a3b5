"""Named signals over a stall window: the numbers that rules compare with thresholds.

Every signal has a source (the evidence it reads), a unit and a one-line meaning; rates and
levels are medians over the window (robust to the records at its edges), shares are means. The
registry below is the vocabulary rules may name (`signal: host.iowait_pct`). A signal is
`None` when its source is missing on the node or has no record in the window: conditions then
stay unknown instead of guessing. Process signals aggregate the server's process tree per
sampling round (records sharing a time).
"""

from __future__ import annotations

import statistics
from dataclasses import dataclass
from functools import cached_property
from typing import Callable

from sparktriage.stalls import ranks as _ranks
from sparktriage.stalls.detect import Detection, Period
from sparktriage.stalls.inputs import Evidence, NodeEvidence
from sparktriage.stalls.texts import WORLD

_PAD_S = 5.0


def _mean(values: list[float]) -> float | None:
    return statistics.fmean(values) if values else None


def _typical(values: list[float]) -> float | None:
    """The median: what the window was like, not swayed by the records at its edges."""
    return statistics.median(values) if values else None


def _f(value) -> float | None:
    return float(value) if isinstance(value, (int, float)) and not isinstance(value, bool) else None


class Window:
    """The evidence of one node during one period, with aggregates computed on demand."""

    def __init__(self, evidence: Evidence, detection: Detection, period: Period) -> None:
        self.evidence = evidence
        self.detection = detection
        self.period = period
        self.node: NodeEvidence = evidence.nodes[period.node]
        self._records: dict[str, list[dict] | None] = {}

    @property
    def start(self) -> float:
        """Where the evidence window begins (a failure reads back to its last progress)."""
        p = self.period
        return p.evidence_from if p.evidence_from is not None else p.start

    def records(self, source: str) -> list[dict] | None:
        """Records of a source in the window (padded when the window is shorter than a round)."""
        if source in self._records:
            return self._records[source]
        found = None
        if self.node.has(source):
            series = self.node.get(source)
            found = series.window(self.start, self.period.end)
            if len(found) < 2:
                found = series.window(self.start - _PAD_S, self.period.end + _PAD_S)
        self._records[source] = found
        return found

    @cached_property
    def rounds(self) -> list[list[dict]] | None:
        """Process records grouped by sampling round (equal time, to 0.1 s)."""
        found = self.records("procs")
        if found is None:
            return None
        groups: dict[float, list[dict]] = {}
        for record in found:
            groups.setdefault(round(record["t"], 1), []).append(record)
        return [groups[k] for k in sorted(groups)]

    def per_round(self, fn: Callable[[list[dict]], float | None],
                  how: Callable[[list[float]], float | None] = _typical) -> float | None:
        rounds = self.rounds
        if not rounds:
            return None
        values = [v for v in (fn(r) for r in rounds) if v is not None]
        return how(values)

    def field_typical(self, source: str, key: Callable[[dict], float | None]) -> float | None:
        found = self.records(source)
        if not found:
            return None
        return _typical([v for v in (key(r) for r in found) if v is not None])

    def busiest(self, source: str, group: str, key: str,
                skip: Callable[[str], bool] = lambda name: False) -> float | None:
        """Mean of `key` for the member of `group` (device, iface) with the highest mean."""
        found = self.records(source)
        if not found:
            return None
        values: dict[str, list[float]] = {}
        for record in found:
            name = str(record.get(group))
            value = _f(record.get(key))
            if value is not None and not skip(name):
                values.setdefault(name, []).append(value)
        means = [statistics.median(v) for v in values.values() if v]
        return max(means) if means else None


def _server(records: list[dict]) -> list[dict]:
    return [r for r in records if r.get("role") != "child"]


def _sum(records: list[dict], key: str) -> float | None:
    values = [_f(r.get(key)) for r in records]
    values = [v for v in values if v is not None]
    return sum(values) if values else None


def _cpu(record: dict) -> float:
    return (_f(record.get("cpu_user_pct")) or 0.0) + (_f(record.get("cpu_system_pct")) or 0.0)


def _top_thread(records: list[dict]) -> float | None:
    values = [_f(t.get("cpu_pct")) for r in _server(records) for t in r.get("threads") or []]
    values = [v for v in values if v is not None]
    if values:
        return max(values)
    cpus = [_cpu(r) for r in _server(records)]
    return max(cpus) if cpus else None


def _in_d(records: list[dict]) -> float:
    for record in _server(records):
        if record.get("state") == "D":
            return 1.0
        if any(t.get("state") == "D" for t in record.get("threads") or []):
            return 1.0
    return 0.0


def _sys_share(w: Window) -> float | None:
    rounds = w.rounds
    if not rounds:
        return None
    user = sum(_f(r.get("cpu_user_pct")) or 0.0 for g in rounds for r in _server(g))
    system = sum(_f(r.get("cpu_system_pct")) or 0.0 for g in rounds for r in _server(g))
    if user + system < 5.0 * len(rounds) * 0.1:  # under 0.5% of a core on average: no split
        return None
    return system / (user + system)


def _lost(w: Window) -> bool | None:
    """A server process seen in the window is gone by its last round (killed or crashed)."""
    rounds = w.rounds
    if not rounds or len(rounds) < 2:
        return None
    seen = {r.get("pid") for g in rounds[:-1] for r in _server(g)}
    last = {r.get("pid") for r in _server(rounds[-1])}
    return bool(seen - last)


def _rss_slope(w: Window) -> float | None:
    rounds = w.rounds
    if not rounds or len(rounds) < 3:
        return None
    xs = [g[0]["t"] for g in rounds]
    ys = [_sum(_server(g), "rss") or 0.0 for g in rounds]
    if xs[-1] - xs[0] <= 0:
        return None
    return statistics.linear_regression(xs, ys).slope


def _mem_frac(record: dict) -> float | None:
    mem = record.get("mem") or {}
    total, available = _f(mem.get("total")), _f(mem.get("available"))
    return available / total if total and available is not None else None


def _mem_min(w: Window) -> float | None:
    found = w.records("host")
    values = [v for v in (_mem_frac(r) for r in found or []) if v is not None]
    return min(values) if values else None


def _mem_drop(w: Window) -> float | None:
    found = w.records("host")
    values = [v for v in (_mem_frac(r) for r in found or []) if v is not None]
    return (values[0] - min(values)) if len(values) >= 2 else None


def _psi(key: str, how: Callable[[list[float]], float]) -> Callable[[Window], float | None]:
    def compute(w: Window) -> float | None:
        found = w.records("host")
        values = [_f((r.get("psi") or {}).get(key)) for r in found or []]
        values = [v for v in values if v is not None]
        return how(values) if values else None
    return compute


def _world_size(w: Window) -> float | None:
    timeline = w.detection.timelines.get(w.period.node)
    if timeline is None:
        return None
    memo = w.detection.__dict__.setdefault("_world_size", {})  # once per node, not per window
    if w.period.node not in memo:
        sizes = [int(m.group(1)) for mark in timeline.marks
                 for m in [WORLD.search(mark.event.message)] if m]
        memo[w.period.node] = float(max(sizes)) if sizes else None
    return memo[w.period.node]


def _cluster(w: Window) -> tuple[int | None, bool]:
    """Rank count and collective backend of the whole start (computed once per detection)."""
    memo = w.detection.__dict__.get("_cluster")
    if memo is None:
        timelines = w.detection.timelines
        memo = w.detection.__dict__["_cluster"] = (_ranks.ranks(timelines),
                                                   _ranks.collective(timelines))
    return memo


def _bar_moving(w: Window) -> bool | None:
    """The shard bar still advanced late in the window (its last quarter, or last silence).

    A bar that moved at the start of a long window and then froze is frozen: what matters
    is whether the load was still making progress when the window ended."""
    timeline = w.detection.timelines.get(w.period.node)
    if timeline is None or not timeline.bar:
        return None
    start, end = w.period.start, w.period.end
    late = end - max(w.detection.params.silence_s, 0.25 * (end - start))
    count = None
    changes: list[float] = []
    for t, n, _total in timeline.bar:
        if t > end:
            break
        if count is not None and n != count:
            changes.append(t)
        count = n
    return any(t >= max(late, start) for t in changes)


def _rdma(w: Window) -> float | None:
    found = w.records("net")
    if not found:
        return None
    values = [sum(_f(v) or 0.0 for v in (r.get("rdma") or {}).values()) for r in found
              if isinstance(r.get("rdma"), dict)]
    return _mean(values) if values else 0.0


@dataclass(frozen=True)
class Signal:
    name: str
    source: str
    unit: str
    meaning: str
    compute: Callable[[Window], float | bool | None]


def _period(attr: Callable[[Period], float | bool | None]) -> Callable[[Window], float | bool | None]:
    return lambda w: attr(w.period)


_not_lo = lambda name: name == "lo"  # noqa: E731 - loopback carries no cluster traffic

SIGNALS: dict[str, Signal] = {s.name: s for s in [
    Signal("stall.duration_s", "log", "s", "length of the stall", _period(lambda p: p.duration_s)),
    Signal("stall.silent", "log", "bool", "the log said nothing new (silence or hang)",
           _period(lambda p: "silence" in p.how or "hang" in p.how)),
    Signal("stall.crawl", "log", "bool", "the weight read ran far below the floor rate",
           _period(lambda p: "crawl" in p.how)),
    Signal("stall.asymmetric", "log", "bool", "this node was much slower than its peers",
           _period(lambda p: "asymmetry" in p.how)),
    Signal("stall.held", "log", "bool", "this node waited for a slower node",
           _period(lambda p: p.held_by is not None)),
    Signal("stall.open_ended", "log", "bool", "the stall lasted until observation ended",
           _period(lambda p: p.open_ended)),
    Signal("stall.bar_moving", "log", "bool", "the shard bar still advanced late in the window",
           _bar_moving),
    Signal("stall.weight_read_bps", "log", "B/s", "checkpoint bytes / weight-read time",
           _period(lambda p: p.facts.get("weight_read_bps"))),
    Signal("log.world_size", "log", "ranks", "largest world_size the log announced", _world_size),
    Signal("log.ranks", "log", "ranks", "ranks the evidence implies (world size, TP x PP x DP, "
           "ranks named, Ray worker addresses, nodes, shm broadcast waits)",
           lambda w: _cluster(w)[0]),
    Signal("log.collective", "log", "bool", "the ranks talk through NCCL (a line says so, or "
           "several ranks on a device that is not the CPU)", lambda w: _cluster(w)[1]),
    Signal("host.iowait_pct", "host", "%", "median CPU iowait",
           lambda w: w.field_typical("host", lambda r: _f((r.get("cpu") or {}).get("iowait")))),
    Signal("host.cpu_busy_pct", "host", "%", "median CPU user+system of all CPUs",
           lambda w: w.field_typical("host", lambda r: (_f((r.get("cpu") or {}).get("user")) or 0)
                                  + (_f((r.get("cpu") or {}).get("system")) or 0))),
    Signal("host.mem_available_min_frac", "host", "fraction", "lowest MemAvailable / MemTotal",
           _mem_min),
    Signal("host.mem_available_drop_frac", "host", "fraction",
           "fall of MemAvailable / MemTotal from the window's start to its lowest", _mem_drop),
    Signal("host.swap_bps", "host", "B/s", "median swap-in + swap-out",
           lambda w: w.field_typical("host", lambda r: (_f(r.get("swap_in_bps")) or 0)
                                  + (_f(r.get("swap_out_bps")) or 0))),
    Signal("host.psi_memory_full", "host", "%", "highest PSI memory full avg10",
           _psi("memory_full", max)),
    Signal("host.psi_memory_some", "host", "%", "highest PSI memory some avg10",
           _psi("memory_some", max)),
    Signal("host.psi_io_some", "host", "%", "mean PSI io some avg10", _psi("io_some", statistics.fmean)),
    Signal("host.kswapd_cpu", "host", "% of a core", "median kswapd CPU",
           lambda w: w.field_typical("host", lambda r: _f(r.get("kswapd_cpu")))),
    Signal("host.majfault_ps", "host", "1/s", "median major faults per second, whole host",
           lambda w: w.field_typical("host", lambda r: _f(r.get("pgmajfault_ps")))),
    Signal("disk.read_bps", "disk", "B/s", "median read rate of the busiest device",
           lambda w: w.busiest("disk", "device", "read_bps")),
    Signal("disk.busy_pct", "disk", "%", "median utilisation of the busiest device",
           lambda w: w.busiest("disk", "device", "busy_pct")),
    Signal("net.rx_bps", "net", "B/s", "median receive rate of the busiest non-loopback interface",
           lambda w: w.busiest("net", "iface", "rx_bps", _not_lo)),
    Signal("net.tx_bps", "net", "B/s", "median send rate of the busiest non-loopback interface",
           lambda w: w.busiest("net", "iface", "tx_bps", _not_lo)),
    Signal("net.rdma_bps", "net", "1/s", "mean sum of RDMA counter rates", _rdma),
    Signal("procs.read_bps", "procs", "B/s", "median storage read rate of the server's processes",
           lambda w: w.per_round(lambda g: _sum(g, "read_bps"))),
    Signal("procs.cpu_pct", "procs", "% of a core", "median CPU of the server's processes",
           lambda w: w.per_round(lambda g: sum(_cpu(r) for r in _server(g)))),
    Signal("procs.sys_share", "procs", "fraction", "system / (user + system) CPU of the server",
           _sys_share),
    Signal("procs.top_thread_cpu", "procs", "% of a core", "median CPU of the busiest thread",
           lambda w: w.per_round(_top_thread)),
    Signal("procs.iowait_pct", "procs", "%", "median delay-accounted iowait of the server",
           lambda w: w.per_round(lambda g: max([_f(r.get("cpu_iowait_pct")) or 0.0
                                                for r in _server(g)] or [0.0])
                                 if any(r.get("cpu_iowait_pct") is not None for r in g) else None)),
    Signal("procs.d_state_share", "procs", "fraction",
           "share of rounds with a server process or thread in uninterruptible sleep (D)",
           lambda w: w.per_round(_in_d, _mean)),
    Signal("procs.majflt_ps", "procs", "1/s", "median major page faults per second of the server",
           lambda w: w.per_round(lambda g: _sum(g, "majflt_ps"))),
    Signal("procs.ctx_vol_ps", "procs", "1/s", "median voluntary context switches per second",
           lambda w: w.per_round(lambda g: _sum(g, "ctx_vol_ps"))),
    Signal("procs.rss_growth_bps", "procs", "B/s", "slope of the server's summed RSS", _rss_slope),
    Signal("procs.lost", "procs", "bool", "a server process disappeared during the window", _lost),
    Signal("gpu.util_pct", "gpu", "%", "median utilisation of the busiest GPU",
           lambda w: w.busiest("gpu", "index", "util_pct")),
    Signal("gpu.power_w", "gpu", "W", "median power of the busiest GPU",
           lambda w: w.busiest("gpu", "index", "power_w")),
]}


def compute(name: str, window: Window) -> float | bool | None:
    """The value of one signal in a window (None when its evidence is missing)."""
    signal = SIGNALS[name]
    if signal.source != "log" and not window.node.has(signal.source):
        return None
    return signal.compute(window)
