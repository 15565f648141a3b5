"""Reconcile one launch from its files: the `/metrics` windows, the log's windows, delivered tokens.

The scrapes were taken live by `bench.metrics_recorder.MetricsRecorder`
(``launches/<L>/metrics/``); this stage only reads them.

`reconcile_launch(launch, logs)` is a pure function of the launch folder (requests.jsonl,
metrics/, the server log) and writes ``reconcile.json`` (docs/formats.md).
"""

from __future__ import annotations

import datetime as _dt
from typing import Sequence

from sparktriage.documents.reconcile import ReconcileDocument
from sparktriage.logs.clock import iso
from sparktriage.logs.document import LogAnalyzer
from sparktriage.logs.parser import ParseOptions, merge_events, source_events
from sparktriage.logs.scan import fast_events
from sparktriage.logs.sources import resolve_inputs
from sparktriage.metrics.prometheus import metrics_window, parse_text
from sparktriage.reconcile.windows import delivered_from_records, reconcile
from sparktriage.store.documents import read_records
from sparktriage.store.rundir import LaunchDir

WINDOW_MARGIN_S = 120.0  # stats windows kept around the protocol window (for their starts)


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
        if record.get("when") == "during":  # acceptance windows only (session/windows.py)
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
    doc = format_times(doc, tz)
    launch.write("reconcile.json", doc, ReconcileDocument)
    return doc


def format_times(doc: dict, tz) -> dict:
    """The document's Unix times as ISO 8601 in zone `tz` (as reconcile.json stores them)."""
    for w in doc["protocol_windows"]:
        w["start"], w["end"] = iso(w["start"], tz), iso(w["end"], tz)
    for part in (doc.get("metrics") or {}, doc.get("log") or {}):
        for w in part.get("windows", []):
            for key in ("start", "end"):
                if isinstance(w.get(key), float):
                    w[key] = iso(w[key], tz)
    return doc


__all__ = ["format_times", "metric_windows", "reconcile_launch"]
