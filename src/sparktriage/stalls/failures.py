"""One failure model for `logs` and `stalls`: the failures `logs` counts are the failures here.

`logs/failures.py` decides, once for both commands, what is a failure and where a start attempt
ends (`counted_failures`: one `startup-failed` per failed attempt, one `engine-died`). Here each
node's errors (the lines `logs` counts, matched by input and line number, plus the lines a
failure marker names) are grouped into episodes (one per start attempt of the log parser, and
one per serving stretch: a crash logs a burst of errors, often minutes apart as retries give
up), and each counted failure becomes one `failure` period in the episode holding its error
line, in the phase where it happened, `serving` included. So the two commands never disagree
on whether, where and how often a start or a server failed; a failure marker names a failure's
cause and line, but never makes or splits one on its own. The errors of the other episodes are
counted apart (`teardown`, `other`); so is a counted failure inside the collector's own
teardown of a bundle, an outside fact `logs` does not read.

A failure marker still ends the start for the stall detectors (markers.py `failed_at`): a
start that logs another error and then says nothing more while observation goes on is also a
hang (a Ray worker killed mid-load leaves the others waiting), and is reported as both.
"""

from __future__ import annotations

import bisect
from dataclasses import dataclass, field

from sparktriage.logs.failures import Counted
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


def assign(timeline: NodeTimeline, found: list[Episode], counted: list[Counted]
           ) -> list[tuple[Episode, Counted]]:
    """The episode each failure `logs` counts on this node happened in: the one holding the
    error line it ended in, else (no such line here) the one at or nearest its time."""
    out = []
    for c in counted:
        episode = next((e for e in found if c.key is not None
                        and any(_key(m) == c.key for m in e.marks)), None)
        if episode is None and c.node == timeline.node and found and (
                c.key is None or not any(_key(m) == c.key for m in timeline.marks)):
            episode = found[0] if c.t is None else min(found, key=lambda e: (
                0.0 if e.start <= c.t <= e.end else min(abs(e.start - c.t), abs(e.end - c.t))))
        if episode is not None:
            out.append((episode, c))
    return out


def failure_periods(timeline: NodeTimeline, found: list[Episode], progress: list[Mark],
                    markers: MarkerSet, keys: dict[tuple[str, int], bool],
                    counted: list[Counted]) -> tuple[list[Period], dict[str, int]]:
    """A failure period per failure `logs` counts (`counted`, logs/failures.py: the one
    decision), in the episode it happened in; the errors of the other episodes are counted
    apart (`teardown`: after a stop; `other`: a start or a server that went on). A failure
    marker names a failure's cause and line, but makes none on its own."""
    out: list[Period] = []
    apart = {"teardown": 0, "other": 0}
    chosen = assign(timeline, found, counted)
    down = timeline.torn_down_at  # the collector's own teardown: an outside fact `logs` lacks
    chosen = [(e, c) for e, c in chosen if down is None or e.start < down - TEARDOWN_WINDOW_S]
    failing = {id(e) for e, _ in chosen}
    for episode in found:
        if id(episode) not in failing:
            counted_n = sum(1 for m in episode.marks if _key(m) in keys)
            apart["teardown" if is_teardown(timeline, episode) else "other"] += counted_n
    held: set[int] = set()
    for episode, c in chosen:
        counted_n = 0 if id(episode) in held else sum(1 for m in episode.marks
                                                       if _key(m) in keys)
        held.add(id(episode))
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
        what = "the server failed" if phase == SERVING or c.code == "engine-died" else \
            "the start failed"
        # what led to the failure (a silent wait, a crawl) is evidence for its cause too
        out.append(Period(timeline.node, "failure", start, end, phase, ["failure"],
                          f"{what}: {failure_text(first, markers)[:200]}",
                          last_line=before[-1] if before else None,
                          evidence_from=before[-1].t if before else None,
                          facts={"errors": counted_n}))
    return out, apart


def untimed_failure_periods(timeline: NodeTimeline, found: list[Episode], markers: MarkerSet,
                            keys: dict[tuple[str, int], bool], logs: dict,
                            counted: list[Counted]) -> tuple[list[Period], dict[str, int]]:
    """The failures of an untimed excerpt, whose lines all stand at one instant (no duration
    can come out of them): its phase is the one a marker names, else the one `logs` read from
    the catalog anchors before its first error (logs/untimed.py)."""
    shown = next((e["phase"] for e in logs.get("errors") or [] if e.get("node") == timeline.node
                  and e.get("phase") not in (None, SERVING)), None)
    if shown is not None and not timeline.phase_points:
        timeline.phase_points = [(timeline.start, shown)]
    return failure_periods(timeline, found, [], markers, keys, counted)
