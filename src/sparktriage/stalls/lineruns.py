"""A node's log lines as runs: consecutive lines that say the same thing at the same time.

The stall classifier keeps, per node, what every line said and when (docs/stalls.md, "What is
kept per line"). A line that repeats the one before it on the same node (same input, same
time, same process, level and text: a retry or a warning printed thousands of times within a
second) adds nothing a detector or a rule reads except that it was said once more, so it is
kept as a count on the run it extends instead of as an object of its own. Every reader of the
runs treats a run of N exactly as N copies of its line (`Mark.count`), so the verdicts are
those of the lines one by one.

What a run keeps of its first line is a copy of its event without the raw text (no reader
of the runs looks at it; the `logs` analysis has read it by then), its short fields (process,
level, source file, input, ...) shared with the runs before it rather than one string each,
its fields stored inline rather than in a dict: about half of what a full copy of each event
cost per distinct line (docs/stalls.md, "What is kept per line").

Lines `logs` lists as errors are never folded into a run: the classifier matches them by
input and line number (stalls/failures.py), so each keeps its own.

Thinning (`Thinning`, given by the classifier from its rules and thresholds): a quiet line is
one that no marker, no rule's `log_match` and no expression the classifier reads in every line
(stalls/texts.py) matches, and that is not blank. Consecutive quiet lines of one node, each
within `gap_s` of the one before (far below the shortest silence a detector reports), are a
stretch; of a stretch only the first line of each speaker (process, pid, level, shape, relay,
...) and the latest line are kept, each line dropped counted on the kept run before it. So
every time a detector measures (the last line before a silence, the first after, the first
line of a new process) and every line any reader looks at is kept as it was, the line numbers
of the runs stay what they were (a run of N stands for N lines), and a log of a million
distinct warnings keeps two runs instead of a million: memory is bounded by the lines that say
something and by the silences, not by the lines (docs/stalls.md, "What is kept per line").

`read_log` is the one reading pass of a plain log or a line-records file: it streams the log
parser's events once, feeds each to the `logs` analysis (whose document the classifier reads)
and to the runs, and holds no list of all lines.
"""

from __future__ import annotations

import gc
from dataclasses import dataclass, field, fields
from pathlib import Path
from typing import Callable, Iterable, Iterator

from sparktriage.logs.document import LogAnalyzer
from sparktriage.logs.events import LogEvent
from sparktriage.logs.parser import iter_events


@dataclass(slots=True)
class LineRun:
    """`count` consecutive lines of one node alike in all but their line number; `event` is
    the first of them."""

    event: LogEvent
    count: int = 1
    index: int = 0  # the first line's place among all lines of the input, every node's
    # a stretch's later run: every step from the run before it was at most the stretch's gap
    # (the lines between were folded), so no silence lies between the two
    covered: bool = False


def _same(a: LogEvent, b: LogEvent) -> bool:
    """b says what a said, at the same time, from the same place (line number and raw text
    aside: no reader of the runs looks at either)."""
    return (a.t == b.t and a.message == b.message and a.origin == b.origin
            and a.t_source == b.t_source and a.process == b.process and a.pid == b.pid
            and a.level == b.level and a.kind == b.kind and a.relay == b.relay
            and a.stream == b.stream and a.source_file == b.source_file
            and a.source_line == b.source_line and a.truncated == b.truncated
            and a.timed_by == b.timed_by and a.collector == b.collector and a.node == b.node)


_FIELDS = tuple(f.name for f in fields(LogEvent))
_SHARED = frozenset(("t_source", "node", "stream", "process", "relay", "level", "source_file",
                     "origin", "kind", "collector"))
_SHARE_MAX = 4096  # distinct short values shared per reading; past it, new ones are kept as read
_new, _set = object.__new__, object.__setattr__  # LogEvent is frozen


def _kept(event: LogEvent, shared: dict[str, str]) -> LogEvent:
    """The event as a run keeps it: no raw text, short fields shared (same values, so equality
    and every reader see the line as it was). Its fields are set one by one in their declared
    order, as the dataclass would: the interpreter then stores them inline (about 240 B an
    event) instead of in a dict of its own (about 530 B: the log parser's fast path)."""
    read = event.__dict__
    kept = _new(LogEvent)
    for name in _FIELDS:
        value = read[name]
        if name in _SHARED and value is not None:
            same = shared.get(value)
            if same is not None:
                value = same
            elif len(shared) < _SHARE_MAX:
                shared[value] = value
        elif name == "raw":
            value = ""
        _set(kept, name, value)
    return kept


@dataclass(frozen=True)
class Thinning:
    """Which lines a stretch may fold (module docstring, "Thinning"): `quiet(event)` says no
    reader of the classifier looks at the line's text; `gap_s`: the longest step between two
    lines of one stretch."""

    quiet: Callable[[LogEvent], bool]
    gap_s: float
    speakers_max: int = 256  # speakers a stretch keeps the first line of; past it, a new stretch


