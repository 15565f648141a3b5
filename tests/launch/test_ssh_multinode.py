"""Three "nodes", each a real OpenSSH server on a loopback port, launched over SSH.

The node agents run under Debian's /usr/bin/python3 (no sparktriage, no psutil there: the
agent is shipped over the link). The servers are the simulator, `python -m sparktriage.sim.vllm` (the real vLLM over SSH is in
test_vllm_launch.py). Checks: readiness, a per-node plan, ProxyJump from the ssh_config, the
cross-node diff catching a planted difference, a node's death and a cut link each tearing
everything down on every node (verified with psutil), and hostile config values arriving
literally in the remote process's argv and environment (read from /proc) without running.
"""

from __future__ import annotations

import os
import subprocess
import time
from pathlib import Path

import pytest

from launchkit import PYSPY, sim_deployment, sim_env, wait_gone
from sshlab import SshLab
from sparktriage.config.deployment import load_deployment
from sparktriage.errors import ConfigError
from sparktriage.bundle.reader import Bundle
from sparktriage.launch.plan import build_plan
from sparktriage.launch.run import launch_once
from sparktriage.store.rundir import RunDir

PLANTED = {1: {"NCCL_SOCKET_IFNAME": "enp1s0f0np0"}, 2: {"NCCL_SOCKET_IFNAME": "enp1s0f0np0"},
           3: {"NCCL_SOCKET_IFNAME": "enP2p1s0f1np1"}}


@pytest.fixture(scope="module")
def lab(tmp_path_factory):
    lab = SshLab(tmp_path_factory.mktemp("sshlab"), 3, set_env=PLANTED, jump={3: 1},
                 log_level={1: "DEBUG1"})
    lab.start()
    yield lab
    lab.close()


def _nodes(lab: SshLab) -> list[dict]:
    return [{"name": n.name, "host": "127.0.0.1", "ssh": n.name, "python": "/usr/bin/python3",
             "pyspy": str(PYSPY), "gpu": "none"} for n in lab.nodes]


def _launch(tmp_path, mark, lab, hold_s=0.0, while_ready=None, **kwargs):
    deployment = sim_deployment(tmp_path / "d.yaml", mark, nodes=_nodes(lab),
                                 ssh_config=str(lab.ssh_config),
                                 parallelism={"tp": 3}, **kwargs)
    plan = build_plan(load_deployment(deployment))
    run = RunDir.create(tmp_path / "run", ["test"])
    return plan, launch_once(plan, run.next_launch(), None, hold_s, while_ready)


@pytest.mark.slow
def test_three_nodes_ready_per_node_plan_and_env_diff(tmp_path, mark, lab):
    seen = {}

    def look(supervisor):
        for name, link in supervisor.links.items():
            pid = link.procs["server"]["pid"]
            seen[name] = Path(f"/proc/{pid}/cmdline").read_bytes().split(b"\0")[:-1]
        supervisor.watch(1.0)

    plan, result = _launch(tmp_path, mark, lab, while_ready=look)
    assert result["outcome"] == "completed", result
    assert [n.transport.destination for n in plan.nodes] == ["n1", "n2", "n3"]
    head = [a.decode() for a in seen["n1"]]
    assert head[head.index("--node-rank") + 1] == "0" and "--headless" not in head
    assert head[head.index("--nnodes") + 1] == "3"
    for rank, node in ((1, "n2"), (2, "n3")):
        argv = [a.decode() for a in seen[node]]
        assert argv[argv.index("--node-rank") + 1] == str(rank) and "--headless" in argv
    assert wait_gone(mark, 3) == []
    with Bundle.open(result["bundle"]) as bundle:
        assert bundle.nodes() == ["n1", "n2", "n3"]
        for node in bundle.nodes():
            assert any("Loading weights took" in r.line for r in bundle.log_lines(node))
            assert list(bundle.host_samples(node)) and list(bundle.proc_samples(node))
            assert bundle.clock(node) is not None and abs(bundle.clock(node).offset_s) < 1.0
            teardown = [e for e in bundle.events() if e["event"] == "teardown"
                        and e["node"] == node]
            assert teardown and teardown[0]["survivors"] == []
        agents = [e for e in bundle.events() if e["event"] == "agent-started"]
        system = subprocess.run(["/usr/bin/python3", "-c", "import platform;print(platform.python_version())"],
                                capture_output=True, text=True).stdout.strip()
        assert {e["python"] for e in agents} == {system}  # the system python3 ran the agents
        diff = bundle.environment_diff()
        flagged = {d["key"]: d for d in diff["differences"] if not d["expected"]}
        assert flagged["env.NCCL_SOCKET_IFNAME"]["values"] == {
            "n1": "enp1s0f0np0", "n2": "enp1s0f0np0", "n3": "enP2p1s0f1np1"}
        assert flagged["env.NCCL_SOCKET_IFNAME"]["category"] == "env"
        assert "versions.python" not in flagged  # same interpreter everywhere
    # n3 was reached through n1 (ProxyJump in the ssh_config): n1's sshd forwarded to n3's port
    assert f"port {lab.nodes[2].port}" in lab.nodes[0].log.read_text()


