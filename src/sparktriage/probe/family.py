"""The result every signal family returns, and how statuses are ranked.

`status` is the public word (`ok`, `suspect`, `garbage`, `skipped`); internally a family is
weak (`suspect`) or strong (`garbage`) evidence of corruption. `hints` name the failure
patterns (F1-F8) the family's evidence points at; the verdict picks one.
"""

from __future__ import annotations

import math
from dataclasses import dataclass, field

OK, SUSPECT, GARBAGE, SKIPPED = "ok", "suspect", "garbage", "skipped"
_RANK = {SKIPPED: -1, OK: 0, SUSPECT: 1, GARBAGE: 2}


@dataclass
class FamilyResult:
    name: str
    status: str = OK
    numbers: dict = field(default_factory=dict)
    evidence: list[str] = field(default_factory=list)
    reason: str | None = None  # why it was skipped
    hints: set[str] = field(default_factory=set)

    def raise_to(self, status: str, evidence: str, *hints: str) -> None:
        """Record evidence; the status only ever goes up (ok < suspect < garbage)."""
        self.evidence.append(evidence)
        self.hints.update(hints)
        if _RANK[status] > _RANK[self.status]:
            self.status = status

    def as_dict(self) -> dict:
        doc = {"name": self.name, "status": self.status, "numbers": _clean(self.numbers),
               "evidence": list(self.evidence)}
        if self.status == SKIPPED:
            doc["reason"] = self.reason
        if self.hints:
            doc["patterns"] = sorted(self.hints)
        return doc


def skipped(name: str, reason: str) -> FamilyResult:
    return FamilyResult(name, SKIPPED, reason=reason, evidence=[f"skipped: {reason}"])


def _clean(value):
    """Round floats for the document; non-finite numbers become strings (JSON has none)."""
    if isinstance(value, float):
        if not math.isfinite(value):
            return "nan" if math.isnan(value) else ("inf" if value > 0 else "-inf")
        return round(value, 4)
    if isinstance(value, dict):
        return {k: _clean(v) for k, v in value.items()}
    if isinstance(value, (list, tuple)):
        return [_clean(v) for v in value]
    return value


def fmt(value: float, digits: int = 2) -> str:
    return "n/a" if value is None or (isinstance(value, float) and math.isnan(value)) else f"{value:.{digits}f}"