def _speaker(event: LogEvent) -> tuple:
    """Who said a line, as the detectors tell lines apart (a new process after a silence)."""
    return (event.process, event.pid, event.level, event.kind, event.relay, event.stream,
            event.origin, event.t_source, event.collector)


@dataclass
class RunBuilder:
    """Runs of one node, built line by line."""

    runs: list[LineRun] = field(default_factory=list)
    lines: int = 0
    shared: dict[str, str] = field(default_factory=dict)  # short values, one string each
    thin: Thinning | None = None
    _open: bool = False  # the last run may take the next line (it is not an error line)
    # the open stretch of quiet lines: its speakers, its last time, whether the last run is
    # a speaker's first line in it (kept) or only the latest line (replaced by the next)
    _speakers: set | None = None
    _last_t: float = 0.0
    _tail_kept: bool = True

    def add(self, event: LogEvent, alone: bool = False, index: int = 0,
            follows: bool = True) -> None:
        """One more line, the `index`-th of the input; `alone`: it keeps a run of its own (a
        listed error); `follows`: no other node's line came since this node's last one (a run
        holds lines adjacent in the input, so that an untimed excerpt's clock, line i at
        i µs, gives its lines one after the other)."""
        self.lines += 1
        if self._open and follows and not alone and _same(self.runs[-1].event, event):
            self.runs[-1].count += 1
            return
        covered = False
        if self.thin is not None:
            folded = self._thinned(event, alone)
            if folded is None:
                return
            covered = folded
        self.runs.append(LineRun(_kept(event, self.shared), 1, index, covered))
        self._open = not alone

    def _thinned(self, event: LogEvent, alone: bool) -> bool | None:
        """Fold a quiet line into the open stretch, or open one with it. None: the line is
        counted on a run (a blank line inside a stretch); else the caller appends it as a run,
        `covered` (True) when it continues a stretch. Before that, the stretch's latest line,
        if it was not a speaker's first, is folded into the run before it."""
        t = event.t
        speakers = self._speakers
        if not event.message.strip():
            if speakers is not None and not alone and t is not None \
                    and 0.0 <= t - self._last_t <= self.thin.gap_s:
                self.runs[-1].count += 1  # a blank line inside a stretch: nobody reads it
                return None
            self._speakers = None
            return False
        quiet = not alone and t is not None and self.thin.quiet(event)
        if not quiet:
            self._speakers = None
            return False
        if speakers is None or not 0.0 <= t - self._last_t <= self.thin.gap_s \
                or len(speakers) >= self.thin.speakers_max:
            self._speakers, self._last_t, self._tail_kept = {_speaker(event)}, t, True
            return False  # the stretch's first line
        speaker = _speaker(event)
        first_of_speaker = speaker not in speakers
        self._last_t = t
        if first_of_speaker:
            speakers.add(speaker)
        if not self._tail_kept:  # the latest line so far: counted on the run before it
            runs = self.runs
            dropped = runs.pop()
            runs[-1].count += dropped.count
        self._tail_kept = first_of_speaker
        return True


def runs_of(events: Iterable[LogEvent], alone=lambda event: False,
            thin: Thinning | None = None) -> list[LineRun]:
    """The runs of one node's events, in their order."""
    builder = RunBuilder(thin=thin)
    for index, event in enumerate(events):
        builder.add(event, alone(event), index)
    return builder.runs


def expand(runs: Iterable[LineRun]) -> Iterator[LogEvent]:
    """The lines of the runs one by one (the first line's event for every copy)."""
    for run in runs:
        for _ in range(run.count):
            yield run.event


@dataclass
class LogRead:
    """What one pass over a plain log gives the classifier."""

    nodes: dict[str, RunBuilder]
    analyzer: LogAnalyzer
    timed: bool  # some line has a time
    receive: bool  # some line carries a receive time (our line records)


def read_log(path: Path, thin: Thinning | None = None) -> LogRead:
    """Stream the log once: every event into the `logs` analysis and into its node's runs
    (quiet stretches thinned when `thin` is given)."""
    analyzer = LogAnalyzer()
    errors = analyzer.facts.errors
    nodes: dict[str, RunBuilder] = {}
    shared: dict[str, str] = {}  # short values shared by every node's runs
    timed = receive = False
    last = None
    collecting = gc.isenabled()
    gc.disable()  # the runs hold no reference cycles; a collection per thousands of
    try:          # allocations would walk every run kept so far, again and again
        for index, event in enumerate(iter_events([str(path)])):
            listed = len(errors)
            analyzer.feed(event)
            builder = nodes.get(event.node)
            if builder is None:
                builder = nodes[event.node] = RunBuilder(shared=shared, thin=thin)
            builder.add(event, len(errors) != listed, index, builder is last)
            last = builder
            if event.t is not None:
                timed = True
                receive = receive or event.t_source == "receive"
    finally:
        if collecting:
            gc.enable()
    return LogRead(nodes, analyzer, timed, receive)


__all__ = ["LineRun", "Thinning", "RunBuilder", "LogRead", "read_log", "runs_of", "expand"]
