"""The declared plan, its estimate, status, and bad input: no server needed."""

from __future__ import annotations

import json
import subprocess
import sys

import pytest

from session_helpers import write_deployment

from sparktriage.session import nodestate
from sparktriage.session.plan import SessionOptions, build_steps, LabAssumptions, estimate_s
from sparktriage.session.state import SessionState


def cli(*args: str) -> subprocess.CompletedProcess:
    return subprocess.run([sys.executable, "-m", "sparktriage", *args], capture_output=True,
                          text=True, timeout=120)


def test_default_plan_steps_and_estimate():
    steps = build_steps(SessionOptions(deployment="/x.yaml", sign="/k"))
    assert [s["id"] for s in steps] == [
        "launch-1", "protocol-1", "probe-1", "stalls-1", "launch-2", "protocol-2", "stalls-2",
        "launch-3", "protocol-3", "stalls-3", "sweep", "envdiff", "report", "signature"]
    assert steps[10]["inputs"]["depths"] == [0, 1, 2, 3, 4]
    assert all(s["state"] == "pending" for s in steps)
    # 7 launches at 165+20+10 s, 3 protocols of 2x15x256 tokens at 28 tok/s, 4 sweep protocols
    # of 15x256 tokens, the probe 60 s, six small steps (3 stalls, envdiff, report, signature) 5 s
    expected = 7 * 195 + 3 * 7680 / 28 + 4 * 3840 / 28 + 60 + 6 * 5
    assert abs(estimate_s(steps, LabAssumptions()) - expected) < 1


def test_dry_run_prints_the_plan_and_writes_nothing(tmp_path):
    deploy = write_deployment(tmp_path)
    result = cli("session", "run", str(deploy), "--out", str(tmp_path / "run"), "--dry-run",
                 "--json", str(tmp_path / "plan.json"))
    assert result.returncode == 0, result.stderr
    assert not (tmp_path / "run").exists()
    plan = json.loads((tmp_path / "plan.json").read_text())
    assert plan["kind"] == "session-plan" and len(plan["steps"]) == 13
    assert "estimated lab time: 0:" in result.stdout and "launch-3" in result.stdout
    # worst case: 7 launches at the deployment's 60 s deadline + 3 s grace on top of the estimate
    assert plan["worst_case_s"] == round(plan["estimate_s"] + 7 * 63, 1)


@pytest.mark.slow
def test_bad_input_one_line_exit_2(tmp_path):
    result = cli("session", "resume", str(tmp_path))
    assert result.returncode == 2 and result.stderr.strip().startswith("error:")
    assert "no session.json" in result.stderr and "Traceback" not in result.stderr
    result = cli("session", "status", str(tmp_path))
    assert result.returncode == 2
    deploy = write_deployment(tmp_path)
    result = cli("session", "run", str(deploy), "--out", str(tmp_path / "r"), "--depths", "0,x")
    assert result.returncode == 2 and "--depths" in result.stderr


def test_run_on_existing_dir_with_other_options_is_refused(tmp_path):
    deploy = write_deployment(tmp_path)
    options = SessionOptions(deployment=str(deploy), launches=2, extra={"base_depth": 0})
    (tmp_path / "run").mkdir()
    SessionState.create(tmp_path / "run", options, build_steps(options), 0.0)
    (tmp_path / "run" / "run.json").write_text(json.dumps(
        {"schema_version": 1, "kind": "sparktriage-run", "command": []}))
    result = cli("session", "run", str(deploy), "--out", str(tmp_path / "run"), "--launches", "3")
    assert result.returncode == 2 and "other options (launches);" in result.stderr


def test_recover_marks_running_launch_interrupted(tmp_path):
    options = SessionOptions(deployment="/x.yaml", launches=1, depths=(0,))
    (tmp_path / "run").mkdir()
    state = SessionState.create(tmp_path / "run", options, build_steps(options), 0.0)
    state.add_launch({"label": "L001", "step": "launch-1", "state": "running", "depth": 0})
    state.set_state(state.step("launch-1"), "running", launch="L001")
    said = SessionState.load(tmp_path / "run").recover()
    again = SessionState.load(tmp_path / "run")
    assert said == ["launch L001 was interrupted; it will be redone as a new launch"]
    assert again.launch_record("L001")["state"] == "interrupted"
    assert again.step("launch-1")["state"] == "pending"
    assert "redone" in again.step("launch-1")["notes"][-1]["text"]


def test_node_state_flags():
    first = {"n1": {"mem_available_bytes": 20 << 30, "engines": [], "gpu": [{"pstate": "P0"}],
                    "governor": "performance"}}
    same = {"n1": {"mem_available_bytes": (20 << 30) - (512 << 20), "engines": [],
                   "gpu": [{"pstate": "P0"}], "governor": "performance"}}
    assert nodestate.compare(first, same) == []
    worse = {"n1": {"mem_available_bytes": 17 << 30, "engines": [{"pid": 42, "cmd": "x"}],
                    "gpu": [{"pstate": "P8"}], "governor": "powersave"}}
    flags = nodestate.compare(first, worse)
    assert flags == ["n1: 1 engine process(es) still running before the launch (pid 42)",
                     "n1: free memory 17.0 GiB, 3.0 GiB below the first launch's 20.0 GiB",
                     "n1: GPU power state P8 (first launch: P0)",
                     "n1: CPU governor powersave (first launch: performance)"]
