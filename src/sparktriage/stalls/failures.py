"""Failure periods: one per failure of the decision `logs` and `stalls` share.

`logs/decision.py` decides, once for both commands, which of the errors `logs` counts (ERROR
and CRITICAL records, tracebacks, bare exception lines, fatal signatures: logs/facts.py) make a
failure: per node, one per start attempt that failed and one per serving stretch whose engine
died, nothing for a start that logged errors and still became ready or a request's error the
server survived, nothing for what a server logs after it was stopped (its teardown). Here each
of those failures becomes one `failure` period, built from the node's lines that hold its
errors (matched by input and line number), in the phase where it happened, `serving` included.
So the two commands never disagree on whether, where and how often a start or a server failed:
the errors of all failure findings, of the teardowns and of the rest (`errors_other`) add up
to the `errors_total` of `logs`.

A vocabulary marker with `failure: true` names the line a failure is told by (EngineCore failed
to start, a store timeout, ptxas) and ends the start for the stall detectors; it never makes or
splits a failure on its own. A start that logs an error and then says nothing more while
observation goes on is also a hang (a Ray worker killed mid-load leaves the others waiting),
and is reported as both.
"""

from __future__ import annotations

from dataclasses import dataclass, field

from sparktriage.logs.decision import ENGINE_DIED, Decision, Failed
from sparktriage.stalls.markers import SERVING, Mark, MarkerSet, NodeTimeline
from sparktriage.stalls.periods import Period, shown_phase


@dataclass
class Episode:
    """The lines of one failure on one node, in time order."""

    marks: list[Mark] = field(default_factory=list)

    @property
    def start(self) -> float:
        return self.marks[0].t

    @property
    def end(self) -> float:
        return self.marks[-1].t


def _key(mark: Mark) -> tuple[str, int]:
    return (str(mark.event.origin), mark.event.line_no)


def episode_of(timeline: NodeTimeline, failed: Failed, markers: MarkerSet,
               since: float = float("-inf")) -> Episode | None:
    """The node's lines that hold the failure's errors, with the lines a failure marker names
    after `since` (the previous failure's last line) and up to its last error, on the same side
    of ready: a marker names the line a failure is told by even where `logs` reads it as no
    error (a WARNING, an INFO). For a failure line `logs` counts no error of, the line a
    failure marker names at its time (else the node's line nearest it)."""
    keys = set(failed.errors)
    marks = [m for m in timeline.marks if _key(m) in keys]
    if marks:
        last = max(m.t for m in marks)
        ready = timeline.ready_at
        marks += [m for m in timeline.marks if since < m.t <= last and _key(m) not in keys
                  and (ready is None or (m.t >= ready) == failed.serving)
                  and any(markers.markers[n].failure for n in m.markers)]
    if not marks and timeline.marks:
        near = timeline.failed_mark
        if near is None or failed.t is not None and near.t != failed.t:
            t = failed.t if failed.t is not None else timeline.marks[-1].t
            near = min(timeline.marks, key=lambda m: abs(m.t - t))
        marks = [near]
    return Episode(sorted(marks, key=lambda m: m.t)) if marks else None


def telling(episode: Episode, markers: MarkerSet, failed: Failed) -> Mark:
    """The line of a failure that names the error: a failure marker's, else the one the
    decision names (its first engine death, else its first error)."""
    for mark in episode.marks:
        if any(markers.markers[n].failure for n in mark.markers):
            return mark
    return next((m for m in episode.marks if _key(m) == failed.key), episode.marks[0])


def failure_text(mark: Mark, markers: MarkerSet) -> str:
    """The line of the failing event that names the error (a traceback's last line)."""
    lines = [line.strip() for line in mark.event.message.split("\n") if line.strip()]
    if len(lines) > 1 and lines[-1] and not lines[-1].startswith("File "):
        return f"{lines[0]} ({lines[-1]})" if lines[0] != lines[-1] else lines[0]
    return lines[0] if lines else mark.event.message


def failure_periods(timeline: NodeTimeline, decision: Decision, progress: list[Mark],
                    markers: MarkerSet) -> tuple[list[Period], dict[str, int]]:
    """A failure period per failure the shared decision makes on this node; its errors that
    ended nothing are counted apart (`teardown`: after a stop; `other`: a start or a server
    that went on), as the decision counted them."""
    out: list[Period] = []
    since = float("-inf")
    for failed in decision.of(timeline.node):
        episode = episode_of(timeline, failed, markers, since)
        if episode is None:
            continue
        since = max(since, episode.end)
        first = telling(episode, markers, failed)
        if timeline.failed_at is not None and episode.start <= timeline.failed_at \
                <= episode.end and not failed.serving:
            first = timeline.failed_mark or first  # the line that ended the start
        start = first.t
        is_end = timeline.failed_at is not None and start <= timeline.failed_at <= episode.end
        end = max(episode.end, timeline.marks[-1].t) if is_end else episode.end
        before = [m for m in progress if m.t < start]
        phase = SERVING if failed.serving else shown_phase(
            timeline.phase_at(start), timeline.lines(episode.start, episode.end), markers)
        what = "the server failed" if phase == SERVING or failed.code == ENGINE_DIED \
            else "the start failed"
        # what led to the failure (a silent wait, a crawl) is evidence for its cause too
        out.append(Period(timeline.node, "failure", start, end, phase, ["failure"],
                          f"{what}: {failure_text(first, markers)[:200]}",
                          last_line=before[-1] if before else None,
                          evidence_from=before[-1].t if before else None,
                          facts={"errors": len(failed.errors)}))
    return out, dict(decision.apart.get(timeline.node) or {"teardown": 0, "other": 0})


def untimed_failure_periods(timeline: NodeTimeline, decision: Decision, markers: MarkerSet,
                            logs: dict) -> tuple[list[Period], dict[str, int]]:
    """The failures of an untimed excerpt, whose lines all stand at one instant (no duration
    can come out of them): its phase is the one a marker names, else the one `logs` read from
    the catalog anchors before its first error (logs/untimed.py)."""
    shown = next((e["phase"] for e in logs.get("errors") or [] if e.get("node") == timeline.node
                  and e.get("phase") not in (None, SERVING)), None)
    if shown is not None and not timeline.phase_points:
        timeline.phase_points = [(timeline.start, shown)]
    return failure_periods(timeline, decision, [], markers)
