"""What the log states about time: waits it reports, work it reports, lines it left out.

- Waiting lines (markers with a `wait_s`/`wait_ms` group: vLLM's shm broadcast and
  placement-group waits, torch's NCCL watchdog and TCPStore, huggingface_hub's lock and
  retries) cover the time they state, back from the line, even before an excerpt starts;
  covered spans that touch are one wait, a stall when longer than its phase's budget.
- Work lines (markers with `budget:` and a `took_s` group: "Initial profiling/warmup run took
  94 s", "Compiling a graph for dynamic shape takes 39 s", "Graph capturing finished in 71
  secs") say the silence they cover was that work; it gets that work's budget.
- Work that overran: a work line whose stated time is past that work's budget ("Compiling a
  graph ... takes 2219.43 s", "Graph capturing finished in 11412 secs") is a stall over the
  time it states, back from the line, even where the excerpt shows no silence (its first
  line, or lines logged during the work).
- Cuts (logs' `excerpt_detail.cuts`: an ellipsis line, a jump) are lines left out: a silence
  across one starts after it.
"""

from __future__ import annotations

import bisect
import datetime as _dt

from sparktriage.stalls.inputs import Evidence
from sparktriage.stalls.markers import Mark, MarkerSet, NodeTimeline
from sparktriage.stalls.params import DetectParams
from sparktriage.stalls.periods import Budget, Period, shown_phase

_WORK_LOOKAHEAD_S = 1.0  # "Cache the graph ..." and "Compiling a graph ... takes" come together
# a stated weight read is a stall past the crawl budget, but never widens a silence's budget:
# a silent read is judged by the weight_read budget (docs/stalls.md)
_OVERRUN_ONLY = "weights"
_LOAD_REST_S = 30.0  # "Model loading took" minus "Loading weights took": bookkeeping, not work
WEIGHT_READ = "weight_read"


_SAME_SECOND_S = 1e-3


def work_phase(timeline: NodeTimeline, mark: Mark) -> str | None:
    """The phase a work line reports on: the phase running up to its line, not one that a
    later line of the same second starts ("Graph capturing finished in 37 secs" and "init
    engine ... took" share a stamp; the capture belongs to cuda_graphs, not ready)."""
    return timeline.phase_at(mark.t - _SAME_SECOND_S)


def covers(took: float, gap: float) -> bool:
    """A stated duration accounts for a silence when it is (nearly) as long: 1-second stamps
    and the lines around the work leave a few seconds unaccounted."""
    return took >= 0.8 * gap - 3.0


def work_ending(following: list[Mark], gap: float, markers: MarkerSet) -> tuple[str, Mark] | None:
    """The kind of work that the lines ending a gap say was done during it, and the line.
    A line that states how long the work took accounts for the gap only when that time
    covers it."""
    first = following[0].t
    for mark in following:
        if mark.t > first + _WORK_LOOKAHEAD_S:
            break
        for name in mark.markers:
            kind = markers.markers[name].budget
            if kind is None or kind == _OVERRUN_ONLY:
                continue
            took = markers.stated(name, mark.event.message, "took_s")
            if took is None or covers(took, gap):
                return kind, mark
    return None


def work_spans(timeline: NodeTimeline, markers: MarkerSet) -> list[tuple[float, float, str, Mark]]:
    """(start, end, kind, line) of the work the log says took a stated time: a warmup run
    that "took 56.94 s" ended at its line and began 56.94 s before."""
    out = []
    for mark in timeline.marks:
        for name in mark.markers:
            kind = markers.markers[name].budget
            took = markers.stated(name, mark.event.message, "took_s") if kind else None
            if took:
                out.append((mark.t - took, mark.t, kind, mark))
                break
    # "Model loading took" covers the weight read and its post-processing: where "Loading
    # weights took" ends inside it and the rest is short, the read's own figure says what was
    # slow; a long rest (post-processing) keeps the whole stated load
    weights = [span for span in out if span[2] == _OVERRUN_ONLY]
    return [span for span in out if span[2] != _OVERRUN_ONLY or not any(
        other is not span and span[0] <= other[1] < span[1]
        and span[1] - other[1] < _LOAD_REST_S for other in weights)]


_WORK_WHAT = {"compile": "a graph compile", "warmup": "a warmup, profiling or capture run",
              "weights": "the weight read"}


def overruns(timeline: NodeTimeline, markers: MarkerSet, params: DetectParams,
             budget: Budget) -> list[Period]:
    """Work the log states took longer than its budget: a stall from the time the work began
    (the stated time back from its line) to the line. The line is the stall's last line, so
    the rules read what the work was (`where: last` or `end`)."""
    out = []
    for start, end, kind, mark in work_spans(timeline, markers):
        # the weight read is its own phase, whatever the lines around its end anchor
        phase = WEIGHT_READ if kind == _OVERRUN_ONLY else work_phase(timeline, mark)
        allowed, why = budget.allowed(phase, params.silence_s, params, timeline.checkpoint_bytes,
                                      kind)
        took = end - start
        if took < max(params.min_stall_s, allowed):
            continue
        line = mark.event.message.split("\n", 1)[0].strip()
        out.append(Period(timeline.node, "stall", start, end, phase, ["work"],
                          f"vLLM states {_WORK_WHAT.get(kind, kind)} took {took:.0f} s, past the "
                          f"{allowed:.0f} s expected ({why}): {line[:160]}", last_line=mark,
                          facts={"stated_work_s": round(took, 1), "work": kind}))
    return out


