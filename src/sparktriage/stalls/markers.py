"""Log lines annotated with the vocabulary's markers, and the per-node startup timeline.

A marker is a named pattern of `rules/_vocabulary.yaml`. One combined expression rejects the
many lines that match no marker before any single pattern is tried. The timeline knows, per
node, the phase at any time (the startup phases of the log parser, `logs.timeline`, so
that `stalls` and `logs` name phases alike), when the start became ready or failed, the shard
progress bar and the checkpoint size the log announced.

Lines the log parser could not time (the first lines of a pasted excerpt, a traceback's
continuation) take the time of the nearest timed line before them (after them at the top of
an excerpt) and are read for markers like any other. After the start became ready the phase is
`serving`: an error or a stated wait there is still a finding, in that phase.
"""

from __future__ import annotations

import bisect
import re
from dataclasses import dataclass, field, replace

from sparktriage.logs.catalog import PHASES, RULES, match_message
from sparktriage.logs.events import LogEvent
from sparktriage.logs.timeline import Timeline
from sparktriage.stalls.lineruns import LineRun
from sparktriage.stalls.prefilter import Prefilter
from sparktriage.stalls.schema import Marker, Vocabulary

_BAR = re.compile(r"(\d+)%[^|]*\|\s*(\d+)/(\d+)")
_SIZE = re.compile(r"Checkpoint size: ([\d.]+) GiB")
_GIB = 1024 ** 3
_STATED_TRIES = 8  # match positions tried for a stated duration
MATCH_MEMO = 4096  # messages whose markers are remembered (cleared when full)
SERVING = "serving"  # the phase after the start became ready (not a startup phase of logs/)


def _scoped(pattern: str) -> str:
    """A pattern with a leading global flag turned into a scoped group, for alternation."""
    pattern = re.sub(r"\(\?P<\w+>", "(?:", pattern)  # names repeat across markers
    match = re.match(r"^\(\?([aiLmsux]+)\)", pattern)
    if match:
        return f"(?{match.group(1)}:{pattern[match.end():]})"
    return f"(?:{pattern})"


class MarkerSet:
    """The vocabulary's markers, compiled."""

    def __init__(self, vocabulary: Vocabulary) -> None:
        self.vocabulary = vocabulary
        self.markers: dict[str, Marker] = dict(vocabulary.markers)
        # multi-line events (a message with its traceback): ^ and $ anchor at every line
        self.compiled = {name: re.compile(m.pattern, re.M) for name, m in self.markers.items()}
        self.any = re.compile("|".join(_scoped(m.pattern) for m in self.markers.values()), re.M)
        # the literals a marker's match must hold: most lines hold none and are not tried
        self.maybe = Prefilter([m.pattern for m in self.markers.values()]).maybe
        self.phases = list(PHASES)
        self._memo: dict[str, tuple[str, ...]] = {}

    def stated(self, name: str, message: str, group: str) -> float | None:
        """What a marked line states in a named group, in seconds: `wait_s` (its `wait_ms`
        counterpart too) or `took_s`, each possibly numbered (`wait_s2`); None when the line
        does not say."""
        rx = self.compiled[name]
        units = {"wait_s": 1.0, "wait_ms": 0.001} if group == "wait_s" else {group: 1.0}
        keys = [(key, units[key.rstrip("0123456789")]) for key in rx.groupindex
                if key.rstrip("0123456789") in units]
        if not keys:
            return None
        pos = 0
        for _ in range(_STATED_TRIES):  # another alternative may match further left
            found = rx.search(message, pos)
            if found is None:
                return None
            for key, scale in keys:
                value = found.group(key)
                if value:
                    return float(value) * scale
            pos = found.start() + 1
        return None

    def match(self, message: str) -> tuple[str, ...]:
        """The markers a message matches (the exclusive ones alone when any matches). A log
        repeats its messages (retries, periodic warnings): the answer for the last
        MATCH_MEMO messages is kept, so each costs its patterns once."""
        names = self._memo.get(message)
        if names is not None:
            return names
        names = self._match(message)
        if len(self._memo) >= MATCH_MEMO:
            self._memo.clear()
        self._memo[message] = names
        return names

    def _match(self, message: str) -> tuple[str, ...]:
        if not self.maybe(message) or not self.any.search(message):
            return ()
        names = tuple(name for name, rx in self.compiled.items() if rx.search(message))
        if any(self.markers[n].exclusive for n in names):
            return tuple(n for n in names if self.markers[n].exclusive)
        return names


