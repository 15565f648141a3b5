"""The startup timeline: phases with wall-clock bounds, next to what vLLM reports about itself.

Phases follow field reports §1.0 (names in catalog.PHASES). A phase starts at the first line
that anchors it (catalog rules with a `phase`) once the previous phases are done, and ends where
the next observed phase starts; phases never go backwards, so a late rank repeating an earlier
anchor stays inside the current phase. One exception: the V2 model runner (0.33) captures CUDA
graphs once while profiling memory, before the KV cache is sized; a capture seen before any
KV-sizing line therefore belongs to `kv_profiling`. `resolve` starts at the first timed line.
`ready` ends at uvicorn's "Application startup complete" (or, when stderr was not captured, at
the last route line). A phase still running when the log ends is `open` and ends at the last
line seen. A version banner or argument dump after the engine started begins a new startup
attempt, and so does a restarted process after a failure. An excerpt that starts mid-startup
has no `resolve`: its first lines belong to the phase its first anchor names.

Beside the phases: the durations vLLM reports ("Loading weights took", "Model loading took",
"torch.compile took", "Graph capturing finished", "init engine ... took", max over ranks), the
wall time of the window each one covers, and the gap between the two (where stalls hide), plus
the longest silences between consecutive lines during startup.
"""

from __future__ import annotations

import heapq
import re
from dataclasses import dataclass, field
from typing import Iterable

from sparktriage.logs.catalog import PHASE_INDEX, PHASES, RULES_BY_ID, Hit, match_message
from sparktriage.logs.events import LogEvent
from sparktriage.logs.startup_time import span

SILENCE_MIN_S = 5.0
RESTART_AFTER_S = 5.0  # a process restarted after a failure logs this long after it, or later
MAX_SILENCES = 10
GAP_MIN_S = 3.0  # 1-second stamps: smaller differences are noise
GAP_MIN_FRACTION = 0.25

_RESTART = {"version.banner", "version.logo", "args", "args.namespace"}
_KV_SIZED = {"kv.available", "kv.size", "kv.cpu_explicit", "kv.concurrency", "kv.blocks_v0"}
_FAILURE = {"fail.engine", "fail.init", "fail.died", "fail.ready_timeout", "fail.engine_exc"}
# lines only a serving server writes: an access line (any status), the output handler's failure
_SERVING_TEXT = re.compile(r'"(?:GET|POST|PUT|DELETE|PATCH) /\S* HTTP/[\d.]+" \d{3}|'
                           r"output_handler failed|^Added request |^Finished request ")


def serving_text(message: str) -> bool:
    """Is this a line only a serving server writes (an access line, the output handler)?"""
    return _SERVING_TEXT.search(message) is not None


_REPORTED = {
    "reported.loading_weights": "loading_weights_s",
    "reported.model_loading": "model_loading_s",
    "reported.torch_compile": "torch_compile_s",
    "reported.graph_capture": "graph_capture_s",
    "reported.init_engine": "init_engine_s",
    "reported.weights_download": "weights_download_s",
    "reported.online_quantization": "online_quantization_s",
    "reported.encoder_graph_capture": "encoder_graph_capture_s",
}


@dataclass
class Phase:
    """One startup phase on the wall clock (Unix seconds)."""

    name: str
    start: float
    end: float | None = None
    open: bool = False  # still running when the log ended
    anchor: str = ""  # the line that started it

    @property
    def duration_s(self) -> float | None:
        return None if self.end is None else max(0.0, self.end - self.start)


@dataclass
class Gap:
    """A reported duration next to the wall time of the window it covers."""

    name: str
    reported_s: float
    wall_s: float
    window_start: float
    window_end: float

    @property
    def gap_s(self) -> float:
        return self.wall_s - self.reported_s

    @property
    def significant(self) -> bool:
        return self.gap_s > max(GAP_MIN_S, GAP_MIN_FRACTION * self.reported_s)


@dataclass
class Silence:
    """Consecutive log lines far apart during startup."""

    start: float
    end: float
    phase: str
    before: str
    after: str

    @property
    def duration_s(self) -> float:
        return self.end - self.start


