"""One failure model for `logs` and `stalls`: every error `logs` counts is a failure here.

`sparktriage logs` counts as errors ERROR/CRITICAL records, tracebacks, bare exception lines
and fatal signatures (logs/facts.py). The stall classifier takes that list as it is (the same
lines, matched by input and line number), groups each node's errors into episodes (one per
start attempt, and one per serving stretch: a crash logs a burst of errors, often minutes
apart as retries give up) and makes each episode a `failure` period in the phase where it
happened, `serving` included. So the two commands never disagree
on whether, where and how often a start or a server failed: the errors of all failure findings
add up to the `errors_total` of `logs`, except errors logged after the server was stopped from
outside (its teardown), which are counted apart.

A vocabulary marker with `failure: true` names the error a start died of (EngineCore failed to
start, a store timeout, ptxas): the start ends there. Other errors do not end it: a start that
logs an error and then says nothing more while observation goes on is also a hang (a Ray
worker killed mid-load leaves the others waiting), and is reported as both.
"""

from __future__ import annotations

import bisect
from dataclasses import dataclass, field

from sparktriage.stalls.markers import SERVING, Mark, MarkerSet, NodeTimeline
from sparktriage.stalls.periods import Period, shown_phase


@dataclass
class Episode:
    """A burst of error lines on one node."""

    marks: list[Mark] = field(default_factory=list)

    @property
    def start(self) -> float:
        return self.marks[0].t

    @property
    def end(self) -> float:
        return self.marks[-1].t


def error_keys(logs_document: dict) -> dict[tuple[str, int], bool]:
    """(input, line number) of every error the `logs` document lists, and whether `logs`
    reads it as an engine death."""
    return {(str(e.get("origin")), int(e["line"])): bool(e.get("engine_death"))
            for e in logs_document.get("errors") or []
            if isinstance(e, dict) and isinstance(e.get("line"), int)}


def _key(mark: Mark) -> tuple[str, int]:
    return (str(mark.event.origin), mark.event.line_no)


def error_marks(timeline: NodeTimeline, keys: dict[tuple[str, int], bool],
                markers: MarkerSet) -> list[Mark]:
    """The node's lines that `logs` counts as errors, plus lines a failure marker names
    (a failure marker on a line `logs` reads as INFO still ends the start)."""
    out = []
    for mark in timeline.marks:
        if _key(mark) in keys or any(markers.markers[n].failure for n in mark.markers):
            out.append(mark)
    return out


def episodes(marks: list[Mark], attempt_starts: list[float],
             ready_at: float | None = None) -> list[Episode]:
    """One episode per start attempt that logged errors, and one per serving stretch: `logs`
    opens an attempt at each restart (a new banner or argument dump after the engine started),
    and becoming ready ends the start's part of an attempt."""
    out: dict[tuple[int, bool], Episode] = {}
    starts = sorted(attempt_starts)
    for mark in marks:
        attempt = bisect.bisect_right(starts, mark.t)
        begun = starts[attempt - 1] if attempt > 0 else float("-inf")
        serving = ready_at is not None and ready_at >= begun and mark.t >= ready_at
        out.setdefault((attempt, serving), Episode()).marks.append(mark)
    return sorted(out.values(), key=lambda e: e.start)


def restarts(timeline: NodeTimeline, errors: list[Mark], markers: MarkerSet) -> list[float]:
    """When a process that had failed comes back (a restart policy, a supervisor): the first
    line, after a failure-marker error, of a known process name under a new pid. The log parser
    opens a new attempt only at a new banner, which a restarted engine does not print."""
    failing = {id(m) for m in errors if any(markers.markers[n].failure for n in m.markers)}
    if not failing:
        return []
    out: list[float] = []
    pids: dict[str, set] = {}
    last_failure = None
    for mark in timeline.marks:
        event = mark.event
        if last_failure is not None and event.process and event.pid is not None \
                and event.process in pids and event.pid not in pids[event.process]:
            out.append(mark.t)
            last_failure = None
        if event.process and event.pid is not None:
            pids.setdefault(event.process, set()).add(event.pid)
        if id(mark) in failing:
            last_failure = mark.t
    return out


# the collector signals the server (SIGTERM, then SIGKILL after its grace period, 15 s by
# default) before it records its teardown event: errors this close before it are the kill's
TEARDOWN_WINDOW_S = 30.0


