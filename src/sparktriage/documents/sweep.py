"""The typed speculative-depth sweep decision (`sweep.json` as `sweep/decide.py` writes it
today; docs/formats.md, docs/sweep.md)."""

from __future__ import annotations

from typing import Any, Literal

from sparktriage.store.typed import Document, Part


class SweepLaunch(Part):
    label: str
    delivered_tok_s: float | None
    e2e_tok_s: float | None = None
    acceptance_length: float | None = None


class SweepDepth(Part):
    depth: int
    launches: list[SweepLaunch]


class Decision(Part):
    depth: int | None
    reason: str
    provisional: bool | None = None
    basis: Literal["decode", "e2e"] | None = None
    comparison: dict[str, Any] | None = None


class SweepDocument(Document):
    """sweep.json: every launch per depth and the decision."""

    NAME = "sweep"
    FILE = "sweep.json"
    kind: Literal["sweep"]
    method: str
    workload: str
    depths: list[SweepDepth]
    decision: Decision
