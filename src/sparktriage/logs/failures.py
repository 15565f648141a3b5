"""One failure model for `logs` and `stalls`: every error the log parser counts, as a typed record.

`sparktriage logs` counts errors (facts.py: ERROR/CRITICAL records, unprefixed tracebacks,
bare exception lines, fatal signatures such as ``died unexpectedly``, OOM, ``NCCL error`` or
vLLM's "Free memory on device ... less than desired GPU memory utilization"). `stalls` must call
the same events failures (issue 36), in the phase where they happened, serving included. The
`LogAnalyzer` (document.py) keeps one `LogFailure` per counted error; its phase is the phase of
its node's startup whose window holds its time, read from the finished timelines (so an
excerpt's first lines, timed by the line after them, get the phase that line shows), or
`serving` once the startup was complete; `logs.document.failures_of(events)` does the same from events alone. `engine_death` marks the failures that end an engine (failed to start,
initialization failed, died unexpectedly, EngineDeadError, "EngineCore hit an exception", the
ready timeout), so a reader can tell a crash from an error the server survived.
"""

from __future__ import annotations

import re
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
               "TimeoutError: RPC call", "RPC call to execute_model timed out")


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

    def as_json(self) -> dict:
        return {"t": self.t, "node": self.node, "kind": self.kind, "text": self.text,
                "engine_death": self.engine_death, "phase": self.phase,
                "process": self.process, "origin": self.origin, "line": self.line}


def is_engine_death(event: LogEvent, hits: list[Hit]) -> bool:
    """Does this event say an engine (or one of its workers) is gone?"""
    if any(h.id in ENGINE_DEATH_RULES for h in hits):
        return True
    message = event.message
    return any(text in message for text in _DEATH_TEXT)


def phase_at(attempts: list, t: float | None) -> str | None:
    """The phase of a node's startup attempts (`timeline.Timeline`s, in order) at time `t`:
    the last phase started at or before `t` in the last attempt started by then; `serving`
    after a complete startup's end; None without a time or a timeline."""
    if t is None:
        return None
    chosen = None
    for tl in attempts:
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


def record(entry: dict, event: LogEvent, hits: list[Hit], shown_phase: str | None = None) -> dict:
    """Complete one error entry of facts.py with what a failure needs (engine_death, and for
    an untimed line the phase its log's lines named so far: logs/untimed.py)."""
    entry["engine_death"] = is_engine_death(event, hits)
    if event.t is None:
        entry["shown_phase"] = shown_phase
    return entry


def failure_of(entry: dict, attempts: list) -> LogFailure:
    """The typed record of one error entry, its phase read from its node's attempts."""
    phase = phase_at(attempts, entry["t"]) if entry["t"] is not None \
        else entry.get("shown_phase")
    return LogFailure(t=entry["t"], node=entry["node"], kind=entry.get("kind") or "error",
                      text=entry["text"], engine_death=bool(entry.get("engine_death")),
                      phase=phase, process=entry.get("process"), origin=entry["origin"],
                      line=entry["line"])


@dataclass(frozen=True)
class Counted:
    """One failure `logs` counts: a failed startup attempt or the engine's death while serving.
    `origin`/`line` name the error entry it ended in, when `logs` listed one."""

    code: str  # "startup-failed" | "engine-died" (the `logs` finding codes)
    node: str
    attempt: int  # index of the node's startup attempt (0 for an untimed excerpt)
    t: float | None
    origin: str | None
    line: int | None

    @property
    def key(self) -> tuple[str, int] | None:
        return None if self.origin is None or self.line is None else (self.origin, self.line)


def died_serving(entry: dict) -> bool:
    """Does this `errors[]` entry say the engine died after its startup completed?"""
    return (entry.get("phase") == SERVING and (entry.get("engine_death")
                                               or entry.get("kind") == "fatal")
            or "died unexpectedly" in entry["text"] or "EngineDeadError" in entry["text"])


