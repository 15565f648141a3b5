"""Bring a lab plan up and take it down again; the state file makes `down` idempotent.

Every namespace and link is written to `state.json` *before* it is created, so a set-up that
fails half-way is taken down by the same code as a finished one. `down` kills every process
inside the lab's namespaces (sshd, its sessions, whatever they started), deletes the
namespaces and links, then removes the state folder (keys, configs, logs); it only ever touches
names recorded in the state. Commands are argv lists run without a shell.
"""

from __future__ import annotations

import json
import os
import shutil
import signal
import socket
import subprocess
import time
from pathlib import Path

from sparktriage.errors import EXIT_UNREACHABLE, SparktriageError, UsageError
from sparktriage.testbed.lab import files
from sparktriage.testbed.lab.plan import BRIDGE, IP, SSHD, LabPlan, Step, teardown_steps

STATE = "state.json"
DEFAULT_DIR = Path("/run/sparktriage-lab")
STEP_TIMEOUT_S = 30.0


class LabError(SparktriageError):
    """The lab could not be set up (everything made so far has been removed)."""

    exit_code = EXIT_UNREACHABLE


def require_root() -> None:
    if os.geteuid() != 0:
        raise UsageError("testbed lab needs root (it creates network namespaces); run it as root")


def _run(step: Step, check: bool = True) -> subprocess.CompletedProcess:
    try:
        done = subprocess.run(list(step.argv), stdin=subprocess.DEVNULL, capture_output=True,
                              text=True, timeout=STEP_TIMEOUT_S)
    except (OSError, subprocess.TimeoutExpired) as exc:
        raise LabError(f"lab step {step.what!r} could not run: {exc}") from None
    if check and done.returncode != 0:
        detail = (done.stderr or done.stdout).strip().splitlines()
        raise LabError(f"lab step {step.what!r} failed ({done.returncode}): "
                       f"{detail[-1] if detail else 'no output'}")
    return done


def existing_namespaces() -> set[str]:
    done = subprocess.run([IP, "netns", "list"], capture_output=True, text=True,
                          stdin=subprocess.DEVNULL, timeout=STEP_TIMEOUT_S)
    return {line.split()[0] for line in done.stdout.splitlines() if line.strip()}


def _link_exists(name: str) -> bool:
    return subprocess.run([IP, "link", "show", "dev", name], capture_output=True,
                          stdin=subprocess.DEVNULL, timeout=STEP_TIMEOUT_S).returncode == 0


def namespace_pids(namespace: str) -> list[int]:
    done = subprocess.run([IP, "netns", "pids", namespace], capture_output=True, text=True,
                          stdin=subprocess.DEVNULL, timeout=STEP_TIMEOUT_S)
    return [int(p) for p in done.stdout.split() if p.isdigit()]


class State:
    """What a lab made, written before each thing is made."""

    def __init__(self, folder: Path) -> None:
        self.path = folder / STATE
        self.doc = {"namespaces": [], "links": [], "plan": None}

    def add(self, kind: str, name: str) -> None:
        if name not in self.doc[kind]:
            self.doc[kind].append(name)
            self.save()

    def save(self) -> None:
        tmp = self.path.with_suffix(".tmp")
        tmp.write_text(json.dumps(self.doc, indent=1))
        tmp.replace(self.path)

    @classmethod
    def load(cls, folder: Path) -> "State | None":
        state = cls(folder)
        try:
            state.doc.update(json.loads(state.path.read_text()))
        except FileNotFoundError:
            return None
        except (OSError, ValueError) as exc:
            raise UsageError(f"{state.path}: unreadable lab state: {exc}") from None
        return state


def _wait_listening(address: str, pid_file: Path, timeout_s: float = 15.0) -> int:
    deadline = time.monotonic() + timeout_s
    while time.monotonic() < deadline:
        try:
            socket.create_connection((address, 22), timeout=0.5).close()
            return int(pid_file.read_text().split()[0])
        except (OSError, ValueError, IndexError):
            time.sleep(0.1)
    raise LabError(f"sshd on {address}:22 did not listen within {timeout_s:.0f} s")


