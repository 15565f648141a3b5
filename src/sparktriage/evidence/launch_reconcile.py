"""The bench hooks: scrape `/metrics` around each workload's requests, then reconcile a launch.

`MetricsRecorder.observer(progress)` wraps the protocol's observer: when a workload's
capabilities are known (its negotiation requests are done) it scrapes `/metrics` ("before"),
and after the workload's last request it scrapes again ("after"). Each page is kept raw in
``launches/<L>/metrics/<n>-<when>-<workload>.prom`` and indexed in ``metrics/scrapes.jsonl``
(time, url, file, or the error: a failed scrape never stops the measurement).

`reconcile_launch(launch, logs)` is a pure function of the launch folder (requests.jsonl,
metrics/, the server log) and writes ``reconcile.json`` (docs/formats.md).
"""

from __future__ import annotations

import datetime as _dt
import re
import time
from typing import Callable, Sequence

from sparktriage.errors import SparktriageError
from sparktriage.evidence.clock import iso
from sparktriage.evidence.logsdoc import LogAnalyzer
from sparktriage.evidence.parser import ParseOptions, merge_events, parse_bytes, source_events
from sparktriage.evidence.prometheus import metrics_window, parse_text, scrape
from sparktriage.evidence.reconcile import delivered_from_records, reconcile
from sparktriage.evidence.scan import fast_events
from sparktriage.evidence.sources import resolve_inputs
from sparktriage.progress import Observer
from sparktriage.reconcile.docmodel import ReconcileDocument
from sparktriage.store.documents import RecordWriter, read_records
from sparktriage.store.rundir import LaunchDir

WINDOW_MARGIN_S = 120.0  # stats windows kept around the protocol window (for their starts)
TAIL_BYTES = 256 * 1024
_SAFE = re.compile(r"[^A-Za-z0-9._-]+")


class MetricsRecorder:
    """Scrapes `/metrics` before and after each workload's requests during `run_protocol`."""

    def __init__(self, url: str, launch: LaunchDir, warn: Callable[[str], None] | None = None,
                 headers: dict | None = None) -> None:
        self.url = url
        self.folder = launch.path / "metrics"
        self.warn = warn or (lambda message: None)
        self.headers = headers
        self.count = 0
        self.failures = 0

    def observer(self, inner: Observer) -> Observer:
        def observe(event: str, details: dict) -> None:
            inner(event, details)
            if event == "capabilities":
                self.take("before", details["workload"])
            elif event == "request" and details["index"] + 1 == details["total"]:
                self.take("after", details["workload"])
        return observe

    def take(self, when: str, workload: str) -> None:
        self.count += 1
        name = f"{self.count:03d}-{when}-{_SAFE.sub('_', workload)[:40]}.prom"
        record = {"n": self.count, "when": when, "workload": workload, "url": self.url,
                  "file": None, "t": None, "error": None}
        try:
            text, parsed = scrape(self.url, headers=self.headers)
            self.folder.mkdir(parents=True, exist_ok=True)
            (self.folder / name).write_text(text, encoding="utf-8")
            record.update(file=name, t=parsed.t)
        except SparktriageError as exc:
            self.failures += 1
            record.update(error=exc.one_line(), t=time.time())
            self.warn(f"metrics scrape {when} {workload} failed: {exc.one_line()}")
        with RecordWriter(self.folder / "scrapes.jsonl") as writer:
            writer.append(record)


def metric_windows(launch: LaunchDir) -> list[dict] | None:
    """Pair the before/after scrapes of each workload and take their counter deltas."""
    index = launch.path / "metrics" / "scrapes.jsonl"
    if not index.exists():
        return None
    pending: dict[str, dict] = {}
    windows = []
    for record in read_records(index):
        if record.get("when") == "before":
            pending[record.get("workload")] = record
            continue
        before = pending.pop(record.get("workload"), None)
        window = {"workload": record.get("workload"), "start": None, "end": None,
                  "generation_tokens": None, "error": None}
        if before is None or before.get("error") or record.get("error"):
            window["error"] = (before or {}).get("error") or record.get("error") or "no before scrape"
            windows.append(window)
            continue
        folder = launch.path / "metrics"
        a = parse_text((folder / before["file"]).read_text(encoding="utf-8"), before["file"])
        b = parse_text((folder / record["file"]).read_text(encoding="utf-8"), record["file"])
        a.t, b.t = before["t"], record["t"]
        window.update(start=a.t, end=b.t, **metrics_window(a, b))
        windows.append(window)
    for workload, before in pending.items():  # the run stopped before its "after" scrape
        windows.append({"workload": workload, "start": None, "end": None,
                        "generation_tokens": None,
                        "error": before.get("error") or "no after scrape (the run stopped)"})
    return windows