def fail_on_errors(errors: list[dict], timelines: dict[str, list]) -> None:
    """Where an attempt ends (issue 36): a startup attempt that never became ready and holds an
    error `logs` counts (an ERROR record, a traceback, an exception line, a fatal signature)
    ended in that error: it failed, with its first engine death, else its first error.
    `errors`: facts.py's entries; `timelines`: each node's `timeline.Timeline`s, in order."""
    by_node: dict[str, list[dict]] = {}
    for entry in errors:
        if entry["t"] is not None:
            by_node.setdefault(entry["node"], []).append(entry)
    for node, attempts in timelines.items():
        for k, tl in enumerate(attempts):
            if tl.complete or tl.failed or tl.first_t is None:
                continue
            end = attempts[k + 1].first_t if k + 1 < len(attempts) else None
            mine = [e for e in by_node.get(node, ()) if e["t"] >= tl.first_t
                    and (end is None or e["t"] < end)]
            if not mine:
                continue
            first = next((e for e in mine if e.get("engine_death")), mine[0])
            tl.failed, tl.failure, tl.failure_t = True, first["text"][:300], first["t"]
            if tl.phases:
                tl.phases[-1].open = False


_STOP = re.compile(r"trigger received signal=SIG(?:TERM|INT)"
                   r"|[Rr]eceived (?:signal )?SIG(?:TERM|INT)|^KeyboardInterrupt|Aborted!$")


def is_stop(message: str) -> bool:
    """Does this line say someone stopped the server (a SIGTERM/SIGINT it received, Ctrl-C)?
    What it logs afterwards is its teardown, no failure (the `stalls` vocabulary's `stopped`)."""
    return ("SIG" in message or "Interrupt" in message or "Aborted!" in message) \
        and _STOP.search(message) is not None


def counted_failures(errors: list[dict], attempts: list, complete: bool,
                     stops: list[float] = ()) -> list[Counted]:
    """THE decision of what is a failure (issue 36), made once for `logs` and `stalls`: one per
    startup attempt of the primary node that ended failed (`attempts`: its timelines; an
    attempt fails at a fail.* line or at any error it logged before becoming ready, document.py
    `_fail_on_errors`), and one when the engine died after a completed startup (`complete`):
    an error while serving that `is_engine_death` or a fatal signature reads as fatal. A line
    that is no `logs` error (a WARNING "NCCL error" vLLM goes on after) is never a failure,
    and neither is what a server logs after a stop signal (`stops`: its teardown)."""
    out: list[Counted] = []
    for k, tl in enumerate(attempts):
        if tl.failed and not _stopped(stops, tl.first_t, tl.failure_t):
            entry = _ending(errors, tl.node, tl.failure_t, tl.first_t,
                            attempts[k + 1].first_t if k + 1 < len(attempts) else None)
            out.append(Counted("startup-failed", tl.node, k, tl.failure_t,
                               entry and entry["origin"], entry and entry["line"]))
    if complete:
        entry = next((e for e in errors if died_serving(e)), None)
        if entry is not None and not _stopped(stops, attempts[-1].first_t, entry["t"]):
            out.append(Counted("engine-died", entry["node"], len(attempts) - 1, entry["t"],
                               entry["origin"], entry["line"]))
    return out


def _stopped(stops, first: float | None, t: float | None) -> bool:
    """Was a stop signal logged in this attempt (from `first`) before time `t`?"""
    return t is not None and any((first is None or s >= first) and s <= t for s in stops)


def _ending(errors: list[dict], node: str, t: float | None, first: float | None,
            end: float | None) -> dict | None:
    """The error entry an attempt failed at: at its failure time (an engine death first),
    else its first error; untimed (no times at all), its first engine death, else its first
    error before serving."""
    mine = [e for e in errors if e["node"] == node]
    if t is None:
        mine = [e for e in mine if e["t"] is None and e.get("phase") != SERVING]
    else:
        mine = [e for e in mine if e["t"] is not None and (first is None or e["t"] >= first)
                and (end is None or e["t"] < end)]
        at = [e for e in mine if e["t"] == t]
        mine = at or mine
    return next((e for e in mine if e.get("engine_death")), mine[0] if mine else None)


__all__ = ["Counted", "LogFailure", "SERVING", "ENGINE_DEATH_RULES", "counted_failures",
           "died_serving", "fail_on_errors", "failure_of", "is_engine_death", "is_stop",
           "phase_at", "record"]
