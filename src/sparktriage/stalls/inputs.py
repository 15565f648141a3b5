"""What the stall classifier reads: per node, log events, samples, stacks and dmesg lines.

`load(path)` accepts an evidence bundle (a folder or its `.tar.gz`, docs/formats.md, opened
with `bundle.reader.Bundle`, which refuses unsafe archives), a launch folder, a single
line-records file, or a plain vLLM log; log lines go through the log parser of `logs/`
(all vLLM formats, receive times first). A plain log or line-records file is read in one
streamed pass that feeds the `logs` analysis and the classifier together; every node keeps its
lines as runs of alike consecutive lines (stalls/lineruns.py, docs/stalls.md "What is kept per
line"). A plain log gives nodes with the `log` source only:
the classifier then says which signals were missing rather than guessing them. Every node's
records are moved onto the collecting machine's clock with its `clock.json` offset.

Sample files are not parsed up front: they are read through the bundle's indexed readers
(`bundle.indexed.IndexedRecords`), so a window parses only its own records, and over a long
window an evenly spaced subset of sampling rounds, which is plenty for the medians and shares
the rules compare (docs/stalls.md).
"""

from __future__ import annotations

from dataclasses import dataclass, field, replace
from pathlib import Path

from sparktriage.errors import InputError
from sparktriage.bundle import archive
from sparktriage.bundle.indexed import IndexedRecords
from sparktriage.bundle.reader import Bundle
from sparktriage.bundle.teardown import deliberate_stops
from sparktriage.logs.events import LogEvent
from sparktriage.logs.decision import Decision
from sparktriage.logs.document import LogAnalyzer
from sparktriage.logs.parser import iter_events
from sparktriage.logs.timeline import Timeline
from sparktriage.logs.untimed import require_log
from sparktriage.stalls.lineruns import LineRun, Thinning, read_log, runs_of

SAMPLE_SOURCES = ("host", "disk", "net", "procs", "gpu")
SOURCES = ("log",) + SAMPLE_SOURCES + ("stacks", "dmesg")

UNTIMED_STEP = 1e-6  # an untimed excerpt's lines: in input order, a million to the second
MAX_STACK_ROUNDS = 100  # py-spy rounds (every 10 s by default: 100 cover 16 minutes each)


def frames_text(dump: dict) -> str:
    """All frames of a py-spy dump as `function (file)` lines, innermost first."""
    return "\n".join(f"{frame.get('function')} ({frame.get('file')})"
                     for thread in dump.get("threads") or [] if isinstance(thread, dict)
                     for frame in thread.get("frames") or [] if isinstance(frame, dict))


def _compact_stack(dump: dict) -> dict:
    """A dump as the rules read it: who, when, and its frames as text (threads dropped)."""
    return {"t": dump["t"], "pid": dump.get("pid"), "role": dump.get("role"),
            "rank": dump.get("rank"), "frames_text": frames_text(dump)}
@dataclass
class NodeEvidence:
    """Everything recorded on one node."""

    name: str
    runs: list[LineRun] = field(default_factory=list)  # its log lines, alike ones as runs
    series: dict[str, IndexedRecords] = field(default_factory=dict)  # host/disk/net/procs/gpu/stacks/dmesg
    skipped: dict[str, str] = field(default_factory=dict)  # source -> why it was not recorded

    @property
    def events(self) -> list[LogEvent]:
        """The first line of each run."""
        return [run.event for run in self.runs]

    def has(self, source: str) -> bool:
        if source == "log":
            return bool(self.runs)
        return len(self.series.get(source, ())) > 0

    def get(self, source: str) -> IndexedRecords:
        return self.series.get(source) or IndexedRecords()

    def span(self) -> tuple[float, float] | None:
        times = [r.event.t for r in self.runs if r.event.t is not None]
        for series in self.series.values():
            if len(series):
                times += [series.times[0], series.times[-1]]
        return (min(times), max(times)) if times else None


@dataclass
class Evidence:
    """A whole startup: one or more nodes, and how it was recorded."""

    origin: str  # the path given
    form: str  # "bundle", "line-records" or "log"
    nodes: dict[str, NodeEvidence]
    started: float | None = None
    ended: float | None = None
    outcome: str | None = None
    logs: dict = field(default_factory=dict)  # the `logs` document of the same lines
    attempts: dict[str, list[Timeline]] = field(default_factory=dict)  # startup timelines
    stops: dict[str, float] = field(default_factory=dict)  # node -> the collector tore it down
    decision: Decision = field(default_factory=Decision)  # the failures `logs` reports too
    timed: bool = True  # False: an untimed excerpt (no line has a stamp; logs/untimed.py)

    def span(self) -> tuple[float, float] | None:
        spans = [s for s in (n.span() for n in self.nodes.values()) if s]
        if not spans:
            return None
        start = min(s[0] for s in spans)
        end = max(s[1] for s in spans)
        if self.started is not None:
            start = min(start, self.started)
        if self.ended is not None:
            end = max(end, self.ended)
        return start, end

    def sources(self) -> set[str]:
        return {s for n in self.nodes.values() for s in SOURCES if n.has(s)}


