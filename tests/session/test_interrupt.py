"""Ctrl-C (SIGINT to the session process, as a terminal sends it) in each step: the step ends
after teardown on every node, the command exits 130, no server process of the deployment is
left, and the session stays resumable: the next `resume` goes on, the last one completes it."""

from __future__ import annotations

import datetime
import json
import signal
import subprocess

import pytest

from session_helpers import engine_pids, read_state, running_step, run_to_end, session_argv, wait_for

pytestmark = pytest.mark.slow  # the simulator as vLLM, but minutes of relaunches

OPTIONS = ["--launches", "1", "--depths", "0,2", "--requests", "2", "--max-tokens", "16",
           "--no-probe", "--format", "md"]
# step to interrupt, and how long it runs first (s)
POINTS = [("launch-1", 1.0), ("protocol-1", 0.5), ("sweep", 2.0), ("sweep", 9.0),
          ("report", 0.0)]  # stalls and envdiff take milliseconds: too short to aim at


def test_ctrl_c_in_each_step_leaves_nothing_and_resumes(tmp_path, sim_deployment):
    run = tmp_path / "run"
    marker = str(tmp_path / "model-under-test")
    argv = session_argv("run", str(sim_deployment), "--out", str(run), *OPTIONS)
    interrupted = []
    for name, after in POINTS:
        began = datetime.datetime.now(datetime.timezone.utc).isoformat().replace("+00:00", "Z")
        proc = subprocess.Popen(argv, stdout=subprocess.PIPE, stderr=subprocess.PIPE,
                                stdin=subprocess.DEVNULL)
        step = wait_for(lambda: (s := running_step(run)) and s["id"] == name
                        and (s["started"] or "") > began and s, 120, f"step {name} running")
        if after:
            import time
            time.sleep(after)
        proc.send_signal(signal.SIGINT)
        out, err = proc.communicate(timeout=120)
        state = read_state(run)
        current = next(s for s in state["steps"] if s["id"] == name)
        if proc.returncode == 130:
            assert "interrupted" in err.decode()
            assert current["state"] in ("interrupted", "pending"), current
            interrupted.append(name)
        else:  # the step was over before the signal arrived: the next one got it
            assert proc.returncode == 130, (name, proc.returncode, err.decode()[-2000:])
        assert engine_pids(marker) == [], name  # teardown happened before the exit
        status = run_to_end(session_argv("status", str(run)))
        assert status.returncode == 0 and "steps done" in status.stdout
        argv = session_argv("resume", str(run))
    assert {"launch-1", "protocol-1", "sweep", "report"} <= set(interrupted), interrupted
    done = run_to_end(session_argv("resume", str(run), "--json", "-"))
    assert done.returncode in (0, 1), done.stderr[-3000:]
    state = read_state(run)
    assert all(s["state"] == "done" for s in state["steps"]), [(s["id"], s["state"]) for s in state["steps"]]
    launches = {l["label"]: l for l in state["launches"]}
    assert any(l["state"] == "interrupted" and "Ctrl-C" in (l["note"] or "") for l in launches.values())
    assert json.loads(done.stdout)["report"]["dir"].endswith("report")
    assert engine_pids(marker) == []
