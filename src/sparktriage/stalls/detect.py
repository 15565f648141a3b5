"""Stall detection: where, per node and across nodes, the startup made no or slow progress.

Progress is a new log line, except lines that only say "still waiting" (vocabulary markers
with `progress: false`) and progress-bar lines whose count did not move. Four detectors run on
each node's timeline (docs/stalls.md):

- silence: no progress for longer than the phase is expected to take: `silence_s`, or
  `spawn_s` for a gap that ends with a new process's first line or a line that follows an
  import; a cold compile gets `compile_cold_s`, a weight read its checkpoint size at
  `crawl_floor_bps`; compute phases scale with the load per core (up to `max_load_factor`);
  a rank silent at the rendezvous until its last peer arrived was waiting, not stalled.
  Expected long silences are `observations`, not stalls (a cold compile names its rule,
  `compile-jit`, as its `cause`);
- hang: the log stops and the start neither became ready nor failed before observation ended;
- crawl: the weight read ran below `crawl_floor_bps` (checkpoint size from the log), or lasted
  `crawl_s` when the size is unknown;
- asymmetry: one node read its weights `asym_ratio` times slower than the others' median,
  which holds every other rank at its next collective;
- wait: vLLM, Ray, torch or huggingface_hub say how long they have waited (a shm broadcast
  block, a placement group, a collective, the TCPStore, a file lock, a hub retry): the stated
  time counts as stall time, back from the line, even where the excerpt starts later.

A silence that ends at a line vLLM writes after work of a known kind (`budget:` markers: a
graph compiled, a warmup or profiling run that took N s, when N covers the silence) gets that
work's budget (`compile_cold_s`, `warmup_s`) and belongs to that line's phase.

Every error `sparktriage logs` counts is a `failure` period (failures.py), in the phase where
it happened, `serving` included.
"""

from __future__ import annotations

import datetime as _dt
import statistics
from dataclasses import dataclass, field

from sparktriage.logs.catalog import PHASES
from sparktriage.stalls import failures
from sparktriage.stalls.inputs import Evidence
from sparktriage.stalls.params import DetectParams
from sparktriage.stalls.markers import SERVING, Mark, MarkerSet, NodeTimeline, build_timeline

_BAR_MARKERS = ("shard_bar",)
# the rule whose cause a cold compile within its budget shows (the observation's `cause`)
COLD_COMPILE_CAUSE = "compile-jit"


@dataclass
class Period:
    """A stall or failure period on one node, before classification."""

    node: str
    kind: str  # "stall" or "failure"
    start: float
    end: float
    phase: str
    how: list[str]  # detectors that found it: silence, hang, crawl, asymmetry, failure
    reason: str
    last_line: Mark | None = None
    open_ended: bool = False
    held_by: str | None = None
    evidence_from: float | None = None  # evidence window start when it differs from `start`
    facts: dict = field(default_factory=dict)  # numbers the detectors measured

    @property
    def duration_s(self) -> float:
        return self.end - self.start


@dataclass
class Detection:
    timelines: dict[str, NodeTimeline]
    periods: list[Period]
    params: DetectParams
    observations: list[dict] = field(default_factory=list)  # long but expected silences
    teardown_errors: dict[str, int] = field(default_factory=dict)  # node -> errors after a stop


# Phases whose duration is the machine's work (imports, compile, reads, profiling): their
# silence budgets scale with the load per core. Waiting phases (distributed_init) do not:
# a rendezvous waits for peers, and that is budgeted by when the peers arrived.
_COMPUTE_PHASES = ("resolve", "engine_start", "weight_read", "post_load", "compile",
                   "kv_profiling", "kernel_jit", "cuda_graphs")