@dataclass
class Timeline:
    """One startup attempt of one node."""

    node: str
    phases: list[Phase] = field(default_factory=list)
    reported: dict[str, float] = field(default_factory=dict)
    reported_detail: dict[str, list[dict]] = field(default_factory=dict)
    gaps: list[Gap] = field(default_factory=list)
    silences: list[Silence] = field(default_factory=list)
    complete: bool = False  # reached ready
    serving_only: bool = False  # the log holds no startup, only a server already serving
    failed: bool = False
    failure: str | None = None
    failure_t: float | None = None
    first_t: float | None = None
    last_t: float | None = None  # last line of this attempt
    last_line: str | None = None
    anchors: dict[str, float] = field(default_factory=dict)  # first time of each rule id
    anchors_last: dict[str, float] = field(default_factory=dict)

    @property
    def current_phase(self) -> str | None:
        return self.phases[-1].name if self.phases else None

    @property
    def startup_s(self) -> float | None:
        """This node's startup time (logs/startup_time.py: the one definition)."""
        return span((p.start, p.end) for p in self.phases)


class TimelineBuilder:
    """Feeds on one node's events in order; `finish()` returns its startup attempts."""

    def __init__(self, node: str) -> None:
        self.node = node
        self.attempts: list[Timeline] = []
        self.current: Timeline | None = None
        self._prev: LogEvent | None = None
        self._silences: list[tuple[float, int, Silence]] = []
        self._seq = 0
        self._kv_sized = False
        self._last_phase_t: dict[str, float] = {}
        self._pids: dict[str, set[int]] = {}  # process name → its pids in the current attempt

    def feed(self, event: LogEvent, hits: list[Hit] | None = None) -> None:
        if event.t is None:
            return
        hits = match_message(event.message) if hits is None else hits
        ids = {h.id for h in hits}
        tl = self.current
        if tl is not None and (ids & _RESTART and self._beyond_resolve(tl)
                               or tl.failed and self._new_process(event)):
            self._close(tl)
            tl = None
        if tl is None:
            tl = self._open(event)
        elif tl.complete:  # serving: only a restart (above) changes the timeline
            tl.last_t, tl.last_line = event.t, _summary_line(event)
            self._prev = event
            return
        self._silence(tl, event)
        tl.last_t, tl.last_line = event.t, _summary_line(event)
        for hit in hits:
            tl.anchors.setdefault(hit.id, event.t)
            tl.anchors_last[hit.id] = event.t
            self._phase(tl, hit, event)
            self._reported(tl, hit, event)
            if hit.id in _FAILURE and not tl.complete and not tl.failed:
                tl.failed, tl.failure_t = True, event.t
                tl.failure = event.message.split("\n", 1)[0][:300]
        if not tl.complete and tl.phases:
            self._last_phase_t[tl.phases[-1].name] = event.t
        if event.process is not None and event.pid is not None:
            pids = self._pids.setdefault(event.process, set())
            if len(pids) < 8:
                pids.add(event.pid)
        serving = "stats" in ids or (event.kind == "uvicorn" and '" 200' in event.message) or \
            _SERVING_TEXT.search(event.message) is not None
        if serving and not tl.complete and not self._beyond_resolve(tl):
            tl.phases, tl.complete, tl.serving_only = [], True, True  # the log starts mid-serving
            tl.failed, tl.failure, tl.failure_t = False, None, None  # (a crash seen before the
            # first serving line was a crash while serving: `logs` calls it engine-died)
        if tl.phases and tl.phases[-1].name == "ready" and not tl.complete:
            if "ready.complete" in ids:
                tl.phases[-1].end = event.t
                tl.complete = True
            elif serving:
                tl.complete = True  # serving without a captured startup-complete line
                tl.phases[-1].end = tl.anchors_last.get("ready.routes", tl.anchors_last.get(
                    "ready.server", tl.phases[-1].start))
        self._prev = event

    @staticmethod
    def _excerpt_opening(tl: Timeline, phase: str) -> bool:
        """An excerpt's first lines (no resolve/engine_start line before its first later
        anchor) were not resolving: they belong to the phase that anchor names."""
        if len(tl.phases) != 1 or tl.phases[0].name != "resolve" or \
                PHASE_INDEX[phase] <= PHASE_INDEX["engine_start"]:
            return False
        return not any(RULES_BY_ID[i].phase in ("resolve", "engine_start")
                       for i in tl.anchors if i in RULES_BY_ID)

    def _new_process(self, event: LogEvent) -> bool:
        """A restart without a banner (docs/logs.md): after a failure, a known process name
        (held by one pid; not 0.31+'s shared "Worker") logs with a new pid, later, no error."""
        if event.process is None or event.pid is None or event.process == "Worker":
            return False
        known = self._pids.get(event.process)
        tl = self.current
        return (known is not None and len(known) == 1 and event.pid not in known
                and tl is not None and tl.failure_t is not None and event.t is not None
                and event.t >= tl.failure_t + RESTART_AFTER_S
                and event.level not in ("ERROR", "CRITICAL") and event.kind != "traceback")

    def _beyond_resolve(self, tl: Timeline) -> bool:
        return bool(tl.phases) and PHASE_INDEX[tl.phases[-1].name] >= PHASE_INDEX["engine_start"]

    def _open(self, event: LogEvent) -> Timeline:
        tl = Timeline(node=self.node, first_t=event.t)
        tl.phases.append(Phase("resolve", event.t, anchor=_first_text(event)))
        self.current = tl
        self._silences = []
        self._kv_sized = False
        self._last_phase_t = {}
        self._pids = {}
        self.attempts.append(tl)
        return tl

    def _phase(self, tl: Timeline, hit: Hit, event: LogEvent) -> None:
        phase = hit.rule.phase
        if hit.id in _KV_SIZED:
            self._kv_sized = True
        if phase is None or tl.complete:
            return
        if phase == "cuda_graphs" and not self._kv_sized and tl.phases and \
                PHASE_INDEX[tl.phases[-1].name] <= PHASE_INDEX["kv_profiling"] and \
                PHASE_INDEX[tl.phases[-1].name] >= PHASE_INDEX["compile"]:
            phase = "kv_profiling"  # the V2 runner's profiling capture (0.33)
        if PHASE_INDEX[phase] <= PHASE_INDEX[tl.phases[-1].name]:
            return
        if self._excerpt_opening(tl, phase):
            tl.phases[0].name = phase  # an excerpt's first lines: the phase its first anchor names
            return
        tl.phases[-1].end = event.t
        tl.phases.append(Phase(phase, event.t, anchor=_first_text(event)))

    def _reported(self, tl: Timeline, hit: Hit, event: LogEvent) -> None:
        key = _REPORTED.get(hit.id)
        if key is None:
            return
        value = hit.num("s")
        if value is None:
            return
        entry = {"value": value, "t": event.t, "process": event.process, "pid": event.pid}
        if hit.id == "reported.model_loading":
            entry["gib"] = hit.num("gib")
        if hit.id == "reported.init_engine" and hit.match.group("c"):
            entry["compilation_s"] = hit.num("c")
        tl.reported_detail.setdefault(key, []).append(entry)

    def _silence(self, tl: Timeline, event: LogEvent) -> None:
        prev = self._prev
        if prev is None or prev.t is None or event.t is None:
            return
        quiet = event.t - prev.t
        if quiet < SILENCE_MIN_S:
            return
        silence = Silence(prev.t, event.t, tl.phases[-1].name if tl.phases else "resolve",
                          prev.message.split("\n", 1)[0][:200], event.message.split("\n", 1)[0][:200])
        self._seq += 1  # a unique tie-breaker: equal gaps must never compare Silence objects
        item = (quiet, self._seq, silence)
        if len(self._silences) < MAX_SILENCES:
            heapq.heappush(self._silences, item)
        elif quiet > self._silences[0][0]:
            heapq.heapreplace(self._silences, item)

    def _close(self, tl: Timeline) -> None:
        if tl.phases and tl.phases[-1].end is None:
            tl.phases[-1].end = tl.last_t if tl.last_t is not None else tl.phases[-1].start
            tl.phases[-1].open = not tl.complete and not tl.failed
        tl.silences = [s for _, _, s in sorted(self._silences, key=lambda x: x[2].start)]
        _derive_reported(tl)
        tl.gaps = _gaps(tl, self._last_phase_t)
        self.current = None

    def finish(self) -> list[Timeline]:
        if self.current is not None:
            self._close(self.current)
        return self.attempts