def _log_windows(specs: Sequence[str], tz: _dt.tzinfo | None,
                 around: tuple[float, float] | None = None):
    """Stats windows of the log (those ending within `around`, a margin added), and the edge
    uncertainty of their times (receive times are exact, log stamps are whole seconds)."""
    sources = [s for spec in specs for s in resolve_inputs([spec])]
    options = ParseOptions(tz=tz)
    streams = [source_events(s, options) if s.records else fast_events(s, options) for s in sources]
    keep = None if around is None else (around[0] - WINDOW_MARGIN_S, around[1] + WINDOW_MARGIN_S)
    analyzer = LogAnalyzer(tz, windows_around=keep).feed_all(merge_events(streams))
    analyzer.stats.place()
    receive = analyzer.t_sources.get("receive", 0) >= analyzer.t_sources.get("log", 0)
    return analyzer.stats.windows, (0.25 if receive else 1.0)


def _tail_stats_times(specs: Sequence[str], tz: _dt.tzinfo | None) -> list[float]:
    """Times of the stats lines near the end of each log file (reads its last 256 KiB only)."""
    times: list[float] = []
    for source in (s for spec in specs for s in resolve_inputs([spec])):
        if source.path is None or source.member is not None:
            continue
        try:
            with open(source.path, "rb") as fh:
                fh.seek(0, 2)
                size = fh.tell()
                fh.seek(max(0, size - TAIL_BYTES))
                data = fh.read()
        except OSError:
            continue
        if size > TAIL_BYTES:
            data = data[data.find(b"\n") + 1:]
        events = parse_bytes(data, records=source.records, options=ParseOptions(
            tz=tz, reference=source.mtime()))
        times += [e.t for e in events if e.t is not None and "Avg prompt throughput:" in e.message]
    return times


def wait_for_log(specs: Sequence[str], after_t: float, timeout_s: float,
                 tz: _dt.tzinfo | None = None) -> bool:
    """Wait until the log holds a stats line later than `after_t` (the window that covers the
    end of the protocol is logged up to one interval later); False on timeout."""
    deadline = time.monotonic() + timeout_s
    while True:
        try:
            times = _tail_stats_times(specs, tz)
        except SparktriageError:
            times = []
        if any(t >= after_t for t in times):
            return True
        if time.monotonic() >= deadline:
            return False
        time.sleep(1.0)


def reconcile_launch(launch: LaunchDir, logs: Sequence[str] = (), *,
                     tz: _dt.tzinfo | None = None) -> dict:
    """Reconcile a launch from its files and write reconcile.json; return the document."""
    records = list(read_records(launch.requests_path)) if launch.requests_path.exists() else []
    delivered = delivered_from_records(records)
    windows = metric_windows(launch)
    protocol = [(w["start"], w["end"]) for w in windows or [] if w.get("start") is not None]
    for window in windows or []:
        if window.get("start") is None:
            continue
        window["delivered_tokens"] = sum(a.tokens for a in delivered.arrivals
                                         if window["start"] <= a.t <= window["end"])
    log_windows, edge = (None, 1.0)
    if logs:
        spans = [(s, e) for s, _, _, e in delivered.spans] + protocol
        around = (min(s for s, _ in spans), max(e for _, e in spans)) if spans else None
        log_windows, edge = _log_windows(logs, tz, around)
    doc = reconcile(delivered, windows, log_windows, log_edge_s=edge, protocol=protocol or None)
    doc["inputs"] = {"requests": str(launch.requests_path), "logs": list(logs),
                     "metrics": windows is not None}
    doc = _format_times(doc, tz)
    launch.write("reconcile.json", doc, ReconcileDocument)
    return doc


def _format_times(doc: dict, tz) -> dict:
    for w in doc["protocol_windows"]:
        w["start"], w["end"] = iso(w["start"], tz), iso(w["end"], tz)
    for part in (doc.get("metrics") or {}, doc.get("log") or {}):
        for w in part.get("windows", []):
            for key in ("start", "end"):
                if isinstance(w.get(key), float):
                    w[key] = iso(w[key], tz)
    return doc


__all__ = ["MetricsRecorder", "metric_windows", "reconcile_launch", "wait_for_log"]
