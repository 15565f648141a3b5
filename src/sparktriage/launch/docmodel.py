"""Typed launch documents: `launches/<label>/launch.json` (the server a protocol measured) and
the result of one launch (`launch_once`), which `sparktriage launch --json` prints as
`{schema_version, kind: "launch-result", run, launches: [...]}` (docs/formats.md)."""

from __future__ import annotations

from typing import Any, Literal

from sparktriage.bench.workload import Workload
from sparktriage.store.typed import Document, Part


class ClientSettings(Part):
    stall_timeout_s: float | None = None
    request_timeout_s: float | None = None
    api_key: Literal["set"] | None = None


class LaunchDocument(Document):
    """launch.json: the server one protocol measured and what was asked of it."""

    NAME = "launch"
    FILE = "launch.json"
    kind: Literal["launch"]
    label: str | None = None
    endpoint: str
    model: str
    models_listed: list[str] | None = None
    server_version: str | None
    max_model_len: int | None = None
    workloads: list[Workload]
    client: ClientSettings


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
    phases: list[StartupPhase] = []
    error: str | None = None  # the log parser failed; nothing else then


class LaunchOutcome(Part):
    """One launch as `launch_once` returns it (the supervisor's summary plus its place)."""

    label: str
    bundle: str
    error: str | None
    outcome: str | None = None
    ready_s: float | None = None
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