def load(path: Path, thin: Thinning | None = None) -> Evidence:
    """Read a bundle (folder or archive), a launch folder, line records or a plain log; with
    `thin`, stretches of quiet lines are folded (stalls/lineruns.py, "Thinning")."""
    if not path.exists():
        raise InputError(f"{path}: no such file or folder")
    if Bundle.is_bundle(path) and (path.is_dir() or path.name.endswith((".tar.gz", ".tgz",
                                                                        ".tar"))):
        # series read their records later: the bundle stays open for the command's life
        bundle = Bundle.open(path)
        archive.hold(bundle.close)
        evidence = _from_bundle(bundle, thin)
        evidence.origin = str(path)
        return evidence
    return _from_log(path, thin)


def _attach_logs(evidence: Evidence, analyzer: LogAnalyzer) -> None:
    analyzer.teardown = dict(evidence.stops)  # the collector's own stops: teardown, no failure
    evidence.logs = analyzer.document()
    evidence.decision = analyzer.decision
    evidence.attempts = {node: b.finish() for node, b in analyzer.builders.items()}


def _from_log(path: Path, thin: Thinning | None = None) -> Evidence:
    """A plain log or line records, read in one streamed pass (stalls/lineruns.py)."""
    read = read_log(path, thin)
    evidence = Evidence(origin=str(path), form="line-records" if read.receive else "log",
                        nodes={}, timed=read.timed)
    _attach_logs(evidence, read.analyzer)  # the `logs` document reads the lines as they are
    require_log(str(path), evidence.logs)
    for name, builder in read.nodes.items():
        runs = builder.runs
        if not read.timed:
            # an untimed excerpt: its lines are read in input order on a clock that barely
            # moves (line i at i µs), so that order tells what came first (a ready line, then
            # an error) and every window a rule reads holds them all; no stall detector runs
            # on it and its times are null in the document (docs/stalls.md, "Untimed excerpts")
            runs = [LineRun(replace(r.event, t=r.index * UNTIMED_STEP), r.count, r.index)
                    for r in runs]
        evidence.nodes[name] = NodeEvidence(name, runs)
    return evidence


def _num(value) -> float | None:
    return float(value) if isinstance(value, (int, float)) and not isinstance(value, bool) else None


_COLLECTOR_SOURCE = (("stack", "stacks"), ("py-spy", "stacks"), ("pyspy", "stacks"),
                     ("dmesg", "dmesg"), ("proc", "procs"), ("gpu", "gpu"), ("nvml", "gpu"),
                     ("disk", "disk"), ("net", "net"), ("host", "host"), ("log", "log"))


def source_of_collector(name: str) -> str | None:
    """Which evidence source a manifest collector name feeds."""
    lowered = name.lower()
    for needle, source in _COLLECTOR_SOURCE:
        if needle in lowered:
            return source
    return None


def _from_bundle(bundle: Bundle, thin: Thinning | None = None) -> Evidence:
    skipped: dict[str, dict[str, str]] = {}
    for entry in bundle.manifest():
        reason = entry.skipped or (entry.error if not entry.records else None)
        source = source_of_collector(entry.collector or "")
        if reason and source:
            skipped.setdefault(entry.node, {})[source] = reason
    nodes: dict[str, NodeEvidence] = {}
    by_node: dict[str, list[LogEvent]] = {}
    all_events: list[LogEvent] = []
    for name in bundle.nodes():
        clock = bundle.clock(name)
        offset = clock.offset_s if clock is not None and clock.offset_s else 0.0
        node = NodeEvidence(name, skipped=skipped.get(name, {}))
        specs = [f"{name}={bundle.log_path(name, log)}" for log in bundle.log_names(name)]
        events = list(iter_events(specs)) if specs else []
        # records say node clock; the node minus collector offset moves them onto one clock
        events = [replace(e, t=e.t - offset) if offset and e.t is not None else e
                  for e in events]
        by_node[name] = events
        for source in SAMPLE_SOURCES:
            node.series[source] = bundle.indexed(name, "samples", source, offset)
        node.series["stacks"] = bundle.indexed(name, "stacks", None, offset, MAX_STACK_ROUNDS,
                                                _compact_stack)
        node.series["dmesg"] = bundle.indexed(name, "dmesg", None, offset)
        nodes[name] = node
        all_events += events
    all_events.sort(key=lambda e: e.t if e.t is not None else float("-inf"))
    info = bundle.info
    evidence = Evidence(origin=str(bundle.root), form="bundle", nodes=nodes,
                        started=_num(info.started), ended=_num(info.ended), outcome=info.outcome,
                        stops=deliberate_stops(bundle.events(), list(nodes)))
    _attach_logs(evidence, LogAnalyzer().feed_all(all_events))
    del all_events
    keys = {(str(e.get("origin")), e.get("line")) for e in evidence.logs.get("errors") or []
            if isinstance(e, dict)}  # lines matched by input and number keep runs of their own
    for name, events in by_node.items():
        nodes[name].runs = runs_of(events, lambda e: (str(e.origin), e.line_no) in keys, thin)
    return evidence
