"""The typed reconciliation document (`launches/<label>/reconcile.json`: delivered tokens
against the server's log and `/metrics`, window by window; docs/formats.md, docs/logs.md)."""

from __future__ import annotations

from typing import Any, Literal

from sparktriage.store.typed import Document, Part


class Reason(Part):
    code: str
    text: str
    # every number (or word) the sentence quotes, by name (reconcile/explain.py)
    cites: dict[str, float | int | bool | str | None] | None = None


class Window(Part):
    start: str | float | None  # ISO 8601 with UTC offset
    end: str | float | None


class Delivered(Part):
    requests: int
    tokens: int
    chunks: int
    tokens_per_chunk: float | None
    token_sources: list[str]
    exact_timing: bool | None
    decode_tok_s_mean: float | None  # one workload's (the fastest), named below
    decode_workload: str | None = None
    decode_requests: int | None = None
    decode_tok_s_by_workload: dict[str, float] | None = None


class ReconcileDocument(Document):
    """reconcile.json: one launch's delivered vs logged vs metrics."""

    NAME = "reconcile"
    FILE = "reconcile.json"
    kind: Literal["reconcile"]
    verdict: str
    reasons: list[Reason]
    protocol_windows: list[Window] | None = None
    delivered: Delivered | None = None
    metrics: dict[str, Any] | None = None
    log: dict[str, Any] | None = None
    ratio_log_peak_to_delivered_mean: float | None = None
    inputs: dict[str, Any] | None = None
