"""The one place a step's outcome is recorded (runner._record_outcome): done, failed with the
reason returned or the error raised (and a warning), interrupted by Ctrl-C (re-raised); what
`session.json` keeps of each."""

from __future__ import annotations

import json

import pytest

from sparktriage.errors import InputError
from sparktriage.progress import Recorder
from sparktriage.session.plan import DONE, FAILED, INTERRUPTED, RUNNING, SessionOptions
from sparktriage.session.runner import Session, _record_outcome
from sparktriage.session.state import FILE, SessionState
from sparktriage.store.rundir import RunDir


@pytest.fixture
def session(tmp_path):
    steps = [{"id": f"s{n}", "kind": "envdiff", "group": None, "inputs": {}, "state": RUNNING,
              "reason": None, "launch": None, "notes": [], "started": None, "ended": None}
             for n in range(4)]
    state = SessionState.create(tmp_path, SessionOptions(deployment=None), steps, 0.0)
    return Session(RunDir.create(tmp_path, ["test"]), state, Recorder())


def _saved(session: Session) -> dict:
    doc = json.loads((session.run.path / FILE).read_text())
    return {s["id"]: (s["state"], s["reason"]) for s in doc["steps"]}


def _interrupted() -> None:
    raise KeyboardInterrupt


def _raises() -> None:
    raise InputError("no such file", hint="give another")


def test_each_outcome_recorded_once(session: Session) -> None:
    s0, s1, s2, s3 = session.state.steps
    _record_outcome(session, s0, lambda: None)
    _record_outcome(session, s1, lambda: "nothing to compare against")
    _record_outcome(session, s2, _raises)
    with pytest.raises(KeyboardInterrupt):
        _record_outcome(session, s3, _interrupted)
    assert _saved(session) == {
        "s0": (DONE, None), "s1": (FAILED, "nothing to compare against"),
        "s2": (FAILED, "no such file (hint: give another)"),
        "s3": (INTERRUPTED, "interrupted (Ctrl-C)")}
    assert [(e.name, e.details["text"]) for e in session.observe.events] == [
        ("warning", "s1 failed: nothing to compare against"),
        ("warning", "s2 failed: no such file (hint: give another)")]