@dataclass(frozen=True)
class Budget:
    """What one node's start is expected to take, from its own evidence."""

    load_factor: float  # median load average per core over the start, clamped to [1, max]
    compile_cold: bool | None  # None: no compile seen; True: no cache hit in the log
    arrivals: dict[str, float]  # node -> when it logged its distributed_init line
    nodes: int
    cache_unusable: str | None = None  # why vLLM could not load the compile cache it found

    def allowed(self, phase: str, base: float, params: DetectParams,
                checkpoint_bytes: float | None, work: str | None = None) -> tuple[float, str]:
        """The silence allowed in `phase` for a gap whose base allowance is `base`; `work`:
        the kind of work the line that ended the gap says was done (compile, warmup)."""
        allowed, why = base, f"{base:.0f} s"
        if work == "compile":
            allowed, why = max(base, params.compile_cold_s), "a graph compiled (vLLM says so)"
        elif work == "warmup":
            allowed, why = max(base, params.warmup_s), "a warmup or profiling run"
        elif phase == "compile" and self.compile_cold:
            allowed, why = max(base, params.compile_cold_s), "a cold compile cache"
        elif phase == "weight_read" and checkpoint_bytes:
            expected = checkpoint_bytes / params.crawl_floor_bps
            if expected > allowed:
                allowed, why = expected, f"{checkpoint_bytes / 1024 ** 3:.1f} GiB to read"
        if (phase in _COMPUTE_PHASES or work) and self.load_factor > 1.0:
            allowed *= self.load_factor
            why += f", load {self.load_factor:.1f} per core"
        return allowed, why


def _load_factor(node_evidence, start: float, end: float, params: DetectParams) -> float:
    if node_evidence is None:
        return 1.0
    per_core = []
    for record in node_evidence.get("host").window(start, end):
        load, ncpu = record.get("load1"), record.get("ncpu")
        if isinstance(load, (int, float)) and isinstance(ncpu, (int, float)) and ncpu > 0:
            per_core.append(load / ncpu)
    if not per_core:
        return 1.0
    return min(max(statistics.median(per_core), 1.0), params.max_load_factor)


def _budget(timeline: NodeTimeline, timelines: dict[str, NodeTimeline], markers: MarkerSet,
            node_evidence, params: DetectParams) -> Budget:
    names = [set(m.markers) for m in timeline.marks]
    compiled = any("compile_start" in n or "compile_done" in n for n in names)
    hit = any("compile_cache_hit" in n for n in names)
    failed = next((m.event.message for m in timeline.marks
                   if "compile_cache_unusable" in m.markers), None)
    arrivals = {}
    for name, other in timelines.items():
        first = next((m.t for m in other.marks if "dist_init" in m.markers), None)
        if first is not None:
            arrivals[name] = first
    return Budget(_load_factor(node_evidence, timeline.start, timeline.settled, params),
                  (not hit) if compiled else None, arrivals, len(timelines),
                  None if failed is None else _load_failure(failed))


def _load_failure(message: str) -> str:
    """The reason vLLM gives for not loading its compile cache, bounded to one short line."""
    reason = message.partition("reason:")[2].strip() or "no reason given"
    reason = " ".join(reason.split())
    return reason if len(reason) <= 160 else reason[:157] + "..."


def _waited_for_peers(timeline: NodeTimeline, budget: Budget, prev_t: float, next_t: float,
                      params: DetectParams) -> str | None:
    """A rank silent at the rendezvous until shortly after its last peer arrived was waiting
    for that peer, not stalled (a peer that never arrived leaves it a stall)."""
    if budget.nodes < 2 or timeline.phase_at(prev_t) != "distributed_init":
        return None
    others = {n: t for n, t in budget.arrivals.items() if n != timeline.node}
    if len(others) < budget.nodes - 1:
        return None
    last_node, last = max(others.items(), key=lambda item: item[1])
    if last > prev_t and next_t <= last + params.silence_s:
        return last_node
    return None


def _progress_marks(timeline: NodeTimeline, markers: MarkerSet) -> list[Mark]:
    """Marks that show the startup moving, up to the moment it settled."""
    out: list[Mark] = []
    last_bar: dict[str, tuple[int, int]] = {}
    limit = timeline.settled
    for mark in timeline.marks:
        if mark.t > limit or (timeline.stopped_at is not None and mark.t >= timeline.stopped_at):
            break
        if not mark.event.message.strip():
            continue
        if any(not markers.markers[name].progress for name in mark.markers):
            continue
        bar_names = [n for n in mark.markers if n in _BAR_MARKERS]
        if bar_names:
            counts = next((b[1:] for b in timeline.bar if b[0] == mark.t), None)
            key = bar_names[0] + (mark.event.process or "")
            if counts is not None and last_bar.get(key) == counts:
                continue
            if counts is not None:
                last_bar[key] = counts
        out.append(mark)
    return out


_SPAWN_LOOKAHEAD_S = 5.0  # a new process's first lines may lack its prefix (warnings, glog)


