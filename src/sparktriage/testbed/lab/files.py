"""The lab's configuration files as text: sshd_config per node, ssh_config, known_hosts, lab.yaml."""

from __future__ import annotations

import yaml

from sparktriage.testbed.lab.plan import CONTROLLER, NODE_IF, LabNodeSpec, LabPlan


def sshd_config(plan: LabPlan, node: LabNodeSpec) -> str:
    folder = plan.node_dir(node)
    lines = [
        "Port 22", f"ListenAddress {node.address}", f"HostKey {folder / 'host_key'}",
        f"PidFile {folder / 'sshd.pid'}", f"AuthorizedKeysFile {plan.authorized_keys}",
        "PermitRootLogin prohibit-password", "PubkeyAuthentication yes",
        "PasswordAuthentication no", "KbdInteractiveAuthentication no", "UsePAM no",
        "StrictModes no", "PrintMotd no", "PrintLastLog no", "LogLevel VERBOSE",
        "AllowTcpForwarding no", "X11Forwarding no", "MaxStartups 50", "MaxSessions 50",
    ]
    return "\n".join(lines) + "\n"


def ssh_config(plan: LabPlan) -> str:
    blocks = []
    for node in plan.nodes:
        blocks.append("\n".join([
            f"Host {node.name}", f"  HostName {node.address}", "  Port 22", "  User root",
            f"  IdentityFile {plan.user_key}", "  IdentitiesOnly yes",
            f"  UserKnownHostsFile {plan.known_hosts}", "  GlobalKnownHostsFile /dev/null",
            "  StrictHostKeyChecking yes", "  BindAddress " + CONTROLLER,
            "  ControlMaster no", "  LogLevel ERROR"]))
    return "\n\n".join(blocks) + "\n"


def known_hosts(plan: LabPlan, host_keys: dict[str, str]) -> str:
    """`host_keys`: node name -> the text of its host_key.pub."""
    lines = []
    for node in plan.nodes:
        kind, key = host_keys[node.name].split()[:2]
        lines.append(f"{node.address} {kind} {key}")
    return "\n".join(lines) + "\n"


def lab_yaml(plan: LabPlan) -> str:
    nodes = []
    for node in plan.nodes:
        entry = {"name": node.name, "host": node.address, "ssh": node.name,
                 "role": "head" if node.index == 1 else "worker", "interfaces": [NODE_IF],
                 "gpu": "none", "python": plan.python}
        if plan.pyspy:
            entry["pyspy"] = plan.pyspy
        entry["env"] = {"VLLM_HOST_IP": node.address, "GLOO_SOCKET_IFNAME": NODE_IF}
        nodes.append(entry)
    doc = {"schema_version": 1, "name": "netns-lab", "ssh_config": str(plan.ssh_config),
           "nodes": nodes}
    return ("# written by `sparktriage testbed lab up`; removed by `lab down`\n"
            + yaml.safe_dump(doc, sort_keys=False))
