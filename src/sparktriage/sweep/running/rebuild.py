"""`sparktriage sweep --rebuild DIR`: every decision of a sweep recomputed from its launch folders.

The plan comes from `sweep-state.json`, each launch's facts from its record there (what only the
launch loop saw: depth, why, attempt, outcome, wall time), and everything measured from the
launch folder itself (sweep.evidence.launch): rates, acceptance counts, step and pair ratios, the
gate's outputs. The launches are assessed one by one in launch order, exactly as the live sweep did
(sweep.assess, the model advanced launch by launch), and `sweep.json` is written from the last
assessment. Nothing else is written: no launch folder, no state, no measurement is touched. The
stop reason is recomputed (settled, a budget spent); a sweep that had stopped before its end
keeps the one its sweep.json gave (interrupted). Given a session's run directory (its sweep in
`DIR/sweep`), the session's copy `DIR/sweep.json` is rewritten too.
"""

from __future__ import annotations

import json
from dataclasses import dataclass
from pathlib import Path

from sparktriage.config.deployment import load_deployment
from sparktriage.errors import InputError, SparktriageError
from sparktriage.store.documents import write_document
from sparktriage.sweep.assess import Assessment, assess
from sparktriage.sweep.evidence.launch import derive
from sparktriage.sweep.policy.situation import step_shape
from sparktriage.sweep.running.state import STATE_FILE, open_state
from sparktriage.sweep.model.stepfit import StepShape

SESSION_SWEEP = "sweep"  # a session's sweep runs in DIR/sweep (session.sweep_step)


@dataclass(frozen=True)
class Rebuilt:
    """What a rebuild wrote: the sweep directory, its document, whether it changed."""

    path: Path
    document: dict
    stop_reason: str
    changed: bool
    copies: tuple[Path, ...] = ()


def sweep_dir(path: Path) -> tuple[Path, Path | None]:
    """The sweep directory of `path` and the session directory holding it (or None)."""
    if (path / STATE_FILE).is_file():
        return path, None
    if (path / SESSION_SWEEP / STATE_FILE).is_file():
        return path / SESSION_SWEEP, path
    raise InputError(f"{path}: no {STATE_FILE} here or in {path / SESSION_SWEEP}: not a sweep's "
                     "run directory")


def _deployment(path: Path, plan):
    """The deployment the sweep ran: the run's own copy, else the plan's file, else none."""
    for load in (lambda: load_deployment(path / "deployment.yaml"), plan.load_deployment):
        try:
            return load()
        except (SparktriageError, OSError, ValueError):
            continue
    return None


def _previous(path: Path) -> dict | None:
    try:
        doc = json.loads((path / "sweep.json").read_text(encoding="utf-8"))
    except (OSError, ValueError):
        return None
    return doc if isinstance(doc, dict) else None


def reassess(path: Path) -> tuple[Assessment, object]:
    """The sweep in `path` assessed launch by launch from its folders; and its deployment."""
    state = open_state(path, None)
    plan = state.plan
    deployment = _deployment(path, plan)
    shape = step_shape(deployment) if deployment is not None else StepShape()
    found = assess(plan, [], None, run_path=path, shape=shape)
    evidence = []
    for record in state.launches:
        evidence.append(derive(path, record, plan))
        found = assess(plan, evidence, found, run_path=path, shape=shape)
    return found, deployment


def rebuild(path: Path) -> Rebuilt:
    """Recompute and write `sweep.json` of the sweep in `path` (module doc)."""
    from sparktriage.sweep.running.engine import write_sweep_json
    where, session = sweep_dir(path)
    before = _previous(where)
    found, deployment = reassess(where)
    depth, why = found.next_launch()
    stop = why if depth is None else ((before or {}).get("decision") or {}).get("stop_reason") \
        or "interrupted"
    doc = write_sweep_json(where, found, stop, deployment).to_dict()
    copies = ()
    if session is not None:
        write_document(session / "sweep.json", doc)
        copies = (session / "sweep.json",)
    after = _previous(where)
    return Rebuilt(where, doc, stop, after != before, copies)
