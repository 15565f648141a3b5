"""The one launch loop (measure.loop) that the session's launch groups and the sweep's launches
both run, on the simulator as vLLM: a launch measured while ready, its processes booked as they
start and closed at teardown; Ctrl-C during the measurement: torn down, recorded with the
seconds it ran, propagated, nothing left running and nothing booked as torn down."""

from __future__ import annotations

import json
import urllib.request

import pytest

from session_helpers import engine_pids
from sparktriage.config.deployment import load_deployment
from sparktriage.measure.loop import measure_launch
from sparktriage.session.state import SessionState
from sparktriage.session.plan import SessionOptions
from sparktriage.store.rundir import RunDir

SIM = pytest.mark.slow  # the simulator as vLLM: a launch, about 7 s


class Book:
    """A process book that remembers what it was told."""

    def __init__(self) -> None:
        self.started: list[tuple[str, int | None]] = []
        self.torn_down: list[str] = []

    def process_started(self, label: str, details: dict) -> None:
        self.started.append((label, details.get("pid")))

    def launch_torn_down(self, label: str) -> None:
        self.torn_down.append(label)


def _models(endpoint: str) -> list[str]:
    with urllib.request.urlopen(endpoint.rstrip("/") + "/v1/models", timeout=10) as reply:
        return [m["id"] for m in json.loads(reply.read())["data"]]


@SIM
def test_a_launch_is_measured_while_ready_booked_and_torn_down(tmp_path, sim_deployment):
    marker = str(tmp_path / "model-under-test")
    run = RunDir.create(tmp_path / "run", ["test"])
    book, seen = Book(), {}

    def opened(slot) -> None:
        seen["opened"] = (slot.label, engine_pids(marker))

    def measure(slot) -> None:
        seen["models"] = _models(slot.endpoint)
        seen["running"] = engine_pids(marker)

    ended = measure_launch(run, load_deployment(sim_deployment), measure, prefix="S",
                           processes=book, opened=opened)
    assert ended.completed, ended.result
    assert ended.label == "S001"
    assert seen["opened"] == ("S001", [])  # recorded before anything started
    assert seen["models"] == ["sim"] and seen["running"]
    assert book.started and {label for label, _ in book.started} == {"S001"}
    assert all(pid for _, pid in book.started)
    assert book.torn_down == ["S001"]
    assert engine_pids(marker) == []
    folder = run.path / "launches" / "S001"
    assert (folder / "deployment.yaml").is_file()
    assert ended.slot.log[0].startswith(str(folder / "bundle"))
    assert (folder / "server.log").is_file()
    assert 0 < ended.wall_s < 120


@SIM
def test_ctrl_c_while_measuring_tears_down_records_and_propagates(tmp_path, sim_deployment):
    marker = str(tmp_path / "model-under-test")
    run = RunDir.create(tmp_path / "run", ["test"])
    book, calls, seen = Book(), [], {}

    def measure(slot) -> None:
        seen["running"] = engine_pids(marker)
        raise KeyboardInterrupt

    with pytest.raises(KeyboardInterrupt):
        measure_launch(run, load_deployment(sim_deployment), measure, processes=book,
                       interrupted=lambda slot, wall_s: calls.append((slot.label, wall_s)))
    assert seen["running"]
    assert [label for label, _ in calls] == ["L001"] and calls[0][1] > 0
    assert {label for label, _ in book.started} == {"L001"}
    assert book.torn_down == []  # a resume checks them: the teardown was cut short by Ctrl-C
    assert engine_pids(marker) == []


def test_the_session_state_is_a_process_book(tmp_path):
    state = SessionState.create(tmp_path, SessionOptions(deployment=None), [], 0.0)
    state.process_started("L001", {"node": "local", "name": "server", "pid": 11, "pgid": 11,
                                   "starttime": 5, "ignored": "x"})
    state.process_started("S001", {"node": "local", "name": "server", "pid": 12, "pgid": 12})
    state.launch_torn_down("L001")
    saved = json.loads((tmp_path / "session.json").read_text())["processes"]
    assert [(p["launch"], p["pid"], p["stopped"]) for p in saved] == [
        ("L001", 11, "teardown"), ("S001", 12, None)]
    assert "ignored" not in saved[0]
