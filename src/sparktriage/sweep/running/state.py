"""The persisted state of a sweep (`sweep-state.json`), rewritten after every launch.

It holds the declared plan and one record per launch started (docs/sweep.md, Resume). A launch
folder that has no record was cut short (Ctrl-C, kill -9): on resume it is recorded as
`interrupted` (a failed launch that does not count toward its depth's failures) and never reused;
every recorded launch is kept as it is, so a resumed sweep repeats no finished launch.
"""

from __future__ import annotations

from dataclasses import dataclass, field
from pathlib import Path

import yaml

from sparktriage.errors import InputError, UsageError
from sparktriage.store.documents import read_document, write_document
from sparktriage.store.rundir import SCHEMA_VERSION, RunDir, utc_now
from sparktriage.sweep.plan import SweepPlan

STATE_FILE = "sweep-state.json"


@dataclass
class SweepState:
    """Plan and launch records of one sweep directory."""

    path: Path
    plan: SweepPlan
    launches: list[dict] = field(default_factory=list)
    started: str = field(default_factory=utc_now)
    resumed: list[str] = field(default_factory=list)

    def save(self) -> None:
        write_document(self.path / STATE_FILE, {
            "schema_version": SCHEMA_VERSION, "kind": "sweep-state", "started": self.started,
            "resumed": self.resumed, "plan": self.plan.model_dump(mode="json"),
            "launches": self.launches})

    def add(self, record: dict) -> None:
        self.launches.append(record)
        self.save()

    def recorded(self) -> set[str]:
        return {r["label"] for r in self.launches}

    def adopt_interrupted(self, run: RunDir) -> list[str]:
        """Record launch folders without a record as interrupted; return their labels."""
        found = []
        for launch in run.launches():
            if launch.label in self.recorded():
                continue
            depth = _depth_of(launch.path / "deployment.yaml")
            self.launches.append({"label": launch.label, "depth": depth, "status": "failed",
                                  "interrupted": True, "reason": "interrupted: the sweep stopped "
                                  "during this launch (resumed without it)", "wall_s": 0.0})
            found.append(launch.label)
        if found:
            self.save()
        return found


def _depth_of(path: Path) -> int | None:
    try:
        doc = yaml.safe_load(path.read_text(encoding="utf-8")) or {}
    except (OSError, yaml.YAMLError):
        return None
    spec = doc.get("speculative") if isinstance(doc, dict) else None
    return int(spec.get("num_speculative_tokens", 0)) if isinstance(spec, dict) else 0


def open_state(path: Path, plan: SweepPlan | None) -> SweepState:
    """The state of `path`: read back when present (its plan must equal `plan` when one is
    given), else a new one for `plan`."""
    file = path / STATE_FILE
    if not file.exists():
        if plan is None:
            raise InputError(f"{path}: no {STATE_FILE}; nothing to resume (start with --out)")
        return SweepState(path, plan)
    doc = read_document(file)
    if doc.get("kind") != "sweep-state" or doc.get("schema_version") != SCHEMA_VERSION:
        raise InputError(f"{file}: not a sweep state of schema_version {SCHEMA_VERSION}")
    try:
        stored = SweepPlan.model_validate(doc.get("plan"))
    except ValueError as exc:
        raise InputError(f"{file}: its plan is not valid: {str(exc).splitlines()[0]}") from None
    if plan is not None and plan != stored:
        raise UsageError(f"{path} holds another sweep; continue it with --resume {path}, "
                         "or give a new --out")
    launches = doc.get("launches")
    if not isinstance(launches, list) or not all(isinstance(r, dict) and "label" in r
                                                 for r in launches):
        raise InputError(f"{file}: 'launches' must be a list of launch records")
    return SweepState(path, stored, launches, doc.get("started") or utc_now(),
                      list(doc.get("resumed") or []))