@dataclass(frozen=True)
class Mark:
    """A log event and the markers it matched; `count`: how many consecutive lines alike it
    stands for (stalls/lineruns.py), every reader counting it that many times."""

    t: float
    event: LogEvent
    markers: tuple[str, ...]
    count: int = 1
    covered: bool = False  # no silence since the mark before it (lineruns.LineRun.covered)


@dataclass
class NodeTimeline:
    """One node's startup as the log tells it."""

    node: str
    marks: list[Mark]
    start: float
    end: float  # end of observation on this node (log, samples or bundle end)
    ready_at: float | None = None
    failed_at: float | None = None
    failed_mark: Mark | None = None  # the line that said the start failed
    stopped_at: float | None = None  # a signal from outside stopped the server before ready
    torn_down_at: float | None = None  # the collector's teardown event (it stopped the server)
    phase_points: list[tuple[float, str]] = field(default_factory=list)
    bar: list[tuple[float, int, int]] = field(default_factory=list)  # (t, n, total) shards
    checkpoint_bytes: float | None = None
    weight_start: float | None = None
    weight_end: float | None = None
    _times: list[float] | None = field(default=None, repr=False, compare=False)

    def phase_at(self, t: float) -> str | None:
        """The phase that had started at t (the first phase before any); `serving` once ready;
        None when the log names no phase at all (an excerpt of waiting lines)."""
        if self.ready_at is not None and t >= self.ready_at:
            return SERVING
        times = [p[0] for p in self.phase_points]
        i = bisect.bisect_right(times, t) - 1
        if i >= 0:
            return self.phase_points[i][1]
        return self.phase_points[0][1] if self.phase_points else None

    def lines(self, start: float, end: float) -> list[Mark]:
        """The marks from start to end, both included (marks are in time order)."""
        times = self.times
        return self.marks[bisect.bisect_left(times, start):bisect.bisect_right(times, end)]

    @property
    def times(self) -> list[float]:
        """The marks' times, computed once: windows are found by bisection, not by a scan."""
        if self._times is None or len(self._times) != len(self.marks):
            self._times = [m.t for m in self.marks]
        return self._times

    @property
    def line_count(self) -> int:
        """The log lines the marks stand for."""
        return sum(m.count for m in self.marks)

    def last_before(self, t: float, progress_only: list[Mark] | None = None) -> Mark | None:
        source = progress_only if progress_only is not None else self.marks
        candidates = [m for m in source if m.t <= t]
        return candidates[-1] if candidates else None

    @property
    def settled(self) -> float:
        """When the startup ended: ready, failed, stopped, or the end of observation."""
        return self.ready_at or self.failed_at or self.stopped_at or self.end


_RESOLVE_ANCHORS = {rule.id for rule in RULES if rule.phase == PHASES[0]}


def _anchored(phase, attempt) -> bool:
    """A phase the log names. The log parser opens `resolve` at the first timed line; when
    neither that line nor a later one anchors `resolve` (a banner, the argument dump: an
    excerpt that starts mid-way, with a waiting line or a traceback) the phase there is
    unknown, not `resolve`."""
    if phase.name != PHASES[0] or not phase.anchor:
        return True
    if any(hit.rule.phase for hit in match_message(phase.anchor)):
        return True
    return bool(_RESOLVE_ANCHORS.intersection(getattr(attempt, "anchors", {}) or {}))


_ORDER = {name: i for i, name in enumerate(PHASES)}


def _add_shown_phases(timeline: "NodeTimeline", marks: list["Mark"], markers: MarkerSet) -> None:
    """Lines whose marker names a phase (`phase:`) start that phase where the log parser's
    anchors leave an earlier one running (an old version's profile run, a traceback through
    the rendezvous); phases never go back."""
    points = list(timeline.phase_points)
    for mark in marks:
        for name in mark.markers:
            shown = markers.markers[name].phase
            if shown is None or shown not in _ORDER:
                continue
            current = timeline.phase_at(mark.t)
            if current is None or _ORDER.get(current, -1) < _ORDER[shown]:
                points.append((mark.t, shown))
                points.sort(key=lambda p: p[0])
                timeline.phase_points = points
    timeline.phase_points = points


