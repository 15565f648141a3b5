"""What a running session looks like right now, as data (the live view draws it; cli/ only),
and the live stall watcher.

`LiveState.apply(event, details)` folds the runner's and the supervisor's events into the
current step, per-node startup state (phase from the log's markers, seconds since the node's
last log line, probable stall cause as soon as the live classifier has one), tokens and rate
during the protocol, launches done and left, the sweep's current leader, elapsed and estimated
remaining time. `StallWatcher` runs the stall classifier (sparktriage.stalls) on the launch's
evidence bundle as it is written, every few seconds until the server is ready, and appends
each new verdict with its time to `live-stalls.jsonl` in the launch folder; the verdict after
teardown (`stalls.json`) stays the authoritative one.
"""

from __future__ import annotations

import threading
import time
from dataclasses import dataclass, field
from pathlib import Path

from sparktriage.errors import SparktriageError
from sparktriage.store.documents import RecordWriter
from sparktriage.progress import Observer

WATCH_INTERVAL_S = 5.0



def cause_text(record: dict) -> str:
    """A live verdict's cause; an unknown one names the candidates still open, since without
    evidence for one of them the classifier names none."""
    cause, candidates = record.get("cause"), record.get("open") or []
    if cause == "unknown" and candidates:
        return f"unknown (open: {', '.join(candidates)})"
    return str(cause)

@dataclass
class NodeView:
    phase: str = "starting"
    last_line: float | None = None  # time.time() of the node's last log line
    cause: str | None = None  # "cold-storage (0.70) in weight loading, 90 s"


@dataclass
class LiveState:
    """The session at this instant; `apply` every event, then draw."""

    started: float = field(default_factory=time.time)
    step: str = "-"
    step_kind: str = "-"
    launch: str | None = None
    nodes: dict[str, NodeView] = field(default_factory=dict)
    ready: bool = False
    tokens: int = 0
    requests_done: int = 0
    requests_total: int = 0
    rate_tok_s: float | None = None
    launches_done: int = 0
    launches_planned: int = 0
    leader: str | None = None
    estimate_left_s: float | None = None
    last_message: str | None = None

    def apply(self, event: str, d: dict, now: float | None = None) -> None:
        now = time.time() if now is None else now
        if event == "session-step":
            self.step, self.step_kind = d.get("id", "-"), d.get("kind", "-")
            self.estimate_left_s = d.get("estimate_left_s", self.estimate_left_s)
            self.launches_done = d.get("launches_done", self.launches_done)
            self.launches_planned = d.get("launches_planned", self.launches_planned)
        elif event == "session-launch":
            self.launch, self.ready, self.nodes = d.get("label"), False, {}
            self.tokens = self.requests_done = self.requests_total = 0
            self.rate_tok_s = None
            for node in d.get("nodes") or []:
                self.nodes[node] = NodeView(last_line=now)
        elif event == "line":
            self.nodes.setdefault(d.get("node", "?"), NodeView()).last_line = d.get("t", now)
        elif event == "marker":
            view = self.nodes.setdefault(d.get("node", "?"), NodeView())
            view.phase = str(d.get("marker"))
            view.last_line = d.get("t", now)
        elif event == "ready":
            self.ready = True
            for view in self.nodes.values():
                view.phase = "ready"
        elif event == "live-stall":
            view = self.nodes.setdefault(d.get("node", "?"), NodeView())
            view.cause = (f"{cause_text(d)} ({d.get('confidence', 0):.2f}) in {d.get('phase')}, "
                          f"{d.get('duration_s', 0):.0f} s")
        elif event == "request" and not d.get("warmup"):
            self.requests_done += 1
            self.requests_total = max(self.requests_total, d.get("total", 0))
            self.tokens += int(d.get("output_tokens") or 0)
            if d.get("decode_tok_s"):
                self.rate_tok_s = float(d["decode_tok_s"])
        elif event == "session-launch-done":
            self.launches_done = d.get("launches_done", self.launches_done + 1)
        elif event == "sweep-leader":
            self.leader = d.get("text")
        elif event in ("session-note", "warning"):
            self.last_message = d.get("text")

    def elapsed_s(self, now: float | None = None) -> float:
        return (time.time() if now is None else now) - self.started


class StallWatcher:
    """Classify a launch's startup live; use as a context manager around the launch."""

    def __init__(self, bundle: Path, out: Path, observe: Observer,
                 interval_s: float = WATCH_INTERVAL_S) -> None:
        self.bundle = bundle
        self.out = out
        self.observe = observe
        self.interval_s = interval_s
        self.stop = threading.Event()
        self.seen: set[tuple] = set()
        self.started = time.time()
        self._thread = threading.Thread(target=self._loop, daemon=True)
        self._rules = None

    def __enter__(self) -> "StallWatcher":
        self._thread.start()
        return self

    def __exit__(self, *exc) -> None:
        self.stop.set()
        self._thread.join(30.0)

    def ready(self) -> None:
        """The server is ready: its startup has nothing more to classify."""
        self.stop.set()

    def check(self) -> list[dict]:
        """One pass of the classifier over the evidence so far; the new verdicts."""
        from sparktriage.stalls.analyze import analyze, load_rules
        if self._rules is None:
            self._rules = load_rules()
        try:
            document, _ = analyze(self.bundle, self._rules)
        except (SparktriageError, OSError, ValueError, KeyError, IndexError, TypeError):
            return []  # the bundle is still being written: try again next pass
        new = []
        for finding in document.get("findings") or []:
            verdict = finding.get("verdict") or {}
            key = (finding.get("node"), finding.get("phase"), verdict.get("id"), finding.get("kind"))
            if key in self.seen:
                continue
            self.seen.add(key)
            new.append({"t": time.time(), "after_s": round(time.time() - self.started, 1),
                        "node": finding.get("node"), "kind": finding.get("kind"),
                        "phase": finding.get("phase"), "cause": verdict.get("id"),
                        "confidence": verdict.get("confidence") or 0.0,
                        "open": list(verdict.get("open") or []),
                        "start": finding.get("start"), "duration_s": finding.get("duration_s") or 0.0})
        return new

    def _loop(self) -> None:
        with RecordWriter(self.out) as writer:
            while not self.stop.wait(self.interval_s):
                for verdict in self.check():
                    writer.append(verdict)
                    self.observe("live-stall", verdict)
