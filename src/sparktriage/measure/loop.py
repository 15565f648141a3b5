"""One launch, measured: the one loop that the session's launch groups and the sweep's launches
both run (docs/architecture.md, "One launch loop").

`measure_launch(run, deployment, measure, ...)`:

  folder    a new launch folder in the run directory (`L001`, or the caller's prefix: a session's
            sweep numbers its launches `S001`, ...), the launch's deployment written there
            (redacted, as every command writes it)
  opened    the caller records the launch (session.json, the sweep's progress event) before
            anything starts
  start     `launch.run.launch_once`: start every node, wait for readiness; every server process
            the supervisor reports goes to the caller's process book as it starts
  measure   the caller's measurement (protocol, probe, gate, two-stream phase) while the server
            is ready; a `watch` (the session's live stall classifier) runs until readiness
  teardown  by `launch_once` on every path; after a normal end the process book hears that the
            launch's processes were torn down
  interrupt Ctrl-C (KeyboardInterrupt) anywhere in the launch: torn down by `launch_once`, the
            caller's `interrupted` records it with the seconds the launch ran, and the interrupt
            propagates (the CLI exits 130; `resume` redoes that launch)

The caller decides what a launch means (a session step's outcome, a sweep's evidence): the loop
only returns what happened (`Ended`).
"""

from __future__ import annotations

import time
from contextlib import nullcontext
from dataclasses import dataclass
from pathlib import Path
from typing import Callable, Protocol

from sparktriage.bundle import layout
from sparktriage.config.deployment import Deployment
from sparktriage.launch.plan import LaunchPlan, build_plan
from sparktriage.launch.run import launch_once
from sparktriage.progress import Observer, quiet
from sparktriage.store.documents import write_yaml_document
from sparktriage.store.rundir import LaunchDir, RunDir


class Processes(Protocol):
    """Where the server processes of a run's launches are written down, so that a run resumed
    after a crash can stop what was left running (session.json's `processes`)."""

    def process_started(self, label: str, details: dict) -> None:
        """A server process of launch `label` started (the supervisor's `process` event)."""

    def launch_torn_down(self, label: str) -> None:
        """Every process of launch `label` was stopped by the launch's teardown."""


class Watch(Protocol):
    """Something that runs beside a launch until its server is ready (a context manager)."""

    def __enter__(self) -> "Watch": ...

    def __exit__(self, *exc) -> None: ...

    def ready(self) -> None:
        """The server is ready: stop watching its startup."""


@dataclass(frozen=True)
class Slot:
    """A launch's folder and plan, before and while its server runs."""

    launch: LaunchDir
    plan: LaunchPlan

    @property
    def label(self) -> str:
        return self.launch.label

    @property
    def endpoint(self) -> str:
        return self.plan.endpoint

    @property
    def log(self) -> list[str]:
        """The head node's server log records (what reconciliation reads)."""
        return [str(self.launch.path / "bundle" / layout.NODES_DIR / self.plan.head.name
                    / layout.log_file("server"))]


@dataclass(frozen=True)
class Ended:
    """A launch after its teardown: `result` as `launch_once` returns it, `wall_s` from the start
    to the end of teardown."""

    slot: Slot
    result: dict
    wall_s: float

    @property
    def label(self) -> str:
        return self.slot.label

    @property
    def completed(self) -> bool:
        return self.result.get("outcome") == "completed"

    @property
    def error(self) -> str | None:
        """Why the launch failed, as its supervisor said it (None when it did not say)."""
        return self.result.get("error") or self.result.get("failure")


def measure_launch(run: RunDir, deployment: Deployment, measure: Callable[[Slot], None], *,
                   observe: Observer = quiet, prefix: str = "L", plan: LaunchPlan | None = None,
                   processes: Processes | None = None,
                   opened: Callable[[Slot], None] | None = None,
                   interrupted: Callable[[Slot, float], None] | None = None,
                   watch: Callable[[LaunchDir], Watch] | None = None) -> Ended:
    """Launch `deployment` in a new folder of `run`, run `measure` while it is ready, tear down
    (module docstring). `plan`: the deployment's launch plan when the caller already built it.
    Never raises for a launch that failed (`Ended.completed`); KeyboardInterrupt propagates after
    teardown and `interrupted`."""
    launch = run.next_launch(prefix)
    write_yaml_document(launch.path / "deployment.yaml", deployment.model_dump(mode="json"))
    slot = Slot(launch, plan if plan is not None else build_plan(deployment))
    if opened is not None:
        opened(slot)
    watcher = watch(launch) if watch is not None else None

    def on_event(event: str, details: dict) -> None:
        if event == "process" and processes is not None:
            processes.process_started(launch.label, details)
        elif event == "ready" and watcher is not None:
            watcher.ready()
        observe(event, details)

    started = time.monotonic()
    try:
        with watcher if watcher is not None else nullcontext():
            result = launch_once(slot.plan, launch, on_event, while_ready=lambda _s: measure(slot))
    except KeyboardInterrupt:
        if interrupted is not None:
            interrupted(slot, round(time.monotonic() - started, 3))
        raise
    wall_s = round(time.monotonic() - started, 3)
    if processes is not None:
        processes.launch_torn_down(launch.label)
    return Ended(slot, result, wall_s)


def run_deployment_file(run_path: Path, deployment: Deployment) -> None:
    """The run's deployment at the top of its directory, written once (the report's deployment
    and roofline sections read it there; redacted)."""
    top = run_path / "deployment.yaml"
    if not top.exists():
        write_yaml_document(top, deployment.model_dump(mode="json"))