def _allowed_gap(following: list[Mark], seen_processes: set, markers: MarkerSet,
                 params: DetectParams) -> float:
    """The silence allowed before `following[0]`: longer when a new process starts there."""
    nxt = following[0]
    if any(markers.markers[name].after_import for name in nxt.markers):
        return params.spawn_s
    for mark in following:
        if mark.t > nxt.t + _SPAWN_LOOKAHEAD_S:
            break
        if mark.event.pid is not None and (mark.event.process, mark.event.pid) not in seen_processes:
            return params.spawn_s
    return params.silence_s


_WORK_LOOKAHEAD_S = 1.0  # "Cache the graph ..." and "Compiling a graph ... takes" come together


def _covers(took: float, gap: float) -> bool:
    """A stated duration accounts for a silence when it is (nearly) as long: 1-second stamps
    and the lines around the work leave a few seconds unaccounted."""
    return took >= 0.8 * gap - 3.0


def _work(following: list[Mark], gap: float, markers: MarkerSet) -> tuple[str, Mark] | None:
    """The kind of work that the lines ending a gap say was done during it, and the line.
    A line that states how long the work took accounts for the gap only when that time
    covers it."""
    first = following[0].t
    for mark in following:
        if mark.t > first + _WORK_LOOKAHEAD_S:
            break
        for name in mark.markers:
            kind = markers.markers[name].budget
            if kind is None:
                continue
            took = markers.stated(name, mark.event.message, "took_s")
            if took is None or _covers(took, gap):
                return kind, mark
    return None


def _work_spans(timeline: NodeTimeline, markers: MarkerSet) -> list[tuple[float, float, str, Mark]]:
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
    return out


def _work_during(spans: list[tuple[float, float, str, Mark]], start: float,
                 end: float) -> tuple[str, Mark] | None:
    """The stated work that covers most (at least half) of [start, end]."""
    best, best_overlap = None, 0.5 * (end - start)
    for lo, hi, kind, mark in spans:
        overlap = min(hi, end) - max(lo, start)
        if overlap >= best_overlap:
            best, best_overlap = (kind, mark), overlap
    return best


def _observe(observations: list[dict], timeline: NodeTimeline, prev: Mark, nxt_t: float,
             phase: str, text: str, cause: str | None = None) -> None:
    """An expected silence; `cause`: the id of the rule whose cause it shows, if any."""
    observations.append({"node": timeline.node, "phase": phase, "start": prev.t, "end": nxt_t,
                         "duration_s": round(nxt_t - prev.t, 3), "text": text, "cause": cause})


def _cold_compile_text(gap: float, unusable: str | None) -> str:
    if unusable is None:
        return (f"compile took {gap:.0f} s: cold cache, expected on a first boot; "
                "persist the cache (VLLM_CACHE_ROOT) to skip it next time")
    return (f"compile took {gap:.0f} s: vLLM found its compile cache but could not load it "
            f"({unusable}) and compiled again; persisting VLLM_CACHE_ROOT does not help until "
            "the cache loads (it must come from the same vLLM and torch build; "
            "VLLM_FORCE_AOT_LOAD=1 makes the failure an error)")


def _after_cut(cuts: list[tuple[float, float]], start: float, end: float) -> float:
    """Where a silence from `start` really begins: after the last cut (lines the excerpt left
    out, logs' `excerpt_detail.cuts`) inside it; what happened in a cut is unknown, not quiet."""
    inside = [e for s, e in cuts if s >= start - 0.5 and e <= end + 0.5]
    return max([start] + inside)


def _cuts(evidence: Evidence, node: str) -> list[tuple[float, float]]:
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


