"""Crash safety: the session process SIGKILLed at ten random points spread over launch,
protocol, sweep and report, against the simulator acting as `vllm serve`. After each kill the
next `session resume` goes on (the last one completes the session); every request record
completed before each kill is still there byte for byte, none is duplicated, and no server
process of the deployment is left running."""

from __future__ import annotations

import datetime
import json
import os
import random
import signal
import subprocess
import time

import pytest

from session_helpers import (complete_lines, engine_pids, read_state, request_records, running_step,
                      run_to_end, session_argv, wait_gone, write_deployment)

pytestmark = pytest.mark.slow  # the simulator as vLLM, but minutes of relaunches

OPTIONS = ["--launches", "2", "--depths", "0,2", "--requests", "2", "--max-tokens", "16",
           "--no-probe", "--format", "md"]
# (step id prefix to kill in, longest random delay after it starts running, s)
TARGETS = [("launch-1", 1.5), ("protocol-1", 2.0), ("launch-2", 1.5), ("protocol-2", 2.0),
           ("sweep", 3.0), ("sweep", 6.0), ("sweep", 12.0), ("report", 0.3), ("report", 0.3),
           ("report", 0.2)]


def _kill_at(run, proc, prefix: str, delay: float) -> str | None:
    """SIGKILL `proc` `delay` s after a step named `prefix*` runs; the step running at the
    kill (None if the session ended first)."""
    deadline = time.monotonic() + 300
    began = datetime.datetime.now(datetime.timezone.utc).isoformat().replace("+00:00", "Z")
    while time.monotonic() < deadline and proc.poll() is None:
        step = running_step(run)
        # started by this process (a crashed run leaves its last step "running" on disk)
        if step and step["id"].startswith(prefix) and (step["started"] or "") > began:
            time.sleep(delay)
            hit = running_step(run)
            if proc.poll() is not None:
                return None
            os.kill(proc.pid, signal.SIGKILL)
            proc.wait(10)
            return hit["id"] if hit else "between steps"
        time.sleep(0.02)
    return None


def test_sigkill_at_ten_points_then_resume(tmp_path):
    # every launch reads weights for 2.5 s, so a kill up to 1.5 s into a launch step lands in it
    # however fast the machine spawns the server
    sim_deployment = write_deployment(
        tmp_path, env={"SPARKTRIAGE_SIM": json.dumps({"startup_s": {"weight_read": 2.5}})})
    rng = random.Random(int(os.environ.get("SESSION_CRASH_SEED", "12")))
    run = tmp_path / "run"
    marker = str(tmp_path / "model-under-test")
    snapshots: list[dict[str, list[bytes]]] = []
    hits = []
    argv = session_argv("run", str(sim_deployment), "--out", str(run), *OPTIONS)
    for number, (prefix, longest) in enumerate(TARGETS):
        with open(tmp_path / f"start-{number}.log", "wb") as log:
            proc = subprocess.Popen(argv, stdout=log, stderr=log, stdin=subprocess.DEVNULL)
            hit = _kill_at(run, proc, prefix, rng.uniform(0.0, longest))
            if proc.poll() is None:
                proc.kill()
        assert hit is not None, (f"the session ended before a kill in {prefix}: "
                                 + (tmp_path / f"start-{number}.log").read_text()[-3000:])
        hits.append(hit)
        snapshots.append(request_records(run))
        argv = session_argv("resume", str(run))  # every later start is a resume
    done = run_to_end(session_argv("resume", str(run), "--json", "-"))
    assert done.returncode in (0, 1), done.stderr[-3000:]
    result = json.loads(done.stdout)

    kinds = {h.split("-")[0] for h in hits}
    assert {"launch", "protocol", "sweep", "report"} <= kinds, hits
    state = read_state(run)
    assert all(s["state"] == "done" for s in state["steps"]), [(s["id"], s["state"], s["reason"])
                                                                for s in state["steps"]]
    assert state["finished"] and result["report"]["dir"].endswith("report")
    # every record completed before each kill: still there, byte for byte, in its own file
    final = request_records(run)
    for snapshot in snapshots:
        for name, lines in snapshot.items():
            assert final[name][:len(lines)] == lines, name
    # none duplicated, anywhere
    every = [line for lines in final.values() for line in lines]
    assert len(every) == len(set(every))
    # interrupted launches kept in place, each redone by a new launch with a note
    interrupted = [l for l in state["launches"] if l["state"] == "interrupted"]
    assert interrupted, state["launches"]
    for launch in interrupted:
        assert launch["note"] and (run / "launches" / launch["label"]).is_dir()
        if launch["step"] != "sweep":
            assert launch.get("redone_as"), launch
    # the protocol launches of the plan each completed once, after their interruptions
    done_groups = [l["step"] for l in state["launches"] if l["state"] == "done"]
    assert done_groups.count("launch-1") == 1 and done_groups.count("launch-2") == 1
    assert json.loads((run / "sweep.json").read_text())["decision"]["depth"] in (0, 2)
    # every resume said what it found of the previous run's processes
    assert sum(1 for e in state["events"] if e["kind"] == "survivors") >= len(TARGETS)
    assert wait_gone(marker, 10) == []
