"""Local supervision with the simulator as `vllm serve`: readiness, failures, deadlines, teardown, Ctrl-C.

Every test checks with psutil, independently of what sparktriage reports, that no process of
the launch survives.
"""

from __future__ import annotations

import glob
import json
import os
import signal
import subprocess
import sys
import tempfile
import time
from dataclasses import replace

import psutil

import pytest

from launchkit import sim_deployment, processes_with, wait_gone
from sparktriage.config.deployment import load_deployment
from sparktriage.bundle.reader import Bundle
from sparktriage.launch.plan import build_plan
from sparktriage.launch.readiness import api_ready
from sparktriage.launch.run import launch_once, launch_replicates
from sparktriage.documents.launch import LaunchOutcome
from sparktriage.documents.logs import LogsDocument
from sparktriage.store.rundir import RunDir
from sparktriage.store.typed import load, parse


def _launch(tmp_path, mark, hold_s=0.0, **kwargs):
    plan = build_plan(load_deployment(sim_deployment(tmp_path / "d.yaml", mark, **kwargs)))
    run = RunDir.create(tmp_path / "run", ["test"])
    events = []
    result = launch_once(plan, run.next_launch(), lambda e, d: events.append((e, d)), hold_s)
    return plan, result, events


@pytest.mark.slow
def test_ready_then_teardown_leaves_nothing(tmp_path, mark):
    plan, result, events = _launch(tmp_path, mark, hold_s=2.5,
                                   env={"NCCL_SOCKET_IFNAME": "lo", "HF_TOKEN": "hf_secret123"})
    assert result["outcome"] == "completed" and result["error"] is None
    assert 0 < result["ready_s"] < 30
    assert ("ready", {"after_s": result["ready_s"], "endpoint": plan.endpoint}) in events
    assert wait_gone(mark, 2) == []
    assert not api_ready(plan.endpoint, 1.0)
    with Bundle.open(result["bundle"]) as bundle:
        assert bundle.info.origin == "launch" and bundle.info.outcome == "completed"
        lines = [r.line for r in bundle.log_lines("local", "server")]
        assert any("Application startup complete" in line for line in lines)
        assert all(r.t >= bundle.info.started - 1 for r in bundle.log_lines("local"))
        markers = {m["marker"] for m in bundle.info.raw["markers"]}
        assert {"version", "load-start", "weights-loaded", "ready"} <= markers
        procs = list(bundle.proc_samples("local"))
        roles = {p.role for p in procs}
        assert "api-server" in roles  # `... serve MODEL` is the API server
        server = [p for p in procs if p.role == "api-server"][-1]
        assert server.children and server.children[0].name.startswith("python")
        assert any(p.ppid == server.pid for p in procs)  # the child is sampled too
        stacks = [s for s in bundle.stacks("local") if s.role == "api-server"]
        assert stacks and stacks[-1].error is None
        frames = [f.function for t in stacks[-1].threads for f in t.frames]
        assert "serve_forever" in " ".join(frames) or "main" in frames
        (teardown,) = [e for e in bundle.events() if e["event"] == "teardown"]
        assert teardown["survivors"] == [] and teardown["killed"] >= 2
        manifest = {m.collector: m for m in bundle.manifest()}
        assert set(manifest) == {"host", "disk", "net", "procs", "gpu", "stacks", "dmesg",
                                 "environment"}
        assert manifest["host"].records >= 3 and manifest["host"].skipped is None
        assert manifest["gpu"].skipped and "NVML" in manifest["gpu"].skipped
        assert bundle.clock("local").method == "agent-echo"
        env = bundle.environment("local")
        assert env["env"]["NCCL_SOCKET_IFNAME"] == "lo" and env["env"]["PYTHONUNBUFFERED"] == "1"
        assert "TEST_MARK" not in env["env"]  # only the families that matter are kept
        assert env["env"]["HF_TOKEN"].startswith("***") and "hf_secret123" not in str(env)
    run_launch = tmp_path / "run" / "launches" / "L001"
    assert "Application startup complete" in (run_launch / "server.log").read_text()
    # the log parser's startup timeline of the launch (logs.json, and a summary in the result)
    logs = json.loads((run_launch / "logs.json").read_text())
    load(LogsDocument, run_launch / "logs.json")  # typed, with schema_version
    parse(LaunchOutcome, result, "launch result")
    assert logs["startup"]["complete"] and logs["startup"]["current_phase"] == "ready"
    assert result["startup"]["complete"] and "weight_read" in [
        p["name"] for p in result["startup"]["phases"]]
    assert (run_launch / "server.log.lines.jsonl").is_file()


