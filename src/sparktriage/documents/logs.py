"""The typed `logs` document (`launches/<label>/logs.json`, the JSON contract of
`sparktriage logs`; docs/formats.md, every field in docs/logs.md).

Required: `schema_version`, `kind` and `phases` (the startup timeline). Every other top-level
field is written by every parse and typed here, but may be absent (a log with no throughput
lines, a hand-made document); `reported` values are numbers as the log printed them, kept open
(a reader takes the numbers). Nested detail (windows, per-node timelines, config) stays open
objects owned by docs/logs.md."""

from __future__ import annotations

from typing import Any, Literal

from sparktriage.store.typed import Document, OpenPart, Part


class Phase(Part):
    name: str
    start: str | float | None
    end: str | float | None
    duration_s: float | None
    open: bool | None = None
    anchor: str | None = None


class LogError(Part):
    time: str | None
    text: str
    node: str | None = None
    process: str | None = None
    origin: str | None = None
    line: int | None = None
    kind: str | None = None  # error | traceback | exception | fatal (logs/failures.py)
    phase: str | None = None  # the startup phase it happened in, or "serving"
    engine_death: bool | None = None


class ExcerptReason(Part):
    code: Literal["no-start", "serving-only", "starts-mid-record", "ends-mid-record", "cut",
                  "untimed"]  # untimed: no line has a stamp (logs/untimed.py)
    text: str
    node: str
    origin: str


class ExcerptCut(Part):
    node: str
    start: str | float | None
    end: str | float | None
    why: str


class ExcerptDetail(Part):
    """Why the log is an excerpt and what it cannot tell (docs/logs.md, "Excerpts")."""

    reasons: list[ExcerptReason]
    cannot_tell: list[str]
    cuts: list[ExcerptCut]


class Rate(OpenPart):
    windows: Any
    mean: float | None
    mean_active: float | None = None
    peak: float | None


class Throughput(OpenPart):
    generation: Rate
    prompt: Rate | None = None


class Finding(Part):
    code: str
    severity: str
    text: str
    node: str | None = None  # the node a failure finding (startup-failed, engine-died) is of


class LogsDocument(Document):
    """logs.json: the server log of one launch, parsed."""

    NAME = "logs"
    FILE = "logs.json"
    kind: Literal["logs"]
    inputs: list[Any] | None = None
    time_basis: dict[str, Any] | None = None
    version: str | None = None
    versions: dict[str, Any] | None = None
    model: str | None = None
    startup: dict[str, Any] | None = None
    excerpt: bool | None = None  # the log starts mid-run, mid-record, or has cuts
    excerpt_detail: ExcerptDetail | None = None
    phases: list[Phase]
    reported: dict[str, Any] = {}
    reported_detail: dict[str, Any] | None = None
    gaps: list[dict[str, Any]] | None = None
    silences: list[dict[str, Any]] | None = None
    nodes: dict[str, dict[str, Any]] | None = None
    throughput: Throughput | None = None
    spec_decode: dict[str, Any] | None = None
    kernels: list[str] = []
    kernel_detail: list[dict[str, Any]] | None = None
    kernel_rejections: list[Any] | None = None
    config: dict[str, Any] | None = None
    args: dict[str, Any] | None = None
    distributed: dict[str, Any] | None = None
    storage: dict[str, Any] | None = None
    shards: list[dict[str, Any]] | None = None
    kv_cache: dict[str, Any] | None = None
    warnings: list[dict[str, Any]] | None = None
    warnings_total: int | None = None
    errors: list[LogError] = []
    errors_total: int | None = None
    counts: dict[str, Any] | None = None
    findings: list[Finding] | None = None
