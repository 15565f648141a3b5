"""Live `/metrics` scraping around each workload's requests, and waiting for the log's last window.

`MetricsRecorder.observer(progress)` wraps the protocol's observer: when a workload's
capabilities are known (its negotiation requests are done) it scrapes `/metrics` ("before"),
and after the workload's last request it scrapes again ("after"); with `every`, also after every
that many measured requests ("during": speculative acceptance read window by window,
session/windows.py; reconciliation pairs only "before" and "after"). Each page is kept raw in
``launches/<L>/metrics/<n>-<when>-<workload>.prom`` and indexed in ``metrics/scrapes.jsonl``
(time, url, file, or the error: a failed scrape never stops the measurement).
`reconcile.launch.reconcile_launch` later derives the windows from these files.

`wait_for_log` waits (bounded) for the stats line that covers the end of the protocol.
"""

from __future__ import annotations

import datetime as _dt
import re
import time
from typing import Callable, Sequence

from sparktriage.errors import SparktriageError
from sparktriage.logs.parser import ParseOptions, parse_bytes
from sparktriage.logs.sources import resolve_inputs
from sparktriage.metrics.prometheus import scrape
from sparktriage.progress import Observer
from sparktriage.store.documents import RecordWriter
from sparktriage.store.rundir import LaunchDir

TAIL_BYTES = 256 * 1024
_SAFE = re.compile(r"[^A-Za-z0-9._-]+")


class MetricsRecorder:
    """Scrapes `/metrics` before and after each workload's requests during `run_protocol`."""

    def __init__(self, url: str, launch: LaunchDir, warn: Callable[[str], None] | None = None,
                 headers: dict | None = None, every: int | None = None) -> None:
        self.url = url
        self.every = every  # also scrape ("during") after every this many measured requests
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
            elif (event == "request" and self.every and not details.get("warmup")
                  and (details["index"] + 1 - details.get("warmups", 0)) % self.every == 0):
                self.take("during", details["workload"])
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


__all__ = ["MetricsRecorder", "wait_for_log"]