def _silences(timeline: NodeTimeline, progress: list[Mark], markers: MarkerSet,
              params: DetectParams, started: float | None, budget: Budget | None = None,
              observations: list[dict] | None = None,
              cuts: list[tuple[float, float]] | None = None) -> list[Period]:
    out: list[Period] = []
    cuts = cuts or []
    seen: set = set()
    budget = budget or Budget(1.0, None, {}, 1)
    observations = observations if observations is not None else []
    spawn_first, _ = budget.allowed("resolve", params.spawn_s, params, None)
    work_spans = _work_spans(timeline, markers)
    if started is not None and progress and progress[0].t - started >= spawn_first:
        out.append(Period(timeline.node, "stall", started, progress[0].t, timeline.phase_at(started), ["silence"],
                          f"no log line for {progress[0].t - started:.0f} s after the start"))
    for i, (prev, nxt) in enumerate(zip(progress, progress[1:])):
        seen.add((prev.event.process, prev.event.pid))
        gap = nxt.t - _after_cut(cuts, prev.t, nxt.t)
        if gap < max(params.min_stall_s, params.silence_s):
            continue
        phase = timeline.phase_at(prev.t)
        base = _allowed_gap(progress[i + 1:i + 40], seen, markers, params)
        work = _work(progress[i + 1:i + 20], gap, markers) or \
            _work_during(work_spans, prev.t, nxt.t)
        if work is not None:  # the silence was that line's work: its phase, its budget
            phase = timeline.phase_at(work[1].t)
        allowed, why = budget.allowed(phase, base, params, timeline.checkpoint_bytes,
                                      work[0] if work else None)
        peer = _waited_for_peers(timeline, budget, prev.t, nxt.t, params)
        if peer is not None:
            _observe(observations, timeline, prev, nxt.t, phase,
                     f"waited {gap:.0f} s at the rendezvous for {peer}, the last rank to arrive")
        elif gap < allowed:
            if work is not None and work[0] == "warmup":
                _observe(observations, timeline, prev, nxt.t, phase,
                         f"{gap:.0f} s in a warmup or profiling run, within the {allowed:.0f} s "
                         f"expected ({why}; vLLM: {work[1].event.message.strip()[:120]})")
            elif (phase == "compile" and budget.compile_cold) or \
                    (work is not None and work[0] == "compile"):
                _observe(observations, timeline, prev, nxt.t, phase,
                         _cold_compile_text(gap, budget.cache_unusable), COLD_COMPILE_CAUSE)
            elif gap >= base:
                _observe(observations, timeline, prev, nxt.t, phase,
                         f"{gap:.0f} s without a line in {phase}, within the {allowed:.0f} s "
                         f"expected ({why})")
        else:
            facts = {"allowed_s": round(allowed, 1)}
            if work is not None:
                facts["work"] = work[0]
            out.append(Period(timeline.node, "stall", prev.t, nxt.t, phase,
                              ["silence"], f"no progress for {gap:.0f} s", last_line=prev,
                              facts=facts))
    if progress and timeline.ready_at is None and timeline.failed_at is None:
        last = progress[-1]
        end = timeline.stopped_at or timeline.end
        gap = end - _after_cut(cuts, last.t, end)
        phase = timeline.phase_at(last.t)
        allowed, _ = budget.allowed(phase, params.silence_s, params, timeline.checkpoint_bytes)
        if gap >= max(params.min_stall_s, allowed):
            how = "it was stopped" if timeline.stopped_at else "observation ended"
            out.append(Period(timeline.node, "stall", end - gap, end, timeline.phase_at(last.t),
                              ["hang"], f"no progress for the last {gap:.0f} s, until {how}; "
                              f"the start never became ready", last_line=last, open_ended=True))
    return out


def _crawl(timeline: NodeTimeline, progress: list[Mark], params: DetectParams) -> Period | None:
    if timeline.weight_start is None:
        return None
    end = timeline.weight_end
    open_ended = False
    if end is None:
        if timeline.ready_at is not None:
            return None
        end, open_ended = (timeline.failed_at or timeline.end), True
    duration = end - timeline.weight_start
    if duration < params.min_stall_s:
        return None
    size = timeline.checkpoint_bytes
    facts = {"weight_read_s": round(duration, 3)}
    if size and size >= 64 * 1024 ** 2:
        rate = size / duration
        facts.update(checkpoint_bytes=size, weight_read_bps=round(rate, 1))
        if rate >= params.crawl_floor_bps:
            return None
        reason = (f"weights read at {rate / 1e6:.1f} MB/s ({size / 1024 ** 3:.2f} GiB in "
                  f"{duration:.0f} s), below {params.crawl_floor_bps / 1e6:.0f} MB/s")
    else:
        if duration < params.crawl_s:
            return None
        reason = f"weight read took {duration:.0f} s (checkpoint size unknown)"
    if timeline.bar:
        facts["shards"] = f"{timeline.bar[-1][1]}/{timeline.bar[-1][2]}"
    last = None
    for mark in progress:
        if mark.t <= timeline.weight_start:
            last = mark
    return Period(timeline.node, "stall", timeline.weight_start, end, "weight_read", ["crawl"],
                  reason, last_line=last, open_ended=open_ended, facts=facts)