def test_exit_before_ready_is_a_failure(tmp_path, mark):
    _, result, _ = _launch(tmp_path, mark, scenario={"startup_s": {"weight_read": 30},
                                                     "faults": {"exit_after_s": 1, "exit_code": 17}})
    assert result["outcome"] == "failed"
    assert "server exited with status 17" in result["failure"]
    parse(LaunchOutcome, result, "launch result")  # a failed launch keeps the typed shape
    assert wait_gone(mark, 2) == []
    with Bundle.open(result["bundle"]) as bundle:
        assert any("simulated crash" in r.line for r in bundle.log_lines("local"))
        assert any(e["event"] == "process-exited" and e["rc"] == 17 for e in bundle.events())


@pytest.mark.slow
def test_startup_deadline_takes_stacks_and_tears_down(tmp_path, mark):
    _, result, _ = _launch(tmp_path, mark, scenario={"faults": {"never_ready": True}},
                           timeouts={"startup_s": 4},
                           collect={"interval_s": 0.5, "stacks_interval_s": None})
    assert result["outcome"] == "timeout" and "deadline" in result["error"]
    assert wait_gone(mark, 2) == []
    with Bundle.open(result["bundle"]) as bundle:
        stacks = list(bundle.stacks("local"))
        assert stacks  # on demand at the deadline (no interval) and at stop
        assert any(f.function == "main" for s in stacks for t in s.threads for f in t.frames)


@pytest.mark.slow
def test_sigterm_ignored_and_child_outside_group_still_killed(tmp_path, mark):
    _, result, _ = _launch(tmp_path, mark, hold_s=1.5,
                           scenario={"child": "setsid", "faults": {"ignore_sigterm": True}},
                           timeouts={"teardown_grace_s": 1})
    assert result["outcome"] == "completed"
    assert result["survivors"] == {"local": []}
    assert wait_gone(mark, 2) == []


@pytest.mark.slow
def test_relaunch_gives_one_bundle_per_replicate(tmp_path, mark):
    plan = build_plan(load_deployment(sim_deployment(tmp_path / "d.yaml", mark)))
    run = RunDir.create(tmp_path / "run", ["test"])
    results = launch_replicates(plan, run, 2, hold_s=0.5)
    assert [r["label"] for r in results] == ["L001", "L002"]
    assert all(r["outcome"] == "completed" for r in results)
    pids = []
    for result in results:
        with Bundle.open(result["bundle"]) as bundle:
            pids.append([e["pid"] for e in bundle.events() if e["event"] == "process-started"])
    assert pids[0] != pids[1]
    assert wait_gone(mark, 2) == []


@pytest.mark.slow
def test_lost_local_agent_is_reaped(tmp_path, mark):
    plan = build_plan(load_deployment(sim_deployment(tmp_path / "d.yaml", mark)))
    run = RunDir.create(tmp_path / "run", ["test"])

    killed = []

    def kill_agent(supervisor):
        agent = supervisor.links["local"].hello["pid"]
        assert glob.glob(f"{tempfile.gettempdir()}/sparktriage-agent-{agent}-*")
        os.kill(agent, signal.SIGKILL)
        killed.append(agent)
        supervisor.watch(20)

    result = launch_once(plan, run.next_launch(), None, 0.0, while_ready=kill_agent)
    assert result["outcome"] == "failed-after-ready"
    assert "link lost" in result["failure"]
    assert wait_gone(mark, 5) == []
    with Bundle.open(result["bundle"]) as bundle:
        events = [e["event"] for e in bundle.events()]
        assert "link-lost" in events
        reap = [e for e in bundle.events() if e["event"] == "teardown"]
        assert reap and reap[-1]["reason"] == "reap" and reap[-1]["survivors"] == []
    # the killed agent could not delete its unpacked copy; the reaping agent did
    assert not glob.glob(f"{tempfile.gettempdir()}/sparktriage-agent-{killed[0]}-*")


def _default_interrupts() -> None:
    # a shell's background job inherits SIGINT ignored (and Python then installs no handler):
    # the CLI is tested as a terminal starts it
    signal.signal(signal.SIGINT, signal.SIG_DFL)
    signal.signal(signal.SIGTERM, signal.SIG_DFL)


