"""One failure model for `logs` and `stalls`: every error the log parser counts, as a typed record.

`sparktriage logs` counts errors (facts.py: ERROR/CRITICAL records, unprefixed tracebacks,
bare exception lines, fatal signatures such as ``died unexpectedly``, OOM, ``NCCL error`` or
vLLM's "Free memory on device ... less than desired GPU memory utilization"). `stalls` must call
the same events failures, in the phase where they happened, serving included. The
`LogAnalyzer` (document.py) keeps one `LogFailure` per counted error; its phase is the phase of
its node's startup whose window holds its time, read from the finished timelines (so an
excerpt's first lines, timed by the line after them, get the phase that line shows), or
`serving` once the startup was complete; `logs.document.failures_of(events)` does the same from events alone. `engine_death` marks the failures that end an engine (failed to start,
initialization failed, died unexpectedly, EngineDeadError, "EngineCore hit an exception", the
ready timeout), so a reader can tell a crash from an error the server survived.
"""

from __future__ import annotations

from dataclasses import dataclass

from sparktriage.logs.catalog import Hit
from sparktriage.logs.events import LogEvent

SERVING = "serving"  # the phase name of a failure after the node's startup completed
ENGINE_DEATH_RULES = frozenset({"fail.engine", "fail.init", "fail.died", "fail.engine_dead",
                                "fail.ready_timeout", "fail.engine_exc"})
_DEATH_TEXT = ("died unexpectedly", "EngineDeadError", "Engine core initialization failed",
               "failed to start", "died, exit code", "EngineCore encountered an issue",
               "Watchdog caught collective operation timeout", "taking the entire process down",
               "CUDA error: ", "output_handler failed",
               # V1's executor raises it when its workers never answer: the engine core dies
               "TimeoutError: RPC call", "RPC call to execute_model timed out",
               # Ray says one of the engine's workers (an actor) is gone
               "ActorDiedError", "RayActorError")


@dataclass(frozen=True)
class LogFailure:
    """One error `logs` counts, where and when it happened."""

    t: float | None  # Unix seconds (a traceback's time is inferred from the line before it)
    node: str
    kind: str  # "error" (ERROR/CRITICAL record), "traceback", "exception", "fatal"
    text: str  # redacted; exactly `errors[].text` of the logs document
    engine_death: bool
    phase: str | None  # catalog.PHASES name, SERVING once the startup completed, None: no time
    process: str | None
    origin: str
    line: int
    # the node's start attempt the line was read in (the builder's open one, by input order,
    # so a paste whose stamps jump back keeps its errors where they were printed) and whether
    # that attempt had become ready by then; None/False for a line without a time
    attempt: int | None = None
    serving: bool = False

    def as_json(self) -> dict:
        return {"t": self.t, "node": self.node, "kind": self.kind, "text": self.text,
                "engine_death": self.engine_death, "phase": self.phase,
                "process": self.process, "origin": self.origin, "line": self.line,
                "attempt": self.attempt, "serving": self.serving}


def is_engine_death(event: LogEvent, hits: list[Hit]) -> bool:
    """Does this event say an engine (or one of its workers) is gone?"""
    if any(h.id in ENGINE_DEATH_RULES for h in hits):
        return True
    message = event.message
    return any(text in message for text in _DEATH_TEXT)


def phase_at(attempts: list, t: float | None, attempt: int | None = None) -> str | None:
    """The phase of a node's startup attempts (`timeline.Timeline`s, in order) at time `t`:
    the last phase started at or before `t` in attempt `attempt` (when known) or else the last
    attempt started by then; `serving` after a complete startup's end; None without a time or
    a timeline."""
    if t is None:
        return None
    chosen = None
    if attempt is not None and 0 <= attempt < len(attempts):
        chosen = attempts[attempt]
    for tl in attempts if chosen is None else ():
        if tl.first_t is not None and tl.first_t <= t or chosen is None:
            chosen = tl
    if chosen is None:
        return None
    if chosen.complete:
        end = chosen.phases[-1].end if chosen.phases else None
        if not chosen.phases or end is None or t >= end:
            return SERVING
    name = None
    for phase in chosen.phases:
        if phase.start <= t:
            name = phase.name
    return name if name is not None else (chosen.phases[0].name if chosen.phases else None)


def record(entry: dict, event: LogEvent, hits: list[Hit], shown_phase: str | None = None,
           attempt: int | None = None, serving: bool = False) -> dict:
    """Complete one error entry of facts.py with what a failure needs (engine_death; the
    start attempt it was read in and whether that attempt was serving by then; for an
    untimed line the phase its log's lines named so far: logs/untimed.py)."""
    entry["engine_death"] = is_engine_death(event, hits)
    entry["attempt"], entry["serving"] = attempt, serving
    if event.t is None:
        entry["shown_phase"] = shown_phase
    return entry


def failure_of(entry: dict, attempts: list) -> LogFailure:
    """The typed record of one error entry, its phase read from its node's attempts."""
    attempt, serving = entry.get("attempt"), bool(entry.get("serving"))
    if entry["t"] is None:
        phase = entry.get("shown_phase")
    elif serving:
        phase = SERVING
    else:
        phase = phase_at(attempts, entry["t"], attempt)
    return LogFailure(t=entry["t"], node=entry["node"], kind=entry.get("kind") or "error",
                      text=entry["text"], engine_death=bool(entry.get("engine_death")),
                      phase=phase, process=entry.get("process"), origin=entry["origin"],
                      line=entry["line"], attempt=attempt, serving=serving)


__all__ = ["LogFailure", "SERVING", "ENGINE_DEATH_RULES", "failure_of",
           "is_engine_death", "phase_at", "record"]