class WorkIndex:
    """A node's stated work (`work_spans`, the stated weight read aside: it never widens a
    silence's budget) indexed by end time, so that finding the work that covers a silence
    reads only the spans that can reach it, not every work line per silence."""

    def __init__(self, spans: list[tuple[float, float, str, Mark]]):
        self.spans = [span for span in spans if span[2] != _OVERRUN_ONLY]
        self._by_end = sorted(range(len(self.spans)), key=lambda i: self.spans[i][1])
        self._ends = [self.spans[i][1] for i in self._by_end]
        # a span that overlaps [start, end] ends at or after start and at most its own length
        # after end; the second of slack absorbs the rounding of "line time minus stated time"
        self._reach = max((hi - lo for lo, hi, _, _ in self.spans), default=0.0) + 1.0
        self.examined = 0  # spans read by `during`, all calls together (tests read it)

    def during(self, start: float, end: float) -> tuple[str, Mark] | None:
        """The stated work that covers most (at least half) of [start, end]; of equal
        overlaps the later line, as a scan of all spans in line order would choose."""
        if end < start:  # no such query is made; read everything rather than guess
            candidates = list(range(len(self.spans)))
        else:
            first = bisect.bisect_left(self._ends, start)
            last = bisect.bisect_right(self._ends, end + self._reach)
            candidates = sorted(self._by_end[first:last])
        self.examined += len(candidates)
        best, best_overlap = None, 0.5 * (end - start)
        for i in candidates:
            lo, hi, kind, mark = self.spans[i]
            overlap = min(hi, end) - max(lo, start)
            if overlap >= best_overlap:
                best, best_overlap = (kind, mark), overlap
        return best


def after_cut(cuts: list[tuple[float, float]], start: float, end: float) -> float:
    """Where a silence from `start` really begins: after the last cut (lines the excerpt left
    out, logs' `excerpt_detail.cuts`) inside it; what happened in a cut is unknown, not quiet."""
    inside = [e for s, e in cuts if s >= start - 0.5 and e <= end + 0.5]
    return max([start] + inside)


def cuts_of(evidence: Evidence, node: str) -> list[tuple[float, float]]:
    """The node's cuts from the logs document (ISO 8601 times)."""
    out = []
    for cut in (evidence.logs.get("excerpt_detail") or {}).get("cuts") or []:
        if not isinstance(cut, dict) or cut.get("node") not in (None, node):
            continue
        try:
            bounds = [v if isinstance(v, (int, float)) else
                      _dt.datetime.fromisoformat(str(v)).timestamp()
                      for v in (cut.get("start"), cut.get("end"))]
        except ValueError:
            continue
        out.append((float(bounds[0]), float(bounds[1])))
    return out


def waits(timeline: NodeTimeline, markers: MarkerSet, params: DetectParams,
           budget: Budget, observations: list[dict]) -> list[Period]:
    """Stall time that vLLM, Ray, torch or huggingface_hub state: each waiting line covers
    the time it says it waited, back from the line; covered spans that touch (within
    `silence_s`) are one wait. A wait longer than its phase's budget is a stall."""
    spans: list[tuple[float, float, Mark, str]] = []
    for mark in timeline.marks:
        for name in mark.markers:
            if not markers.markers[name].states_wait:
                continue
            waited = markers.stated(name, mark.event.message, "wait_s")
            if waited:
                spans.append((mark.t - waited, mark.t, mark, name))
                break
    runs: list[list[tuple[float, float, Mark, str]]] = []
    reach = float("-inf")  # the latest end in the current run (kept, not recomputed per line)
    for span in sorted(spans, key=lambda s: s[0]):
        if runs and span[0] <= reach + params.silence_s:
            runs[-1].append(span)
            reach = max(reach, span[1])
        else:
            runs.append([span])
            reach = span[1]
    out = []
    spans_of_work = WorkIndex(work_spans(timeline, markers))
    moving: list[Mark] | None = None  # the lines that are progress, once a wait needs them
    moving_t: list[float] = []
    for run in runs:
        start, end = min(s[0] for s in run), max(s[1] for s in run)
        first = min(run, key=lambda s: s[2].t)[2]
        phase = shown_phase(timeline.phase_at(first.t), [s[2] for s in run], markers)
        # waiting while vLLM says it was compiling or warming up is that work's wait
        work = spans_of_work.during(start, end)
        if work is not None:
            phase = work_phase(timeline, work[1])
        allowed, why = budget.allowed(phase, params.silence_s, params, timeline.checkpoint_bytes,
                                      work[0] if work else None)
        duration = end - start
        if duration < max(params.min_stall_s, allowed):
            if duration >= params.silence_s:
                observations.append({"node": timeline.node, "phase": phase, "start": start,
                                     "end": end, "duration_s": round(duration, 3),
                                     "text": f"waited {duration:.0f} s as the log states, within "
                                             f"the {allowed:.0f} s expected ({why})",
                                     "cause": None})
            continue
        names = sorted({s[3] for s in run})
        line = first.event.message.split("\n", 1)[0].strip()
        if moving is None:
            moving = [m for m in timeline.marks
                      if not any(not markers.markers[n].progress for n in m.markers)]
            moving_t = [m.t for m in moving]
        before = bisect.bisect_left(moving_t, start)  # marks are in time order
        last = moving[before - 1] if before else None
        lines = sum(s[2].count for s in run)
        out.append(Period(timeline.node, "stall", start, end, phase, ["wait"],
                          f"the log states {duration:.0f} s of waiting ({lines} line"
                          f"{'s' if lines > 1 else ''}): {line[:160]}", last_line=last,
                          facts={"stated_wait_s": round(duration, 1), "wait_lines": lines,
                                 "waits": names}))
    return out