def build_timeline(node: str, runs: list[LineRun], markers: MarkerSet,
                   end_hint: float | None, attempts: list[Timeline] | None = None
                   ) -> NodeTimeline | None:
    timed = attach_untimed(runs)
    if not timed:
        return None
    marks = [Mark(r.event.t, r.event, markers.match(r.event.message), r.count, r.covered)
             for r in timed]
    end = max(timed[-1].event.t, end_hint or timed[-1].event.t)
    timeline = NodeTimeline(node, marks, start=timed[0].event.t, end=end)
    timeline.phase_points = [(p.start, p.name) for attempt in attempts or []
                             for p in attempt.phases if _anchored(p, attempt)]
    timeline.phase_points.sort(key=lambda p: p[0])
    _add_shown_phases(timeline, marks, markers)
    for mark in marks:
        for name in mark.markers:
            marker = markers.markers[name]
            if marker.ready and timeline.ready_at is None:
                timeline.ready_at = mark.t
            if name == "fs_type":
                size = _SIZE.search(mark.event.message)
                if size:
                    timeline.checkpoint_bytes = float(size.group(1)) * _GIB
            if name in ("load_start", "fs_type", "shard_bar", "prefetch") \
                    and timeline.weight_start is None:
                timeline.weight_start = mark.t
            if name in ("weights_loaded", "model_loaded") and timeline.weight_end is None:
                timeline.weight_end = mark.t
            if name == "shard_bar" and mark.event.t_source not in ("inferred", "attached"):
                # a bar line without a time of its own (plain logs) cannot date progress
                bar = _BAR.search(mark.event.message)
                if bar:
                    timeline.bar.append((mark.t, int(bar.group(2)), int(bar.group(3))))
    if timeline.ready_at is not None:  # a stop while serving: what follows is teardown
        timeline.stopped_at = next((m.t for m in marks if m.t >= timeline.ready_at and any(
            markers.markers[n].stopped for n in m.markers)), None)
    else:
        for mark in marks:
            if any(markers.markers[n].stopped for n in mark.markers):
                timeline.stopped_at = mark.t  # teardown lines that follow are not a failure
                break
            if any(markers.markers[n].failure for n in mark.markers):
                timeline.failed_at, timeline.failed_mark = mark.t, mark
                break
    return timeline


def _attached(run: LineRun, t: float) -> LineRun:
    return LineRun(replace(run.event, t=t, t_source="attached"), run.count, run.index)


def attach_untimed(runs: list[LineRun]) -> list[LineRun]:
    """Every run with a time: an untimed one takes the time of the nearest timed line
    before it in its input (after it, at the top of an input), `t_source` "attached"."""
    out: list[LineRun] = []
    pending: list[LineRun] = []
    last: dict[str, float] = {}
    for run in runs:
        event = run.event
        if event.t is not None:
            if pending:
                out += [_attached(early, event.t) for early in pending
                        if early.event.origin == event.origin]
                pending = [r for r in pending if r.event.origin != event.origin]
            last[event.origin] = event.t
            out.append(run)
        elif event.origin in last:
            out.append(_attached(run, last[event.origin]))
        else:
            pending.append(run)
    out.sort(key=lambda r: r.event.t)  # stable: an input's own order is kept at equal times
    return out


def matching_line(message: str, rx: re.Pattern) -> str:
    """The line of a (multi-line) message that the pattern matched, else its first line."""
    for line in message.split("\n"):
        if rx.search(line):
            return line.strip()
    return message.split("\n", 1)[0].strip()


def phase_spans(timeline: NodeTimeline) -> list[dict]:
    """The node's phases as {name, start, end, duration_s} (end = next phase's start)."""
    spans = []
    first = timeline.phase_points[0][1] if timeline.phase_points else PHASES[0]
    # phases the cluster entered after this node had settled (failed, stopped) are not its own:
    # a failed node would show a negative `ready`
    settled = timeline.settled
    points = [(timeline.start, first)] + [p for p in timeline.phase_points
                                           if timeline.start <= p[0] <= settled]
    merged: list[tuple[float, str]] = []
    for t, name in points:
        if merged and merged[-1][0] == t:
            merged[-1] = (t, name)
        else:
            merged.append((t, name))
    for i, (t, name) in enumerate(merged):
        end = merged[i + 1][0] if i + 1 < len(merged) else settled
        spans.append({"name": name, "start": t, "end": end, "duration_s": round(end - t, 3)})
    return spans
