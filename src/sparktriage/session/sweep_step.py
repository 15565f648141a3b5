"""The session's sweep step: the one place the session meets the sweep engine.

When the sweep engine is installed (`sparktriage.sweep.engine`), the step calls
`plan_sweep(...)` and `run_sweep(plan, DIR/sweep, observer)`: the engine's adaptive launches (depth 0
included), its gate, `sweep-state.json` for resume and `sweep.json`; the session's observer
records every server process it starts. Without it (before the engine is merged), the step runs
the sweep the demo always ran (sparktriage.sweep.decide: one launch per depth other than the
deployment's own, the protocol launches standing for that depth, `sweep_document`).

Resumable from `DIR/sweep/progress.json`: the depths already measured and their launch labels;
a depth whose launch was interrupted is launched again (the runner records the interruption).
"""

from __future__ import annotations

import importlib.util
import json
from dataclasses import dataclass
from pathlib import Path
from typing import Callable

from sparktriage.store.documents import write_document

Observer = Callable[[str, dict], None]
# launch_at(depth) -> the label of a completed launch at that depth, with bench.json and
# logs.json in its folder; None when it did not complete
LaunchAt = Callable[[int], "str | None"]


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


def engine_available() -> bool:
    """Whether `sparktriage.sweep.engine` (the sweep engine) is installed."""
    try:
        return importlib.util.find_spec("sparktriage.sweep.engine") is not None
    except ImportError:
        return False


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
                          budget_minutes=inputs.budget_min)
    result = run_sweep(plan, out, observe, command=["sparktriage", "session"])
    write_document(run_dir / "sweep.json", result.document)
    return result.document


def _read(path: Path) -> dict | None:
    try:
        return json.loads(path.read_text(encoding="utf-8"))
    except (OSError, ValueError):
        return None


def _rate(run_dir: Path, label: str, workload: str, depth: int):
    # the pre-engine decision helpers (imported here: the engine's sweep.decide replaces them)
    from sparktriage.sweep.decide import LaunchRate, acceptance_length, workload_rate
    folder = run_dir / "launches" / label
    bench, logs = _read(folder / "bench.json"), _read(folder / "logs.json")
    return LaunchRate(label, workload_rate(bench, workload), acceptance_length(logs) if depth else None,
                      workload_rate(bench, workload, "e2e_tok_s"))


def _leader(per_depth: dict) -> str | None:
    from sparktriage.sweep.decide import decide
    decision = decide(per_depth)
    if decision.get("depth") is None:
        return None
    return f"depth {decision['depth']}" + (" (provisional)" if decision.get("provisional") else "")


def run_sweep_step(run_dir: Path, inputs: SweepInputs, launch_at: LaunchAt,
                   observe: Observer) -> dict:
    """Measure every depth not measured yet, then write `sweep.json`; return it (the
    pre-engine sweep)."""
    from sparktriage.sweep.decide import sweep_document
    progress_path = run_dir / "sweep" / "progress.json"
    progress = _read(progress_path) or {"depths": {}}
    per_depth: dict = {
        inputs.base_depth: [_rate(run_dir, l, inputs.workload, inputs.base_depth)
                            for l in inputs.base_labels]}
    for depth, labels in progress["depths"].items():
        per_depth[int(depth)] = [_rate(run_dir, l, inputs.workload, int(depth)) for l in labels]
    for depth in inputs.depths:
        if depth == inputs.base_depth or str(depth) in progress["depths"]:
            continue
        label = launch_at(depth)
        labels = [label] if label else []
        progress["depths"][str(depth)] = labels
        write_document(progress_path, progress)
        per_depth[depth] = [_rate(run_dir, l, inputs.workload, depth) for l in labels]
        leader = _leader(per_depth)
        if leader:
            observe("sweep-leader", {"text": leader})
    document = sweep_document(inputs.method, inputs.workload, per_depth)
    write_document(run_dir / "sweep.json", document)
    return document
