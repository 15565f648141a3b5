"""The session's sweep step: the one place the session meets the sweep engine.

The step calls the sweep engine (`sparktriage.sweep.engine`): `plan_sweep(...)` and
`run_sweep(plan, DIR/sweep, observer)`: the engine's adaptive launches (depth 0 included), its
gate, `sweep-state.json` for resume and `sweep.json`; the session's observer records every
server process it starts. Resumed from the engine's own state: finished launches are never
repeated, an interrupted one is launched again (the runner records the interruption).
"""

from __future__ import annotations

from dataclasses import dataclass
from pathlib import Path

from sparktriage.progress import Observer
from sparktriage.store.documents import write_document


@dataclass(frozen=True)
class SweepInputs:
    depths: tuple[int, ...]
    method: str
    workload: str
    base_labels: tuple[str, ...]  # the protocol launches (the deployment's own depth)
    base_depth: int = 0
    deployment: str | None = None  # for the engine: DEPLOY.yaml, --lab, protocol size, baseline
    lab: str | None = None
    requests: int = 15
    max_tokens: int = 256
    baseline: str | None = None
    budget_min: float | None = None
    max_launches: int | None = None  # None: the engine's default (3 per depth)


def run_engine(run_dir: Path, inputs: SweepInputs, observe: Observer) -> dict:
    """The sweep by the sweep engine into `DIR/sweep` (its own run directory: the engine owns
    every launch folder there; resumed from its `sweep-state.json` when there is one), its
    `sweep.json` copied to the top for the report; return it."""
    from sparktriage.sweep.engine import plan_sweep, run_sweep
    out = run_dir / "sweep"
    plan = None
    if not (out / "sweep-state.json").is_file():
        plan = plan_sweep(Path(inputs.deployment), lab=Path(inputs.lab) if inputs.lab else None,
                          depths=inputs.depths, method=inputs.method, requests=inputs.requests,
                          max_tokens=inputs.max_tokens, workloads=(inputs.workload,),
                          baseline=Path(inputs.baseline) if inputs.baseline else None,
                          budget_minutes=inputs.budget_min, max_launches=inputs.max_launches)
    result = run_sweep(plan, out, observe, command=["sparktriage", "session"])
    write_document(run_dir / "sweep.json", result.document)
    return result.document