@pytest.mark.slow
def test_one_node_dying_tears_down_every_node(tmp_path, mark, lab):
    plan, result = _launch(tmp_path, mark, lab, hold_s=30.0,
                           node_env={"n2": sim_env(faults={"exit_after_s": 4, "exit_code": 9})})
    assert result["outcome"] == "failed-after-ready"
    assert result["failure"] == "n2: server exited with status 9"
    assert wait_gone(mark, 3) == []
    with Bundle.open(result["bundle"]) as bundle:
        events = bundle.events()
        assert any(e["event"] == "process-exited" and e["node"] == "n2" and e["rc"] == 9
                   for e in events)
        torn = {e["node"]: e for e in events if e["event"] == "teardown"}
        assert set(torn) == {"n1", "n2", "n3"}
        assert all(t["survivors"] == [] for t in torn.values())
        assert bundle.info.outcome == "failed-after-ready"


@pytest.mark.slow
def test_cut_link_tears_down_every_node(tmp_path, mark, lab):
    node2 = lab.nodes[1]

    def cut(supervisor):
        agent_pid = supervisor.links["n2"].hello["pid"]
        node2.kill_sshd()  # the link dies; the agent on n2 is left running on its own
        assert os.path.exists(f"/proc/{agent_pid}")
        supervisor.watch(60)

    try:
        plan, result = _launch(tmp_path, mark, lab, while_ready=cut)
    finally:
        node2.start()  # later tests need n2 again
    assert result["outcome"] == "failed-after-ready"
    assert result["failure"].startswith("n2: link lost")
    # the agent on n2 saw its input close and tore down its server without any command
    assert wait_gone(mark, 10) == []
    with Bundle.open(result["bundle"]) as bundle:
        events = bundle.events()
        assert any(e["event"] == "link-lost" and e["node"] == "n2" for e in events)
        torn = {e["node"] for e in events if e["event"] == "teardown"}
        assert {"n1", "n3"} <= torn
        assert bundle.info.raw["lost"]["n2"].startswith("agent exited")


HOSTILE = [
    "; touch {canary}",
    "$(touch {canary})",
    "`touch {canary}`",
    "x\ntouch {canary}\n",
    "'\"; touch {canary}; echo \"'",
    "|| touch {canary} &",
]


@pytest.mark.slow
def test_hostile_values_arrive_literally_and_never_run(tmp_path, mark, lab):
    canary = tmp_path / "canary"
    values = [h.format(canary=canary) for h in HOSTILE]
    seen = {}

    def look(supervisor):
        for name, link in supervisor.links.items():
            pid = link.procs["server"]["pid"]
            seen[name] = {
                "argv": [a.decode() for a in Path(f"/proc/{pid}/cmdline").read_bytes()
                         .split(b"\0")[:-1]],
                "env": dict(item.decode().split("=", 1) for item in
                            Path(f"/proc/{pid}/environ").read_bytes().split(b"\0") if b"=" in item),
            }

    plan, result = _launch(
        tmp_path, mark, lab, while_ready=look,
        model={"path": f"/models/{mark}/{values[0]}", "name": values[1]},
        serve={"flags": {"chat-template": values[2], "seed": values[3]},
               "extra_args": [values[4], values[5]]},
        env={"EVIL_ONE": values[0], "NCCL_DEBUG": values[2]},
        node_env={"n2": {"EVIL_TWO": values[3]}, "n3": {"EVIL_THREE": values[4]}},
        speculative={"method": values[5], "num_speculative_tokens": 2, "extra": {"x": values[1]}},
        load={"strategy": values[1], "format": values[2], "extra_config": {"k": values[3]}},
    )
    assert result["outcome"] == "completed", result
    for stage in plan.stages:
        for node, proc in stage.processes:
            assert seen[node]["argv"][1:] == list(proc.argv)[1:]  # argv[0]: the interpreter path
            for key, value in proc.env:
                assert seen[node]["env"][key] == value
    assert seen["n1"]["env"]["EVIL_ONE"] == values[0]
    assert seen["n2"]["env"]["EVIL_TWO"] == values[3] and "EVIL_TWO" not in seen["n1"]["env"]
    assert seen["n3"]["env"]["EVIL_THREE"] == values[4]
    head = seen["n1"]["argv"]
    assert values[4] in head and values[5] in head and f"/models/{mark}/{values[0]}" in head
    time.sleep(0.5)
    assert not canary.exists()
    assert wait_gone(mark, 3) == []


@pytest.mark.parametrize("field, value, where", [
    ("ssh", "-oProxyCommand=touch /tmp/pwned", "lab.nodes[0].ssh"),
    ("ssh", "n1 touch /tmp/pwned", "lab.nodes[0].ssh"),
    ("name", "../../etc", "lab.nodes[0].name"),
    ("proxy_jump", "-oProxyCommand=id", "lab.nodes[0].proxy_jump"),
])
def test_hostile_lab_values_are_refused_with_a_location(tmp_path, mark, field, value, where):
    nodes = [{"name": "a", "host": "127.0.0.1", "ssh": "a", field: value}]
    path = sim_deployment(tmp_path / "d.yaml", mark, nodes=nodes)
    with pytest.raises(ConfigError) as info:
        load_deployment(path)
    assert info.value.one_line().startswith(f"{path}:")
    assert where in info.value.one_line()
    assert not Path("/tmp/pwned").exists()
