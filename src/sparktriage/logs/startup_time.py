"""Startup time: defined once, from one origin, and shown the same way everywhere.

**Startup time** is the seconds from the start of the first startup phase the server's log
shows (its first startup line, on whichever node began first) to the end of the last startup
phase on any node (the API server's "Application startup complete"). Its origin is the server's
own first log line, the one origin every command has: `logs` on a bare file, `stalls`, the
launch and session summaries and the report all compute it with `span` over the same phases
(docs/metrics.md, "Startup time").

It is not the launch's `ready_s` (process spawn to the first answered readiness check, kept in
launch results as a supervisor timing): that one includes the interpreter's imports before the
first log line and the readiness poll interval, and no log alone can reproduce it.
"""

from __future__ import annotations

from typing import Iterable

DEFINITION = ("startup time: from the server's first startup log line (the earliest node) to the "
              "end of its last startup phase (API server ready)")
SHORT = "first server log line to ready"


def span(phases: Iterable[tuple[float | None, float | None]]) -> float | None:
    """Startup time of a set of phases ((start, end) in seconds, any nodes): latest end minus
    earliest start; None when there is no phase or the phase that started last is still open
    (the startup did not finish)."""
    phases = [(s, e) for s, e in phases if s is not None]
    if not phases:
        return None
    last = max(phases, key=lambda p: p[0])
    if last[1] is None:
        return None
    ends = [e for _, e in phases if e is not None]
    return round(max(ends) - min(s for s, _ in phases), 3)


def of_logs(doc: dict | None) -> float | None:
    """The startup time a `logs` document states (its `startup.startup_s`)."""
    startup = (doc or {}).get("startup") if isinstance(doc, dict) else None
    value = startup.get("startup_s") if isinstance(startup, dict) else None
    return float(value) if isinstance(value, (int, float)) and not isinstance(value, bool) else None


def words(seconds: float | None) -> str:
    """The one way a startup time is written in a line of text."""
    if seconds is None:
        return "startup time unknown (the log shows no completed startup)"
    return f"startup {seconds:.1f} s ({SHORT})"


__all__ = ["DEFINITION", "SHORT", "of_logs", "span", "words"]
