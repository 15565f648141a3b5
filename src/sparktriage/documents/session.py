"""Typed session summaries: `selfcheck.json` (docs/selfcheck.md) and `demo.json`
(docs/demo.md), both also printed by their commands' `--json`."""

from __future__ import annotations

from typing import Any, Literal

from sparktriage.store.typed import Document, Part


class Step(Part):
    step: str
    launch: str | None
    status: Literal["ok", "failed"]
    reason: str | None


class WorkloadHeadline(Part):
    decode_tok_s: dict[str, Any]
    e2e_tok_s: float | None
    ttft_s: float | None
    failed: int
    delivered_tokens: list[int] | None = None  # [fewest, most] per measured answer


class BenchHeadline(Part):
    model: str | None
    workloads: dict[str, WorkloadHeadline]
    reconcile_verdict: str | None


class SelfcheckProbe(Part):
    verdict: str | None
    pattern: str | None
    tokens_spent: int | None
    baseline: bool
    advice: list[str] | None


class StartupPhase(Part):
    name: str | None
    duration_s: float | None


class Startup(Part):
    complete: bool | None
    startup_s: float | None
    phases: list[StartupPhase]


class StallLine(Part):
    cause: str
    kind: str
    phase: str | None
    duration_s: float
    confidence: float | None


class SelfcheckReport(Part):
    dir: str
    signed: bool
    fingerprint: str | None
    allowed_signers_line: str | None
    map: str | None
    secrets_replaced: int | None


class SelfcheckFinding(Part):
    id: str
    severity: Literal["finding", "caveat"]
    text: str


class SelfcheckDocument(Document):
    """selfcheck.json: one check of a running server, written into its launch folder."""

    NAME = "selfcheck"
    FILE = "selfcheck.json"
    kind: Literal["selfcheck"]
    run: str
    launch: str | None  # None: the server never answered, nothing was measured
    endpoint: str
    quick: bool
    server: dict[str, Any] | None = None  # what /v1/models and /version state
    readiness: dict[str, Any] | None = None
    fields: dict[str, Any] | None = None
    findings: list[SelfcheckFinding] = []
    probe: SelfcheckProbe | None
    bench: BenchHeadline | None
    startup: Startup | None
    stalls: list[StallLine] | None
    report: SelfcheckReport | None
    steps: list[Step]


class DemoLaunch(Part):
    label: str
    depth: int
    outcome: str | None
    ready_s: float | None  # spawn to the first answered readiness check (not startup time)
    startup_s: float | None = None  # logs/startup_time.py: first server log line to ready
    stall_findings: int
    delivered_tok_s: float | None
    e2e_tok_s: float | None
    acceptance_length: float | None


class DemoProbe(Part):
    verdict: str | None
    pattern: str | None
    tokens_spent: int | None
    baseline: bool


class DemoReport(Part):
    dir: str
    signed: bool
    fingerprint: str | None
    public_key: str
    allowed_signers_line: str | None
    verified: bool
    files: int


class DemoDocument(Document):
    """demo.json: the demo session's summary."""

    NAME = "demo"
    FILE = "demo.json"
    kind: Literal["demo"]
    run: str
    model: str
    baseline: str | None
    launches: list[DemoLaunch]
    probe: DemoProbe | None
    bench: BenchHeadline | None
    sweep: dict[str, Any] | None
    report: DemoReport | None
    steps: list[Step]
