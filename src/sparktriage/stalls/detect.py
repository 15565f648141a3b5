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

Every failure `sparktriage logs` reports (logs/decision.py: per node, start attempt and serving
stretch) is one `failure` period (failures.py), in the phase where it happened, `serving`
included. An untimed excerpt (no line has a stamp) gives failures only:
no duration can be measured in it, so no detector of stalls runs there.
"""

from __future__ import annotations

import statistics
from dataclasses import dataclass, field

from sparktriage.stalls import failures, stated
from sparktriage.stalls.inputs import Evidence
from sparktriage.stalls.params import DetectParams
from sparktriage.stalls.markers import Mark, MarkerSet, NodeTimeline, build_timeline
from sparktriage.stalls.periods import Budget, Period, later
from sparktriage.stalls.texts import COMPILE_TOTAL

__all__ = ["Budget", "Detection", "DetectParams", "Period", "detect"]

_BAR_MARKERS = ("shard_bar",)
# the rule whose cause a cold compile within its budget shows (the observation's `cause`)
COLD_COMPILE_CAUSE = "compile-jit"


@dataclass
class Detection:
    timelines: dict[str, NodeTimeline]
    periods: list[Period]
    params: DetectParams
    observations: list[dict] = field(default_factory=list)  # long but expected silences
    # node -> errors that are no failure: {"teardown": after a stop, "other": survived}
    errors_apart: dict[str, dict[str, int]] = field(default_factory=dict)


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
    bar_at: dict[float, tuple[int, int]] = {}
    for t, n, total in timeline.bar:
        bar_at.setdefault(t, (n, total))
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
            counts = bar_at.get(mark.t)
            key = bar_names[0] + (mark.event.process or "")
            if counts is not None and last_bar.get(key) == counts:
                continue
            if counts is not None:
                last_bar[key] = counts
        out.append(mark)
    return out


# lines from other programs (the Ray watcher, Ray's own processes) say nothing of the server:
# they never anchor its progress, not even as its first line
_NOT_THE_SERVER = ("ray_system",)


def _anchored_at_first_line(timeline: NodeTimeline, progress: list[Mark],
                            markers: MarkerSet) -> list[Mark]:
    """Progress measured from the node's first line, even when that line only says it waits:
    an excerpt made of retry and waiting lines made no progress from its first line on."""
    first = timeline.marks[0] if timeline.marks else None
    if first is None or (progress and progress[0].t <= first.t) or first.t > timeline.settled:
        return progress
    if any(markers.markers[n].exclusive or n in _NOT_THE_SERVER for n in first.markers):
        return progress
    return [first] + progress


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


def _lines_after(marks: list[Mark], i: int, n: int) -> list[Mark]:
    """The n lines after marks[i], a mark counted as many lines as it stands for."""
    out: list[Mark] = []
    for mark in marks[i + 1:i + 1 + n]:
        out += [mark] * min(mark.count, n - len(out))
        if len(out) >= n:
            break
    return out


def _observe(observations: list[dict], timeline: NodeTimeline, prev: Mark, nxt_t: float,
             phase: str, text: str, cause: str | None = None) -> None:
    """An expected silence; `cause`: the id of the rule whose cause it shows, if any."""
    observations.append({"node": timeline.node, "phase": phase, "start": prev.t, "end": nxt_t,
                         "duration_s": round(nxt_t - prev.t, 3), "text": text, "cause": cause})




def _stated_compile(lines: list[Mark], markers: MarkerSet) -> float | None:
    """The compile time vLLM states in the lines after a silence ("torch.compile takes 192.20
    s in total", else a graph compile's "takes N s"): what the log says beats what the gap
    measures, since compile lines can come during the work or long after it."""
    for mark in lines:
        m = COMPILE_TOTAL.search(mark.event.message)
        if m:
            return float(m.group(1))
    for mark in lines:
        for name in mark.markers:
            if markers.markers[name].budget == "compile":
                took = markers.stated(name, mark.event.message, "took_s")
                if took:
                    return took
    return None


def _cold_compile_text(gap: float, unusable: str | None, stated_s: float | None = None) -> str:
    took = f"{gap:.0f} s" if stated_s is None or abs(stated_s - gap) < 1.0 else \
        f"{stated_s:.2f} s in all, as vLLM states it (this silence {gap:.0f} s)"
    if unusable is None:
        return (f"compile took {took}: cold cache, expected on a first boot; "
                "persist the cache (VLLM_CACHE_ROOT) to skip it next time")
    return (f"compile took {took}: vLLM found its compile cache but could not load it "
            f"({unusable}) and compiled again; persisting VLLM_CACHE_ROOT does not help until "
            "the cache loads (it must come from the same vLLM and torch build; "
            "VLLM_FORCE_AOT_LOAD=1 makes the failure an error)")


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
    work_index = stated.WorkIndex(stated.work_spans(timeline, markers))
    if started is not None and progress and progress[0].t - started >= spawn_first:
        out.append(Period(timeline.node, "stall", started, progress[0].t, timeline.phase_at(started), ["silence"],
                          f"no log line for {progress[0].t - started:.0f} s after the start"))
    for i, (prev, nxt) in enumerate(zip(progress, progress[1:])):
        seen.add((prev.event.process, prev.event.pid))
        if nxt.covered:  # thinned quiet lines filled the time between the two
            continue
        gap = nxt.t - stated.after_cut(cuts, prev.t, nxt.t)
        if gap < max(params.min_stall_s, params.silence_s):
            continue
        phase = timeline.phase_at(prev.t)
        base = _allowed_gap(_lines_after(progress, i, 40), seen, markers, params)
        work = stated.work_ending(_lines_after(progress, i, 20), gap, markers) or \
            work_index.during(prev.t, nxt.t)
        if work is not None:  # the silence was that line's work: its phase, its budget
            phase = stated.work_phase(timeline, work[1])
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
                         _cold_compile_text(gap, budget.cache_unusable,
                                            _stated_compile(_lines_after(progress, i, 20),
                                                            markers)),
                         COLD_COMPILE_CAUSE)
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
        gap = end - stated.after_cut(cuts, last.t, end)
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
            prev.phase = later(prev.phase, period.phase)
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
        timeline = build_timeline(name, node.runs, markers, end_hint,
                                  evidence.attempts.get(name))
        if timeline is not None:
            timeline.torn_down_at = evidence.stops.get(name)
            timelines[name] = timeline
    # headless nodes never log "startup complete": the cluster is ready when its head is
    ready = [t.ready_at for t in timelines.values() if t.ready_at is not None]
    for timeline in timelines.values():
        if ready and timeline.ready_at is None and timeline.failed_at is None \
                and timeline.stopped_at is None:
            timeline.ready_at = min(ready)
    # a node whose log names no phase beside nodes that do (a Ray worker that logs only its
    # `ray start`) is where the cluster is: it takes their phases, so that only the causes of
    # the phase the cluster waits in compete there (an excerpt alone keeps no phase)
    named = sorted({point for t in timelines.values() for point in t.phase_points})
    for timeline in timelines.values():
        if named and not timeline.phase_points:
            timeline.phase_points = list(named)
    observations: list[dict] = []
    decision = evidence.decision  # logs/decision.py: the failures `logs` reports too
    errors_apart: dict[str, dict[str, int]] = {}
    for name, timeline in timelines.items():
        if not evidence.timed:  # an untimed excerpt: failures only (failures.py)
            failed, errors_apart[name] = failures.untimed_failure_periods(
                timeline, decision, markers, evidence.logs)
            periods += failed
            continue
        progress = _anchored_at_first_line(timeline, _progress_marks(timeline, markers),
                                           markers)
        budget = _budget(timeline, timelines, markers, evidence.nodes.get(name), params)
        found = _silences(timeline, progress, markers, params,
                          evidence.started if evidence.form == "bundle" else None, budget,
                          observations, stated.cuts_of(evidence, name))
        crawl = _crawl(timeline, progress, params)
        if crawl:
            found.append(crawl)
        found += stated.waits(timeline, markers, params, budget, observations)
        found += stated.overruns(timeline, markers, params, budget)
        failed, apart = failures.failure_periods(timeline, decision, progress, markers)
        for stall in found:  # a silence that ends in a failure was stuck where the error shows
            if any(abs(stall.end - f.start) <= 1.0 for f in failed):
                stall.phase = later(stall.phase, next(f.phase for f in failed
                                                      if abs(stall.end - f.start) <= 1.0))
        found += failed
        errors_apart[name] = apart
        periods += found
    periods += _asymmetry(timelines, params) if evidence.timed else []
    periods = _merge(periods)
    _mark_held(periods)
    return Detection(timelines, sorted(periods, key=lambda p: (p.start, p.node)), params,
                     sorted(observations, key=lambda o: (o["start"], o["node"])),
                     errors_apart=errors_apart)


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
