"""Ray for real on two network-namespace nodes, launched over their own sshd.

One lab (`sparktriage testbed lab up 2`) for the module; two launches of the Ray backend on
it, each starting its own Ray cluster (head on st-node1, worker on st-node2, over SSH, pinned
ports, dashboard off, 80 MB object store, per-node temp folders) and stopping it at teardown:

- `refused`: plain vLLM CPU on the cluster: it refuses (`current platform cpu does not support
  ray.`), and the launch fails with that line;
- `placement`: the test-bed Ray shim (SPARKTRIAGE_TESTBED_RAY_SHIM, docs/testbed.md) gives the
  CPU platform the Ray device key `testbed_device`, which only the head offers (one of the two
  that tp 2 asks for): vLLM's own placement-group wait runs until the test has seen it for
  PLACEMENT_WATCH_S, then the launch is stopped and its bundle classified.

Run them under the shared lock (`flock /tmp/sparktriage-vllm.lock ...`).
"""

from __future__ import annotations

import os
import shutil
import threading
import time
import uuid
from pathlib import Path

import psutil
import pytest

from launchkit import wait_gone
from netnskit import deployment, is_root, lab_cli, netns_list, non_sshd
from sparktriage.bundle.reader import Bundle
from sparktriage.config.deployment import load_deployment
from sparktriage.errors import LaunchError
from sparktriage.launch.plan import build_plan
from sparktriage.launch.run import launch_once, raise_for
from sparktriage.launch.supervisor import Supervisor
from sparktriage.stalls.analyze import analyze
from sparktriage.store.rundir import RunDir

pytestmark = [pytest.mark.vllm, pytest.mark.netns, pytest.mark.slow]
NODES = ("st-node1", "st-node2")
SHIM_KEY = "testbed_device"
# after vLLM's first "Waiting for creating a placement group" line (10 s after it asked):
# long enough for the detector's 30 s silence in distributed_init, with margin
PLACEMENT_WATCH_S = 30
RAY_PORT = 6379


def _ray_processes(temp: str) -> list[tuple[int, str]]:
    """Ray daemons of this module's clusters anywhere on the machine (by their temp folder)."""
    out = []
    for proc in psutil.process_iter(["pid", "name", "cmdline"]):
        try:
            if any(temp in part for part in proc.info["cmdline"] or []):
                out.append((proc.info["pid"], proc.info["name"]))
        except (psutil.Error, TypeError):
            continue
    return out


@pytest.fixture(scope="module")
def raylab(tmp_path_factory):
    if not is_root():
        pytest.skip("the network-namespace lab needs root (CI runs as root)")
    state = tmp_path_factory.mktemp("raylab") / "lab"
    # Ray's sockets live under its temp folder: a short path (AF_UNIX paths stop at 107 bytes)
    temp = f"/tmp/st-ray-{uuid.uuid4().hex[:8]}"
    done = lab_cli("up", "2", "--dir", str(state))
    assert done.returncode == 0, done.stderr
    lab_yaml = Path(done.stdout.strip().splitlines()[-1])
    try:
        yield lab_yaml, temp
    finally:
        shutil.rmtree(temp, ignore_errors=True)
        down = lab_cli("down", "--dir", str(state))
        assert down.returncode == 0, down.stderr
        assert not [n for n in netns_list() if n.startswith("st-node")]


def _ray_deployment(root: Path, testbed, raylab, mark: str, env: dict | None = None) -> Path:
    lab_yaml, temp = raylab
    ray = str(Path(testbed.vllm).parent / "ray")
    return deployment(
        root / "deploy.yaml", testbed, lab_yaml, mark, cache=root / "cache",
        engine={"backend": "ray", "ray": ray, "ray_port": RAY_PORT, "ray_object_store_mb": 80,
                "ray_temp_dir": temp,
                "ray_node_args": {"st-node1": ["--resources", f'{{"{SHIM_KEY}": 1}}']}},
        parallelism={"tp": 2, "nodes": 2}, env=env or {},
        timeouts={"startup_s": 420, "teardown_grace_s": 5, "link_s": 20},
        collect={"interval_s": 1.0, "stacks_interval_s": 30.0})


def _after(result: dict, mark: str, temp: str) -> dict:
    deadline = time.monotonic() + 20
    while time.monotonic() < deadline and (_ray_processes(temp)
                                           or any(non_sshd(ns) for ns in NODES)):
        time.sleep(0.5)
    return {"ray": _ray_processes(temp), "ns": {ns: non_sshd(ns) for ns in NODES},
            "gone": wait_gone(mark, 10)}