def _failure_text(mark: Mark, markers: MarkerSet) -> str:
    """The line of the failing event that names the error (a traceback's last line)."""
    lines = [line.strip() for line in mark.event.message.split("\n") if line.strip()]
    if len(lines) > 1 and lines[-1] and not lines[-1].startswith("File "):
        return f"{lines[0]} ({lines[-1]})" if lines[0] != lines[-1] else lines[0]
    return lines[0] if lines else mark.event.message


def _shown_phase(phase: str | None, marks: list[Mark], markers: MarkerSet) -> str | None:
    """The phase, or a later one that the lines themselves show running (marker `phase:`): a
    traceback through init_process_group fails in distributed_init even where the log's last
    anchor was the banner; `serving` stays."""
    if phase == SERVING:
        return phase
    order = {name: i for i, name in enumerate(PHASES)}
    for mark in marks:
        for name in mark.markers:
            shown = markers.markers[name].phase
            if shown is not None and (phase is None or order.get(shown, -1) > order.get(phase, -1)):
                phase = shown
    return phase


def _failures(timeline: NodeTimeline, found: list[failures.Episode], progress: list[Mark],
              markers: MarkerSet) -> tuple[list[Period], int]:
    """A failure period per error episode (teardown after a stop excepted, counted apart)."""
    out: list[Period] = []
    teardown = 0
    for episode in found:
        if failures.is_teardown(timeline, episode):
            teardown += len(episode.marks)
            continue
        first = episode.marks[0]
        if timeline.failed_at is not None and first.t <= timeline.failed_at <= episode.end:
            first = timeline.failed_mark or first  # the line that ended the start
        else:
            first = failures.telling(episode, markers)
        start = first.t
        is_end = timeline.failed_at is not None and start <= timeline.failed_at <= episode.end
        end = max(episode.end, timeline.marks[-1].t) if is_end else episode.end
        before = [m for m in progress if m.t < start]
        phase = _shown_phase(timeline.phase_at(start),
                             timeline.lines(episode.start, episode.end), markers)
        what = "the server failed" if phase == SERVING else (
            "the start failed" if is_end else "an error")
        # what led to the failure (a silent wait, a crawl) is evidence for its cause too
        out.append(Period(timeline.node, "failure", start, end, phase, ["failure"],
                          f"{what}: {_failure_text(first, markers)[:200]}",
                          last_line=before[-1] if before else None,
                          evidence_from=before[-1].t if before else None,
                          facts={"errors": len(episode.marks)}))
    return out, teardown