def _first_text(event: LogEvent) -> str:
    """The first non-blank line of an event's message (a logo starts with a blank one)."""
    for line in event.message.split("\n"):
        if line.strip():
            return line.strip()[:200]
    return ""


def _summary_line(event: LogEvent) -> str:
    """The line that says most about an event: a traceback's exception line, else the first."""
    if event.kind == "traceback":
        for line in reversed(event.message.split("\n")):
            if line.strip():
                return line.strip()[:300]
    return event.message.split("\n", 1)[0][:300]


def _derive_reported(tl: Timeline) -> None:
    for key, entries in tl.reported_detail.items():
        if key == "torch_compile_s":
            # one total per compiled model (tag) and process: sum within a process, max across
            per_process: dict = {}
            for e in entries:
                per_process[(e["process"], e["pid"])] = per_process.get((e["process"], e["pid"]), 0.0) + e["value"]
            tl.reported[key] = round(max(per_process.values()), 6)
            continue
        if key == "graph_capture_s":
            last_per_process: dict = {}
            for e in entries:  # V2 0.33 logs it twice; the real capture is the last
                last_per_process[(e["process"], e["pid"])] = e
            tl.reported[key] = max(e["value"] for e in last_per_process.values())
            continue
        best = max(entries, key=lambda e: e["value"])
        tl.reported[key] = best["value"]
        if key == "model_loading_s" and best.get("gib") is not None:
            tl.reported["model_loading_gib"] = best["gib"]
        if key == "init_engine_s" and best.get("compilation_s") is not None:
            tl.reported["init_engine_compilation_s"] = best["compilation_s"]