@pytest.fixture(scope="module")
def refused(raylab, testbed, tmp_path_factory):
    """The Ray backend with plain vLLM CPU: the cluster forms, vLLM refuses it."""
    root = tmp_path_factory.mktemp("ray-refused")
    mark = f"mark-ray-{uuid.uuid4().hex[:8]}"
    plan = build_plan(load_deployment(_ray_deployment(root, testbed, raylab, mark)))
    t0 = time.monotonic()
    result = launch_once(plan, RunDir.create(root / "run", ["test"]).next_launch())
    result["wall_s"] = round(time.monotonic() - t0, 1)
    print(f"ray refused launch: wall {result['wall_s']} s, failure {result.get('failure')}, "
          f"markers {[(m['node'], m['marker'], m['after_s']) for m in result['markers']]}")
    return plan, result, _after(result, mark, raylab[1])


@pytest.fixture(scope="module")
def placement(raylab, testbed, tmp_path_factory, refused):
    """The Ray backend with the shim: vLLM waits for a placement group the cluster cannot give
    (tp 2 needs two `testbed_device`, only the head has one); stopped once seen long enough."""
    root = tmp_path_factory.mktemp("ray-placement")
    mark = f"mark-ray-{uuid.uuid4().hex[:8]}"
    path = _ray_deployment(root, testbed, raylab, mark,
                           env={"SPARKTRIAGE_TESTBED_RAY_SHIM": SHIM_KEY})
    plan = build_plan(load_deployment(path))
    launch = RunDir.create(root / "run", ["test"]).next_launch()
    supervisor = Supervisor(plan, launch.path / "bundle")
    seen: dict = {}

    def stop_when_seen() -> None:
        while not seen.get("ended"):
            first = supervisor.clock.first.get("st-node1:placement-wait")
            if first is not None:
                seen["wait_after_s"] = first["after_s"]
                time.sleep(PLACEMENT_WATCH_S)
                supervisor.abort("test: placement-group wait observed")
                return
            time.sleep(0.5)

    watcher = threading.Thread(target=stop_when_seen, daemon=True)
    t0 = time.monotonic()
    watcher.start()
    try:
        with supervisor:
            supervisor.start()
    except LaunchError as exc:
        seen["error"] = exc.one_line()
    finally:
        seen["ended"] = True
    watcher.join(5)
    seen["wall_s"] = round(time.monotonic() - t0, 1)
    print(f"ray placement launch: wall {seen['wall_s']} s, wait seen at "
          f"{seen.get('wait_after_s')} s")
    return plan, launch.path / "bundle", seen, _after(supervisor.summary, mark, raylab[1])


def _lines(bundle: Path | str, node: str, log: str) -> list[str]:
    with Bundle.open(bundle) as opened:
        return [r.line for r in opened.log_lines(node, log)]


def test_ray_cluster_over_ssh_forms_and_is_recorded(refused, raylab):
    plan, result, _ = refused
    _, temp = raylab
    assert [n.transport.destination for n in plan.nodes] == list(NODES)
    assert [s.name for s in plan.stages] == ["ray-head", "ray-workers", "serve"]
    markers = {(m["node"], m["marker"]) for m in result["markers"]}
    assert {("st-node1", "ray-started"), ("st-node2", "ray-started")} <= markers
    head_argv = plan.stages[0].processes[0][1].argv
    assert head_argv[1:3] == ("start", "--head")
    assert "--include-dashboard" in head_argv and "--object-store-memory" in head_argv
    assert head_argv[head_argv.index("--node-manager-port") + 1] == str(RAY_PORT + 1)
    worker_argv = plan.stages[1].processes[0][1].argv
    assert worker_argv[2:4] == ("--address", f"10.250.0.1:{RAY_PORT}")
    assert worker_argv[worker_argv.index("--temp-dir") + 1] == f"{temp}/st-node2"
    bundle = result["bundle"]
    assert any("Ray runtime started" in line for line in _lines(bundle, "st-node1", "ray-head"))
    assert any("Ray runtime started" in line for line in _lines(bundle, "st-node2", "ray-worker"))
    status = [line for line in _lines(bundle, "st-node1", "ray-watch")
              if line.startswith("ray-watch ray-status | ")]
    # the head's `ray status` saw both raylets join, with the 80 MB object stores
    joined = [i for i, line in enumerate(status) if line.endswith("Active:")]
    assert joined, status[:20]
    node_lines = [line for line in status if line.startswith("ray-watch ray-status |  1 node_")]
    assert len(set(node_lines)) == 2, status
    assert any("object_store_memory" in line and "152.59MiB" in line for line in status)
    for node in NODES:
        raylet = [line for line in _lines(bundle, node, "ray-watch")
                  if line.startswith("ray-watch raylet.out | ")]
        assert raylet, node
        with Bundle.open(bundle) as opened:
            env = opened.environment(node)
        assert env["versions"]["ray"] == "2.58.1", env.get("versions")
    assert any(line.startswith("ray-watch gcs_server.out | ")
               for line in _lines(bundle, "st-node1", "ray-watch"))
    host_ip = {n: _lines(bundle, n, "ray-watch") for n in NODES}
    assert any("10.250.0.2" in line for line in host_ip["st-node1"])  # the worker seen by the head


