"""The typed launch result: one launch as `launch_once` returns it, and what `sparktriage launch
--json` prints, `{schema_version, kind: "launch-result", run, launches: [...]}` (docs/formats.md).
(`launch.json`, the server a protocol measured, is in `documents/bench.py`.)"""

from __future__ import annotations

from typing import Any, Literal

from sparktriage.store.typed import Document, Part


class Marker(Part):
    node: str
    marker: str
    t: float
    after_s: float | None


class StartupPhase(Part):
    name: str | None
    duration_s: float | None
    open: bool | None


class Startup(Part):
    complete: bool | None = None
    failed: bool | None = None
    startup_s: float | None = None  # logs/startup_time.py: first server log line to ready
    phases: list[StartupPhase] = []
    error: str | None = None  # the log parser failed; nothing else then


class LaunchOutcome(Part):
    """One launch as `launch_once` returns it (the supervisor's summary plus its place)."""

    label: str
    bundle: str
    error: str | None
    outcome: str | None = None
    ready_s: float | None = None  # spawn to first answered readiness check (not startup time)
    failure: str | None = None
    markers: list[Marker] = []
    survivors: dict[str, list[dict[str, Any]]] = {}
    lost: dict[str, Any] = {}
    startup: Startup | None


class LaunchResult(Document):
    """What `sparktriage launch --json` prints."""

    NAME = "launch-result"
    kind: Literal["launch-result"]
    run: str
    launches: list[LaunchOutcome]