def _waits(timeline: NodeTimeline, markers: MarkerSet, params: DetectParams,
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
    for span in sorted(spans, key=lambda s: s[0]):
        if runs and span[0] <= max(s[1] for s in runs[-1]) + params.silence_s:
            runs[-1].append(span)
        else:
            runs.append([span])
    out = []
    work_spans = _work_spans(timeline, markers)
    for run in runs:
        start, end = min(s[0] for s in run), max(s[1] for s in run)
        first = min(run, key=lambda s: s[2].t)[2]
        phase = _shown_phase(timeline.phase_at(first.t), [s[2] for s in run], markers)
        # waiting while vLLM says it was compiling or warming up is that work's wait
        work = _work_during(work_spans, start, end)
        if work is not None:
            phase = timeline.phase_at(work[1].t)
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
        last = None
        for mark in timeline.marks:
            if mark.t < start and not any(not markers.markers[n].progress for n in mark.markers):
                last = mark
        out.append(Period(timeline.node, "stall", start, end, phase, ["wait"],
                          f"the log states {duration:.0f} s of waiting ({len(run)} line"
                          f"{'s' if len(run) > 1 else ''}): {line[:160]}", last_line=last,
                          facts={"stated_wait_s": round(duration, 1), "wait_lines": len(run),
                                 "waits": names}))
    return out


def _later(a: str | None, b: str | None) -> str | None:
    """Of two phases, the one the start reached later (a wait line can show a later phase
    than the log's last anchor; `serving` is last)."""
    order = {name: i for i, name in enumerate(PHASES + (SERVING,))}
    if a is None or b is None:
        return a or b
    return b if order.get(b, -1) > order.get(a, -1) else a


def _merge(periods: list[Period]) -> list[Period]:
    """Overlapping stalls of one node become one period (failures stay separate)."""
    out: list[Period] = []
    for period in sorted(periods, key=lambda p: (p.node, p.kind, p.start)):
        prev = out[-1] if out else None
        if prev and prev.node == period.node and prev.kind == period.kind == "stall" \
                and period.start < prev.end:  # overlapping, not merely touching
            if period.end > prev.end:
                prev.end = period.end
                prev.open_ended = period.open_ended
            prev.how += [h for h in period.how if h not in prev.how]
            prev.phase = _later(prev.phase, period.phase)
            prev.facts.update(period.facts)
            if "crawl" in period.how and "crawl" not in prev.how[:1]:
                prev.reason = f"{prev.reason}; {period.reason}"
            continue
        out.append(period)
    return out


def _asymmetry(timelines: dict[str, NodeTimeline], params: DetectParams) -> list[Period]:
    durations = {n: t.weight_end - t.weight_start for n, t in timelines.items()
                 if t.weight_start is not None and t.weight_end is not None}
    if len(durations) < 2:
        return []
    out = []
    for node, duration in durations.items():
        others = [d for n, d in durations.items() if n != node]
        typical = statistics.median(others)
        if duration - typical >= params.min_stall_s and duration >= params.asym_ratio * max(typical, 1e-3):
            timeline = timelines[node]
            out.append(Period(node, "stall", timeline.weight_start + typical, timeline.weight_end,
                              "weight_read", ["asymmetry"],
                              f"weight read took {duration:.0f} s on {node} against a median of "
                              f"{typical:.0f} s on the other nodes",
                              facts={"weight_read_s": round(duration, 3),
                                     "peer_median_s": round(typical, 3)}))
    return out


def detect(evidence: Evidence, markers: MarkerSet, params: DetectParams | None = None) -> Detection:
    """Find stall and failure periods on every node of the evidence."""
    params = params or DetectParams()
    timelines: dict[str, NodeTimeline] = {}
    periods: list[Period] = []
    for name, node in evidence.nodes.items():
        span = node.span()
        end_hint = max(s for s in (span[1] if span else None, evidence.ended) if s is not None) \
            if (span or evidence.ended) else None
        timeline = build_timeline(name, node.events, markers, end_hint,
                                  evidence.attempts.get(name))
        if timeline is not None:
            timelines[name] = timeline
    # headless nodes never log "startup complete": the cluster is ready when its head is
    ready = [t.ready_at for t in timelines.values() if t.ready_at is not None]
    for timeline in timelines.values():
        if ready and timeline.ready_at is None and timeline.failed_at is None \
                and timeline.stopped_at is None:
            timeline.ready_at = min(ready)
    observations: list[dict] = []
    keys = failures.error_keys(evidence.logs)
    episodes: dict[str, list[failures.Episode]] = {}
    teardown_errors: dict[str, int] = {}
    for name, timeline in timelines.items():
        errors = failures.error_marks(timeline, keys, markers)
        starts = [a.first_t for a in evidence.attempts.get(name, [])[1:]
                  if a.first_t is not None] + failures.restarts(timeline, errors, markers)
        episodes[name] = failures.episodes(errors, starts, timeline.ready_at)
    for name, timeline in timelines.items():
        progress = _progress_marks(timeline, markers)
        budget = _budget(timeline, timelines, markers, evidence.nodes.get(name), params)
        found = _silences(timeline, progress, markers, params,
                          evidence.started if evidence.form == "bundle" else None, budget,
                          observations, _cuts(evidence, name))
        crawl = _crawl(timeline, progress, params)
        if crawl:
            found.append(crawl)
        found += _waits(timeline, markers, params, budget, observations)
        failed, teardown = _failures(timeline, episodes[name], progress, markers)
        found += failed
        teardown_errors[name] = teardown
        periods += found
    periods += _asymmetry(timelines, params)
    periods = _merge(periods)
    _mark_held(periods)
    return Detection(timelines, sorted(periods, key=lambda p: (p.start, p.node)), params,
                     sorted(observations, key=lambda o: (o["start"], o["node"])),
                     teardown_errors=teardown_errors)


def _mark_held(periods: list[Period]) -> None:
    """A silent node whose stall lies inside another node's slow weight read is held by it."""
    slow = [p for p in periods if "asymmetry" in p.how or "crawl" in p.how]
    for period in periods:
        if period.kind != "stall" or "crawl" in period.how or "asymmetry" in period.how:
            continue
        for other in slow:
            if other.node != period.node and other.start <= period.start + 1 \
                    and other.end >= period.start:
                period.held_by = other.node
                break