def up(plan: LabPlan) -> dict:
    """Create the lab; return its description (lab.yaml path, nodes). Raises LabError after
    removing whatever was made when a step fails."""
    require_root()
    for tool in (IP, SSHD):
        if not os.access(tool, os.X_OK):
            raise UsageError(f"{tool} is missing (install iproute2 and openssh-server)")
    if State.load(plan.state_dir) is not None:
        raise UsageError(f"a lab is already up in {plan.state_dir}; run "
                         f"`sparktriage testbed lab down --dir {plan.state_dir}` first")
    taken = existing_namespaces() & {n.name for n in plan.nodes}
    links = [BRIDGE] + [n.veth for n in plan.nodes]
    taken |= {name for name in links if _link_exists(name)}
    if taken:
        raise UsageError(f"names already in use on this machine: {', '.join(sorted(taken))} "
                         f"(another lab? `sparktriage testbed lab down --dir DIR`)")
    if plan.state_dir.exists() and any(plan.state_dir.iterdir()):
        raise UsageError(f"{plan.state_dir} is not empty; give `--dir` a new or empty folder")
    plan.state_dir.mkdir(parents=True, exist_ok=True, mode=0o700)
    state = State(plan.state_dir)
    state.doc["plan"] = plan.to_json()
    state.save()
    try:
        for node in plan.nodes:
            plan.node_dir(node).mkdir(mode=0o700, exist_ok=True)
        for step in plan.up:
            if step.argv[1:3] == ("netns", "add"):
                state.add("namespaces", step.argv[3])
            elif step.argv[1:3] == ("link", "add"):
                state.add("links", step.argv[3])
            _run(step)
        plan.authorized_keys.write_text(Path(f"{plan.user_key}.pub").read_text())
        host_keys = {}
        for node in plan.nodes:
            (plan.node_dir(node) / "sshd_config").write_text(files.sshd_config(plan, node))
            host_keys[node.name] = (plan.node_dir(node) / "host_key.pub").read_text()
        plan.known_hosts.write_text(files.known_hosts(plan, host_keys))
        plan.ssh_config.write_text(files.ssh_config(plan))
        Path("/run/sshd").mkdir(exist_ok=True)  # sshd's privilege-separation folder
        pids = {}
        for node, step in zip(plan.nodes, plan.sshd):
            _run(step)
            pids[node.name] = _wait_listening(node.address, plan.node_dir(node) / "sshd.pid")
        for node in plan.nodes:  # the lab works only if a real login works
            _run(Step(f"ssh {node.name}", ("ssh", "-F", str(plan.ssh_config), "-o",
                                           "BatchMode=yes", node.name, "true")))
        plan.lab_yaml.write_text(files.lab_yaml(plan))
    except BaseException:
        down(plan.state_dir)
        raise
    return {"lab": str(plan.lab_yaml), "ssh_config": str(plan.ssh_config),
            "state_dir": str(plan.state_dir), "sshd_pids": pids, **plan.to_json()}


def kill_namespace(namespace: str, grace_s: float = 5.0) -> list[int]:
    """SIGTERM every process in the namespace, then SIGKILL what is left; return the pids hit."""
    pids = namespace_pids(namespace)
    for sig in (signal.SIGTERM, signal.SIGKILL):
        for pid in pids:
            try:
                os.kill(pid, sig)
            except ProcessLookupError:
                pass
        deadline = time.monotonic() + grace_s
        while namespace_pids(namespace) and time.monotonic() < deadline:
            time.sleep(0.1)
        if not namespace_pids(namespace):
            break
    return pids


def down(state_dir: Path) -> dict:
    """Remove every namespace, link, process and file a lab in `state_dir` made. Idempotent:
    a missing lab, or parts of one already gone, are fine."""
    require_root()
    state = State.load(state_dir)
    if state is None:
        return {"state_dir": str(state_dir), "removed": False, "killed": []}
    present = existing_namespaces()
    killed = []
    for namespace in state.doc["namespaces"]:
        if namespace in present:
            killed += kill_namespace(namespace)
    namespaces = [ns for ns in state.doc["namespaces"] if ns in present]
    links = [link for link in state.doc["links"] if _link_exists(link)]
    problems = []
    for step in teardown_steps(namespaces, links):
        done = _run(step, check=False)
        if done.returncode != 0 and (step.argv[1] != "link" or _link_exists(step.argv[-1])):
            problems.append(f"{step.what}: {(done.stderr or '').strip()}")
    if problems:
        raise LabError("lab teardown incomplete: " + "; ".join(problems))
    shutil.rmtree(state_dir, ignore_errors=True)
    return {"state_dir": str(state_dir), "removed": True, "killed": sorted(killed),
            "namespaces": namespaces, "links": links}
