"""The typed report document (`report/report.json`, `kind: "sparktriage-report"`; the document
model every renderer draws, docs/report.md). Sections stay open objects: each is described in
docs/report.md and owned by its section builder."""

from __future__ import annotations

from typing import Any, Literal

from sparktriage.store.typed import Document, Part


class RunHeader(Part):
    created: str | None
    tool_version: str | None
    command: list[str] | str | None
    launches: list[str]


class Summary(Part):
    headline: Any
    verdicts: Any


class Sections(Part):
    deployment: dict[str, Any]
    environment: dict[str, Any]
    startup: dict[str, Any]
    probe: dict[str, Any]
    protocol: dict[str, Any]
    reconciliation: dict[str, Any]
    sweep: dict[str, Any]
    roofline: dict[str, Any]


class ReportDocument(Document):
    """report.json: the document model of one report."""

    NAME = "report"
    FILE = "report.json"
    kind: Literal["sparktriage-report"]
    tool_version: str
    generated_at: str
    run: RunHeader
    redaction: dict[str, Any]
    page_one: dict[str, Any]
    summary: Summary
    sections: Sections
    warnings: list[str]
    methodology: Any
    verification: Any
    producers: Any
    plots: list[Any]
    data_files: list[Any]
