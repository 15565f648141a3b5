"""A session in progress (`Session`: its run folder, state, observer, deployment and sweep plan)
and the two lookups its steps share: the launch a launch group made, and the launch folder of an
endpoint the tool did not start."""

from __future__ import annotations

from dataclasses import dataclass
from typing import Callable

from sparktriage.config.deployment import Deployment
from sparktriage.progress import Observer, quiet
from sparktriage.session.plan import DONE, SessionOptions
from sparktriage.session.state import SessionState
from sparktriage.store.rundir import LaunchDir, RunDir
from sparktriage.sweep.plan import SweepPlan


@dataclass
class Session:
    run: RunDir
    state: SessionState
    observe: Observer = quiet
    api_key: str | None = None  # never written: given again (or OPENAI_API_KEY) on resume
    deployment: Deployment | None = None  # loaded once (open_session); None: an attached endpoint
    plan: SweepPlan | None = None  # the sweep's plan: its depths, method and deployment builder
    before_report: Callable[[], None] | None = None  # a preset's documents the report must read

    @property
    def options(self) -> SessionOptions:
        return self.state.options


def attached_launch(session: Session, fresh: bool) -> LaunchDir:
    """The launch folder of an endpoint the tool did not start; a new one when a measurement
    is redone after an interruption (the interrupted one's records stay as they are)."""
    state = session.state
    label = state.doc.get("attached_launch")
    if label is None or fresh:
        label = session.run.next_launch().label
        with state._lock:
            state.doc["attached_launch"] = label
            state.save()
    return session.run.launch(label)


def group_label(state: SessionState, group: str) -> str | None:
    launch_step = next((s for s in state.steps if s["id"] == group), None)
    return launch_step["launch"] if launch_step and launch_step["state"] == DONE else None
