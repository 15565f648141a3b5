"""The periods the detectors find, the budgets they judge silences by, and phase order.

A `Period` is a stall or failure on one node before classification. A `Budget` is what one
node's start is expected to take, from its own evidence (load, compile cache state, when its
peers arrived); `allowed` gives the silence a phase, or a kind of work vLLM says it did, may
last. Phases are ordered as the log parser orders them, `serving` last.
"""

from __future__ import annotations

from dataclasses import dataclass, field

from sparktriage.logs.catalog import PHASES
from sparktriage.stalls.markers import SERVING, Mark, MarkerSet
from sparktriage.stalls.params import DetectParams

_ORDER = {name: i for i, name in enumerate(PHASES + (SERVING,))}


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


# Phases whose duration is the machine's work (imports, compile, reads, profiling): their
# silence budgets scale with the load per core. Waiting phases (distributed_init) do not:
# a rendezvous waits for peers, and that is budgeted by when the peers arrived.
COMPUTE_PHASES = ("resolve", "engine_start", "weight_read", "post_load", "compile",
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
        elif work == "weights":
            expected = checkpoint_bytes / params.crawl_floor_bps if checkpoint_bytes \
                else params.crawl_s
            allowed = max(base, expected)
            why = (f"{checkpoint_bytes / 1024 ** 3:.1f} GiB to read" if checkpoint_bytes
                   else "a weight read of unknown size")
        elif phase == "compile" and self.compile_cold:
            allowed, why = max(base, params.compile_cold_s), "a cold compile cache"
        elif phase == "weight_read" and checkpoint_bytes:
            expected = checkpoint_bytes / params.crawl_floor_bps
            if expected > allowed:
                allowed, why = expected, f"{checkpoint_bytes / 1024 ** 3:.1f} GiB to read"
        if (phase in COMPUTE_PHASES or work) and self.load_factor > 1.0:
            allowed *= self.load_factor
            why += f", load {self.load_factor:.1f} per core"
        return allowed, why


def shown_phase(phase: str | None, marks: list[Mark], markers: MarkerSet) -> str | None:
    """The phase, or a later one that the lines themselves show running (marker `phase:`): a
    traceback through init_process_group fails in distributed_init even where the log's last
    anchor was the banner; `serving` stays."""
    if phase == SERVING:
        return phase
    for mark in marks:
        for name in mark.markers:
            shown = markers.markers[name].phase
            if shown is not None and (phase is None or _ORDER.get(shown, -1) > _ORDER.get(phase, -1)):
                phase = shown
    return phase


def later(a: str | None, b: str | None) -> str | None:
    """Of two phases, the one the start reached later (a wait line can show a later phase
    than the log's last anchor; `serving` is last)."""
    if a is None or b is None:
        return a or b
    return b if _ORDER.get(b, -1) > _ORDER.get(a, -1) else a