@pytest.mark.parametrize("sig", [signal.SIGINT, signal.SIGTERM], ids=["ctrl-c", "sigterm"])
@pytest.mark.slow
def test_ctrl_c_tears_down_and_exits_130(tmp_path, mark, sig):
    deployment = sim_deployment(tmp_path / "d.yaml", mark)
    plan = build_plan(load_deployment(deployment))
    cli = subprocess.Popen([sys.executable, "-m", "sparktriage", "launch", str(deployment),
                            "--hold", "60", "--out", str(tmp_path / "run")],
                           stdout=subprocess.PIPE, stderr=subprocess.PIPE,
                           preexec_fn=_default_interrupts)
    deadline = time.monotonic() + 60
    while not api_ready(plan.endpoint, 0.5):
        assert cli.poll() is None and time.monotonic() < deadline
        time.sleep(0.3)
    assert processes_with(mark)
    cli.send_signal(sig)
    assert cli.wait(timeout=150) == 130  # teardown is slow on a loaded 2-core machine
    assert wait_gone(mark, 3) == []
    with Bundle.open(tmp_path / "run" / "launches" / "L001" / "bundle") as bundle:
        assert bundle.info.outcome == "interrupted"
    assert not psutil.pid_exists(cli.pid) or psutil.Process(cli.pid).status() == "zombie"


@pytest.mark.slow
def test_a_ctrl_c_during_teardown_is_held_until_the_teardown_is_done(tmp_path, mark):
    """The plan's last teardown command sends this process SIGINT: the teardown is not cut
    short (the launch ends completed, nothing left), and the Ctrl-C is not lost: it interrupts
    the caller once teardown is over (before, it was ignored and a session went on)."""
    plan = build_plan(load_deployment(sim_deployment(tmp_path / "d.yaml", mark)))
    plan = replace(plan, teardown=(("local", ("kill", "-INT", str(os.getpid()))),))
    launch = RunDir.create(tmp_path / "run", ["test"]).next_launch()
    with pytest.raises(KeyboardInterrupt):
        launch_once(plan, launch, None, 0.5)
    assert wait_gone(mark, 3) == []
    with Bundle.open(launch.path / "bundle") as bundle:
        assert bundle.info.outcome == "completed"
    assert signal.getsignal(signal.SIGINT) is signal.default_int_handler


def test_missing_executable_fails_without_running_anything(tmp_path, mark):
    canary = tmp_path / "canary"
    _, result, _ = _launch(tmp_path, mark, engine={"vllm": [f"/nonexistent/vllm; touch {canary}"]})
    assert result["outcome"] == "failed"
    assert "server could not start: FileNotFoundError" in result["failure"]
    assert not canary.exists() and wait_gone(mark, 2) == []


def test_unreachable_node_is_reported_and_exits_3(tmp_path, mark):
    import socket
    # a port bound but never listening: connections to it are refused, and no other process
    # on the machine can take it while the test runs
    with socket.socket() as closed:
        closed.bind(("127.0.0.1", 0))
        nodes = [{"name": "far", "host": "127.0.0.1", "ssh": "root@127.0.0.1",
                  "port": closed.getsockname()[1]}]
        deployment = sim_deployment(tmp_path / "d.yaml", mark, nodes=nodes)
        done = subprocess.run([sys.executable, "-m", "sparktriage", "launch", str(deployment),
                               "--out", str(tmp_path / "run")], capture_output=True, text=True,
                              timeout=120)
    assert done.returncode == 3
    last = done.stderr.strip().splitlines()[-1]
    assert last.startswith("error: launch L001 unreachable: far: link lost (agent exited with "
                           "status 255") and "Connection refused" in last
    with Bundle.open(tmp_path / "run" / "launches" / "L001" / "bundle") as bundle:
        assert bundle.info.outcome == "unreachable"
        assert any(e["event"] == "link-lost" for e in bundle.events())


def test_readiness_by_log_marker(tmp_path, mark):
    plan, result, events = _launch(tmp_path, mark, ready="log")
    assert plan.ready == "log" and result["outcome"] == "completed"
    assert any(e == "marker" and d["marker"] == "ready" for e, d in events)
    assert wait_gone(mark, 2) == []


def test_launch_command_result_is_a_typed_document(tmp_path, mark):
    from sparktriage.documents.launch import LaunchResult

    deployment = sim_deployment(tmp_path / "d.yaml", mark)
    done = subprocess.run([sys.executable, "-m", "sparktriage", "launch", str(deployment),
                           "--out", str(tmp_path / "run"), "--json", "-"],
                          capture_output=True, text=True, timeout=300)
    assert done.returncode == 0, done.stderr[-2000:]
    result = parse(LaunchResult, json.loads(done.stdout), "launch --json")
    (launch,) = result.launches
    assert launch.label == "L001" and launch.outcome == "completed" and launch.error is None
    assert launch.startup is not None and launch.startup.complete is True
    assert wait_gone(mark, 2) == []