def test_vllm_cpu_refusal_is_a_launch_failure_with_its_line(refused):
    _, result, _ = refused
    assert result["outcome"] == "failed", result
    assert result["failure"].startswith("st-node1: server exited with status 1"), result
    assert result["failure"].endswith(
        "; st-node1: vLLM refused the Ray backend: current platform cpu does not support ray.")
    with pytest.raises(LaunchError) as raised:
        raise_for([result])
    assert raised.value.exit_code == 3
    assert "current platform cpu does not support ray." in raised.value.one_line()
    with Bundle.open(result["bundle"]) as bundle:
        (event,) = [e for e in bundle.events() if e["event"] == "ray-refused"]
    assert event["node"] == "st-node1"
    assert event["line"] == "current platform cpu does not support ray."
    assert any("ValueError: current platform cpu does not support ray." in line
               for line in _lines(result["bundle"], "st-node1", "server"))


def test_placement_wait_classified_from_the_heads_evidence(placement):
    plan, bundle, seen, _ = placement
    assert seen["error"] == "test: placement-group wait observed", seen
    server = _lines(bundle, "st-node1", "server")
    assert any(f"test-bed Ray shim on: the CPU platform's Ray device is {SHIM_KEY}" in line
               for line in server)
    waits = [line for line in server if "Waiting for creating a placement group of specs" in line]
    assert waits and f"{{'{SHIM_KEY}': 1.0}}, {{'{SHIM_KEY}': 1.0}}" in waits[0]
    pending = [line for line in _lines(bundle, "st-node1", "ray-watch")
               if "pending placement groups" in line]
    assert pending and f"{{'{SHIM_KEY}': 1.0}} * 2 (PACK)" in pending[0], pending
    document, _ = analyze(bundle)
    head = [f for f in document["findings"] if f["node"] == "st-node1"]
    assert head, document["findings"]
    (finding,) = [f for f in head if f["verdict"]["id"] == "ray-placement-wait"]
    assert finding["kind"] == "stall" and finding["phase"] == "distributed_init", finding
    evidence = {e["condition"]: e for e in finding["verdict"]["evidence"]}
    assert "Waiting for creating a placement group" in evidence["pg_waiting"]["observed"]
    assert "pending placement groups" in evidence["pg_pending"]["observed"]
    assert evidence["pg_waiting"]["node"] == evidence["pg_pending"]["node"] == "st-node1"
    # the worker node logs only its `ray start`: left waiting too, it gets the same cause, decided
    # from the head's lines
    for other in [f for f in document["findings"] if f["node"] == "st-node2"]:
        # it names no phase itself: it is where the head is, so causes of phases the cluster was
        # not in (memory pressure read off a host that other tests share) do not compete there
        assert other["phase"] in ("resolve", "distributed_init"), other
        assert other["verdict"]["id"] == "ray-placement-wait", other["verdict"]
        assert {e["condition"]: e["node"] for e in other["verdict"]["evidence"]
                if e["condition"] in ("pg_waiting", "pg_pending")} == {
            "pg_waiting": "st-node1", "pg_pending": "st-node1"}


def test_teardown_leaves_no_ray_process(refused, placement):
    for after in (refused[2], placement[3]):
        assert after["ray"] == [], after
        assert after["ns"] == {"st-node1": [], "st-node2": []}
        assert after["gone"] == []
    for bundle in (refused[1]["bundle"], placement[1]):
        with Bundle.open(bundle) as opened:
            teardowns = [e for e in opened.events() if e["event"] == "teardown"]
        assert {e["node"] for e in teardowns} >= set(NODES)
        assert all(e["survivors"] == [] for e in teardowns), teardowns
