"""The typed `probe` document (`launches/<label>/probe.json`, the JSON contract of
`sparktriage probe`, docs/garbage.md). `verdict` and `families` are required; the other fields
are written by every probe and may be absent in older or hand-made documents."""

from __future__ import annotations

from typing import Any, Literal

from sparktriage.store.typed import Document, Part


Status = Literal["ok", "suspect", "garbage", "skipped"]


class Family(Part):
    """One family of checks: its status, its numbers and the evidence in words."""

    name: str
    status: Status
    numbers: dict[str, Any]
    evidence: list[str | dict[str, Any]]
    reason: str | None = None
    patterns: list[str] | None = None


class ProbeDocument(Document):
    """probe.json: the garbage verdict of one launch."""

    NAME = "probe"
    FILE = "probe.json"
    kind: Literal["probe"]
    created: str | None = None
    endpoint: str | None = None
    model: str | None = None
    server_version: str | None = None
    seed: int | None = None
    verdict: Literal["healthy", "healthy-uncalibrated", "suspect", "garbage"]
    pattern: str | None = None
    pattern_name: str | None = None
    reasons: list[str] = []
    advice: list[str] = []
    confidence: Literal["normal", "reduced"] | None = None
    limitations: list[str] = []
    families: list[Family]
    baseline: dict[str, Any] | None = None
    capabilities: dict[str, Any] | None = None
    requests: int | None = None
    tokens_spent: int | None = None
    reference_tokens_spent: int | None = None
    wall_s: float | None = None
