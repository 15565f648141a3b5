"""The network-namespace lab: its plan as data, and the real thing (root): up, reach, down.

`lab up 2` must give two namespaces with their own address on one bridge, a real sshd in each
reached with the written ssh_config (host keys checked), the lab.yaml the launcher loads, and
`lab down` must leave no namespace, link, process or file behind, twice in a row.
"""

from __future__ import annotations

import json
import os
import subprocess
import sys
from pathlib import Path

import pytest

from sparktriage.config.deployment import load_deployment
from sparktriage.testbed.lab.plan import CONTROLLER, plan_lab

LOCAL_ROUTE_PREFIX = "10.250.0."


def _cli(*args: str, user: int | None = None) -> subprocess.CompletedProcess:
    argv = [sys.executable, "-m", "sparktriage", "testbed", "lab", *args]
    if user is not None:
        argv = ["setpriv", f"--reuid={user}", f"--regid={user}", "--clear-groups", *argv]
    return subprocess.run(argv, capture_output=True, text=True, timeout=120,
                          stdin=subprocess.DEVNULL)


def _namespaces() -> list[str]:
    out = subprocess.run(["ip", "netns", "list"], capture_output=True, text=True).stdout
    return [line.split()[0] for line in out.splitlines() if line.strip()]


def _links() -> list[str]:
    out = subprocess.run(["ip", "-o", "link", "show"], capture_output=True, text=True).stdout
    return [line.split(": ")[1].split("@")[0] for line in out.splitlines()]


def _alive(pid: int) -> bool:
    """Running (a zombie waiting for init to reap it is not)."""
    try:
        return Path(f"/proc/{pid}/stat").read_text().rsplit(")", 1)[1].split()[0] != "Z"
    except OSError:
        return False


def test_plan_is_argv_lists_inside_the_test_range(tmp_path):
    plan = plan_lab(3, tmp_path / "lab", "/usr/bin/python3", None)
    assert [n.name for n in plan.nodes] == ["st-node1", "st-node2", "st-node3"]
    assert [n.address for n in plan.nodes] == ["10.250.0.1", "10.250.0.2", "10.250.0.3"]
    for step in plan.up + plan.sshd:
        assert isinstance(step.argv, tuple) and all(isinstance(a, str) for a in step.argv)
        for arg in step.argv:  # the only addresses: 10.250.0.0/24
            if arg.count(".") == 3 and arg[0].isdigit():
                assert arg.startswith(LOCAL_ROUTE_PREFIX), arg
    assert ("/usr/sbin/ip", "addr", "add", f"{CONTROLLER}/24", "dev", "st-br0") in \
        [s.argv for s in plan.up]
    assert not [s for s in plan.up if "route" in s.argv]  # no route anywhere
    assert plan.sshd[1].argv[:4] == ("/usr/sbin/ip", "netns", "exec", "st-node2")
    with pytest.raises(ValueError):
        plan_lab(17, tmp_path, "python3", None)


@pytest.mark.parametrize("args", [("up", "2"), ("down",)])
def test_not_root_is_a_one_line_usage_error(args, tmp_path):
    done = _cli(*args, "--dir", str(tmp_path / "x"), user=65534)
    assert done.returncode == 2
    assert done.stderr.strip() == ("error: testbed lab needs root (it creates network "
                                   "namespaces); run it as root")


@pytest.mark.parametrize("count", ["0", "17"])
def test_bad_node_count_is_a_usage_error(count, tmp_path):
    if os.geteuid() != 0:
        pytest.skip("root only")
    done = _cli("up", count, "--dir", str(tmp_path / "x"))
    assert done.returncode == 2 and "1 to 16 nodes" in done.stderr
    assert "Traceback" not in done.stderr


@pytest.mark.netns
def test_up_reach_and_down_leave_nothing(tmp_path):
    if os.geteuid() != 0:
        pytest.skip("the lab needs root (CI runs as root)")
    state = tmp_path / "lab"
    assert not [n for n in _namespaces() if n.startswith("st-node")]
    done = _cli("up", "2", "--dir", str(state), "--json", str(tmp_path / "lab.json"))
    try:
        assert done.returncode == 0, done.stderr
        info = json.loads((tmp_path / "lab.json").read_text())
        lab_yaml = Path(done.stdout.strip())
        assert lab_yaml == state / "lab.yaml" and lab_yaml.is_file()
        assert {"st-node1", "st-node2"} <= set(_namespaces())
        assert {"st-br0", "st-v1", "st-v2"} <= set(_links())
        again = _cli("up", "2", "--dir", str(state))
        assert again.returncode == 2 and "already up" in again.stderr
        # each node: its own address, loopback up, no route but its own subnet
        for k in (1, 2):
            addr = subprocess.run(["ip", "-n", f"st-node{k}", "-br", "addr"], capture_output=True,
                                  text=True).stdout
            assert f"10.250.0.{k}/24" in addr and "lo" in addr
            routes = subprocess.run(["ip", "-n", f"st-node{k}", "route"], capture_output=True,
                                    text=True).stdout.strip().splitlines()
            assert routes == [f"10.250.0.0/24 dev st0 proto kernel scope link src 10.250.0.{k} "]\
                or [r.strip() for r in routes] == [
                    f"10.250.0.0/24 dev st0 proto kernel scope link src 10.250.0.{k}"]
        # a real login through each node's own sshd, host key checked (StrictHostKeyChecking)
        for k in (1, 2):
            out = subprocess.run(["ssh", "-F", str(state / "ssh_config"), "-o", "BatchMode=yes",
                                  f"st-node{k}", "ip -br addr show st0"], capture_output=True,
                                 text=True, timeout=30)
            assert out.returncode == 0, out.stderr
            assert f"10.250.0.{k}/24" in out.stdout
        # node 2 reaches node 1 over the bridge (what vLLM's ranks need)
        probe = subprocess.run(["ip", "netns", "exec", "st-node2", sys.executable, "-c",
                                "import socket;socket.create_connection(('10.250.0.1',22),3)"
                                ".close();print('ok')"], capture_output=True, text=True)
        assert probe.stdout.strip() == "ok", probe.stderr
        dep = tmp_path / "d.yaml"
        dep.write_text(f"schema_version: 1\nname: x\nlab: {lab_yaml}\nmodel: {{path: /m}}\n"
                       "parallelism: {tp: 2, nodes: 2}\n")
        nodes = load_deployment(dep).lab.nodes
        assert [(n.name, n.host, n.ssh) for n in nodes] == [
            ("st-node1", "10.250.0.1", "st-node1"), ("st-node2", "10.250.0.2", "st-node2")]
        assert nodes[1].env == {"VLLM_HOST_IP": "10.250.0.2", "GLOO_SOCKET_IFNAME": "st0"}
        sshd = [info["sshd_pids"][f"st-node{k}"] for k in (1, 2)]
        assert all(_alive(pid) for pid in sshd)
    finally:
        down = _cli("down", "--dir", str(state))
    assert down.returncode == 0, down.stderr
    assert not [n for n in _namespaces() if n.startswith("st-node")]
    assert not {"st-br0", "st-v1", "st-v2"} & set(_links())
    assert not any(_alive(pid) for pid in sshd)
    assert not state.exists()  # keys, configs, logs: gone
    twice = _cli("down", "--dir", str(state))
    assert twice.returncode == 0 and "no lab" in twice.stderr
