"""The session's sweep step: the one place the session meets the sweep engine.

The session declares one sweep plan when it opens (`sweep_plan`: sweep.plan.plan_sweep over the
session's options and its deployment, loaded once): the same plan builds the deployment of every
launch the session makes away from the deployment's own depth, and `run_engine` runs it with
`run_sweep(plan, DIR/sweep, observer)`: the engine's adaptive launches (depth 0 included), its
gate, `sweep-state.json` for resume and `sweep.json`; every server process it starts goes to the
session's process book (session.json), as the session's own launches' do. The sweep's launches
are S001, S002, ... so that a launch id names one launch in the whole run directory (the
session's own are L001, ...). Resumed from the engine's own state: finished launches are never
repeated, an interrupted one is launched again (the runner records the interruption).
"""

from __future__ import annotations

from pathlib import Path

from sparktriage.measure.loop import Processes
from sparktriage.progress import Observer
from sparktriage.session.plan import SessionOptions
from sparktriage.store.documents import write_document
from sparktriage.sweep.plan import SweepPlan, plan_sweep


SWEEP_LABEL_PREFIX = "S"  # the sweep's launches S001, ... beside the session's own L001, ...


def sweep_plan(options: SessionOptions, deployment) -> SweepPlan:
    """The sweep a session with `options` runs (its depths, method, deciding workload, protocol
    size, baseline and budget), on its already loaded `deployment`."""
    demo = getattr(options, "preset", None) == "demo"
    return plan_sweep(Path(options.deployment), lab=Path(options.lab) if options.lab else None,
                      depths=options.depths, method=options.method,
                      requests=options.requests, max_tokens=options.max_tokens,
                      workloads=(options.sweep_workload,),
                      baseline=Path(options.baseline) if options.baseline else None,
                      budget_minutes=options.budget_min,
                      # the demo measures each depth as many times as it was asked to
                      max_launches=options.launches * len(options.depths)
                      if demo else None, deployment=deployment)


def run_engine(run_dir: Path, plan: SweepPlan, deployment, observe: Observer,
               processes: Processes) -> dict:
    """The sweep by the sweep engine into `DIR/sweep` (its own run directory: the engine owns
    every launch folder there; resumed from its `sweep-state.json` when there is one), its
    `sweep.json` copied to the top for the report; return it."""
    from sparktriage.sweep.running.engine import run_sweep
    out = run_dir / "sweep"
    fresh = not (out / "sweep-state.json").is_file()
    result = run_sweep(plan if fresh else None, out, observe, command=["sparktriage", "session"],
                       deployment=deployment, label_prefix=SWEEP_LABEL_PREFIX,
                       processes=processes)
    write_document(run_dir / "sweep.json", result.document)
    return result.document
