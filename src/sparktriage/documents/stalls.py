"""The typed `stalls` document (`stalls.json`; docs/formats.md, every field in docs/stalls.md).

Required: `kind`, `phases` (the `phases` list of the logs document) and `findings` (the public
contract `[{kind, node, start, end, duration_s, phase, verdict: {id, confidence, evidence,
alternatives: [{id, why_not}], fix}}]`); the rest is written by `sparktriage stalls` and may be
absent in a hand-made document."""

from __future__ import annotations

from typing import Any, Literal

from pydantic import Field

from sparktriage.store.typed import Document, OpenPart, Part


class Alternative(OpenPart):
    id: str
    why_not: str | None


class StallVerdict(OpenPart):
    id: str
    title: str | None = None
    confidence: float
    state: str | None = None
    evidence: list[Any]
    alternatives: list[Alternative]
    open: Any = None
    to_raise_confidence: Any = None
    fix: Any


class Finding(Part):
    kind: Literal["stall", "failure"]
    node: str
    start: float | None  # null only in an untimed excerpt (input.timed false: docs/stalls.md)
    end: float | None
    duration_s: float | None
    phase: str | None
    start_offset_s: float | None = None
    how: list[str] | None = None
    reason: str | None = None
    open_ended: bool | None = None
    held_by: str | None = None
    last_line: str | None = None
    errors: int | None = Field(None, description="a failure: how many of the errors `logs` "
                                                 "counts it holds")
    verdict: StallVerdict


class Observation(Part):
    """A long silence within its phase's budget: expected (a cold compile, a rendezvous wait)."""

    node: str
    phase: str | None
    start: float
    end: float
    duration_s: float
    start_offset_s: float | None = None
    text: str
    cause: str | None = Field(None, description="the id of the rule whose cause this expected "
                                                "silence shows within its budget (a cold "
                                                "compile: compile-jit); null when none")


class StallsSummary(Part):
    stalls: int
    failures: int
    healthy: bool
    causes: list[str]
    errors: int | None = Field(None, description="errors `logs` counts that the failures hold")
    errors_teardown: int | None = Field(None, description="errors `logs` counts that were "
                                                          "logged after a stop (teardown)")
    errors_other: int | None = Field(None, description="errors `logs` counts that ended "
                                                       "nothing: the start still became ready, "
                                                       "or the server went on serving")


class StallsDocument(Document):
    """stalls.json: classified stalls and failures of one startup."""

    NAME = "stalls"
    FILE = "stalls.json"
    kind: Literal["sparktriage-stalls"]
    tool_version: str | None = None
    input: dict[str, Any] | None = None
    params: dict[str, Any] | None = None
    nodes: dict[str, dict[str, Any]] | None = None
    phases: list[dict[str, Any]]
    findings: list[Finding]
    observations: list[Observation] | None = None
    summary: StallsSummary | None = None
    # the log is an excerpt, as the logs document says (`excerpt_detail` is its
    # `excerpt_detail`: reasons, cannot_tell, cuts; docs/logs.md "Excerpts")
    excerpt: bool | None = None
    excerpt_detail: dict[str, Any] | None = None