def _phase_start(tl: Timeline, name: str) -> float | None:
    for phase in tl.phases:
        if phase.name == name:
            return phase.start
    return None


def _gaps(tl: Timeline, last_phase_t: dict[str, float]) -> list[Gap]:
    gaps = []

    def add(name: str, key: str, start: float | None, end: float | None) -> None:
        reported = tl.reported.get(key)
        if reported is None or start is None or end is None or end < start:
            return
        gaps.append(Gap(name, reported, end - start, start, end))

    load_start = _phase_start(tl, "weight_read")
    add("loading_weights", "loading_weights_s", load_start,
        _max_t(tl, "reported.loading_weights"))
    add("model_loading", "model_loading_s", load_start, _max_t(tl, "reported.model_loading"))
    add("torch_compile", "torch_compile_s", _phase_start(tl, "compile"),
        tl.anchors_last.get("reported.torch_compile"))
    capture = tl.reported_detail.get("graph_capture_s")
    if capture:
        end = capture[-1]["t"]
        starts = [p.start for p in tl.phases if p.name == "cuda_graphs"] or [
            p.start for p in tl.phases if p.name == "kernel_jit"]
        add("graph_capture", "graph_capture_s", starts[0] if starts else None, end)
    loaded = last_phase_t.get("post_load", last_phase_t.get("weight_read"))
    add("init_engine", "init_engine_s", loaded, tl.anchors_last.get("reported.init_engine"))
    return gaps


def _max_t(tl: Timeline, rule_id: str) -> float | None:
    return tl.anchors_last.get(rule_id)


def startup_timelines(events: Iterable[LogEvent]) -> dict[str, list[Timeline]]:
    """Startup attempts per node, from a (time-ordered) stream of events."""
    builders: dict[str, TimelineBuilder] = {}
    for event in events:
        builder = builders.get(event.node)
        if builder is None:
            builder = builders[event.node] = TimelineBuilder(event.node)
        builder.feed(event)
    return {node: b.finish() for node, b in builders.items()}


def startup_timeline(events: Iterable[LogEvent]) -> Timeline:
    """The last startup attempt of the first node seen (the usual single-log case)."""
    by_node = startup_timelines(events)
    if not by_node:
        return Timeline(node="local")
    first = next(iter(by_node.values()))
    return first[-1]


__all__ = ["PHASES", "Phase", "Gap", "Silence", "Timeline", "TimelineBuilder",
           "startup_timeline", "startup_timelines"]