def is_teardown(timeline: NodeTimeline, episode: Episode) -> bool:
    """Errors logged after the server was stopped from outside belong to its teardown: after a
    stop signal it logged, or in the moments the collector was tearing it down on purpose."""
    if timeline.stopped_at is not None and episode.start >= timeline.stopped_at:
        return True
    down = timeline.torn_down_at
    return down is not None and episode.start >= down - TEARDOWN_WINDOW_S


def telling(episode: Episode, markers: MarkerSet) -> Mark:
    """The line of an episode that names the error: a failure marker's, else the first."""
    for mark in episode.marks:
        if any(markers.markers[n].failure for n in mark.markers):
            return mark
    return episode.marks[0]


def failure_text(mark: Mark, markers: MarkerSet) -> str:
    """The line of the failing event that names the error (a traceback's last line)."""
    lines = [line.strip() for line in mark.event.message.split("\n") if line.strip()]
    if len(lines) > 1 and lines[-1] and not lines[-1].startswith("File "):
        return f"{lines[0]} ({lines[-1]})" if lines[0] != lines[-1] else lines[0]
    return lines[0] if lines else mark.event.message


def is_failure(timeline: NodeTimeline, episode: Episode, keys: dict[tuple[str, int], bool],
               markers: MarkerSet) -> bool:
    """An episode is a failure when it ends a start (a failure marker, or a start that never
    became ready after it) or, while serving, when the engine died (`logs`' engine_death or
    a failure marker). A start that logged errors and still became ready, and a server that
    logged a request's error and went on, did not fail: their errors are counted apart."""
    death = any(keys.get(_key(m)) or any(markers.markers[n].failure for n in m.markers)
                for m in episode.marks)
    if timeline.phase_at(episode.start) == SERVING:
        return death
    return death or timeline.ready_at is None or timeline.ready_at < episode.start


def failure_periods(timeline: NodeTimeline, found: list[Episode], progress: list[Mark],
                    markers: MarkerSet, keys: dict[tuple[str, int], bool]
                    ) -> tuple[list[Period], dict[str, int]]:
    """A failure period per failing episode; the errors of the others are counted apart
    (`teardown`: after a stop; `other`: a start or a server that went on)."""
    out: list[Period] = []
    apart = {"teardown": 0, "other": 0}
    for episode in found:
        counted = sum(1 for m in episode.marks if _key(m) in keys)
        if is_teardown(timeline, episode):
            apart["teardown"] += counted
            continue
        if not is_failure(timeline, episode, keys, markers):
            apart["other"] += counted
            continue
        first = episode.marks[0]
        if timeline.failed_at is not None and first.t <= timeline.failed_at <= episode.end:
            first = timeline.failed_mark or first  # the line that ended the start
        else:
            first = telling(episode, markers)
        start = first.t
        is_end = timeline.failed_at is not None and start <= timeline.failed_at <= episode.end
        end = max(episode.end, timeline.marks[-1].t) if is_end else episode.end
        before = [m for m in progress if m.t < start]
        phase = shown_phase(timeline.phase_at(start),
                             timeline.lines(episode.start, episode.end), markers)
        what = "the server failed" if phase == SERVING else (
            "the start failed" if is_end else "an error")
        # what led to the failure (a silent wait, a crawl) is evidence for its cause too
        out.append(Period(timeline.node, "failure", start, end, phase, ["failure"],
                          f"{what}: {failure_text(first, markers)[:200]}",
                          last_line=before[-1] if before else None,
                          evidence_from=before[-1].t if before else None,
                          facts={"errors": counted}))
    return out, apart


def untimed_failure_periods(timeline: NodeTimeline, found: list[Episode], markers: MarkerSet,
                            keys: dict[tuple[str, int], bool], logs: dict
                            ) -> tuple[list[Period], dict[str, int]]:
    """The failures of an untimed excerpt, whose lines all stand at one instant (no duration
    can come out of them): its phase is the one a marker names, else the one `logs` read from
    the catalog anchors before its first error (logs/untimed.py)."""
    shown = next((e["phase"] for e in logs.get("errors") or [] if e.get("node") == timeline.node
                  and e.get("phase") not in (None, SERVING)), None)
    if shown is not None and not timeline.phase_points:
        timeline.phase_points = [(timeline.start, shown)]
    return failure_periods(timeline, found, [], markers, keys)
