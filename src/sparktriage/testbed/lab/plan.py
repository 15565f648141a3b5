"""The lab's plan as data: names, addresses and the exact commands, no I/O.

Layout for N nodes (K = 1..N):

- a bridge `st-br0` in the root namespace holding the controller's address `10.250.0.254/24`
  (only for reaching the nodes; no forwarding, no default route anywhere);
- a namespace `st-nodeK` with loopback up and one end of a veth pair, renamed `st0`, holding
  `10.250.0.K/24`; the other end `st-vK` is a port of the bridge;
- one sshd per node, run inside its namespace with `ip netns exec`, listening on
  `10.250.0.K:22` only, with its own host key, config and pid file.

Every address is inside 10.250.0.0/24, used only by these namespaces and the bridge.
"""

from __future__ import annotations

from dataclasses import dataclass, field
from pathlib import Path

PREFIX = "st-node"
BRIDGE = "st-br0"
NODE_IF = "st0"  # the node's interface inside its namespace
SUBNET = "10.250.0"  # /24, private test range, used only inside the lab
CONTROLLER = f"{SUBNET}.254"
MAX_NODES = 16
IP = "/usr/sbin/ip"
SSHD = "/usr/sbin/sshd"
SSH_KEYGEN = "ssh-keygen"


@dataclass(frozen=True)
class LabNodeSpec:
    index: int  # 1-based

    @property
    def name(self) -> str:
        return f"{PREFIX}{self.index}"

    @property
    def address(self) -> str:
        return f"{SUBNET}.{self.index}"

    @property
    def veth(self) -> str:  # root-namespace end (bridge port)
        return f"st-v{self.index}"

    @property
    def veth_peer(self) -> str:  # created in the root namespace, then moved and renamed
        return f"st-v{self.index}n"


@dataclass(frozen=True)
class Step:
    what: str
    argv: tuple[str, ...]


@dataclass(frozen=True)
class LabPlan:
    state_dir: Path
    nodes: tuple[LabNodeSpec, ...]
    python: str  # agent interpreter on the nodes
    pyspy: str | None
    up: tuple[Step, ...] = field(default=())
    sshd: tuple[Step, ...] = field(default=())

    def node_dir(self, node: LabNodeSpec) -> Path:
        return self.state_dir / node.name

    @property
    def user_key(self) -> Path:
        return self.state_dir / "user_key"

    @property
    def lab_yaml(self) -> Path:
        return self.state_dir / "lab.yaml"

    @property
    def ssh_config(self) -> Path:
        return self.state_dir / "ssh_config"

    @property
    def known_hosts(self) -> Path:
        return self.state_dir / "known_hosts"

    @property
    def authorized_keys(self) -> Path:
        return self.state_dir / "authorized_keys"

    def to_json(self) -> dict:
        return {"state_dir": str(self.state_dir), "bridge": BRIDGE,
                "controller": CONTROLLER, "python": self.python, "pyspy": self.pyspy,
                "nodes": [{"name": n.name, "address": n.address, "veth": n.veth,
                           "interface": NODE_IF} for n in self.nodes]}


def keygen(path: Path, comment: str) -> Step:
    return Step(f"key {path.name}", (SSH_KEYGEN, "-q", "-t", "ed25519", "-N", "", "-C", comment,
                                     "-f", str(path)))


def plan_lab(count: int, state_dir: Path, python: str, pyspy: str | None) -> LabPlan:
    """The plan of a lab of `count` nodes whose files live in `state_dir`."""
    if not 1 <= count <= MAX_NODES:
        raise ValueError(f"a lab has 1 to {MAX_NODES} nodes, not {count}")
    nodes = tuple(LabNodeSpec(k) for k in range(1, count + 1))
    base = LabPlan(state_dir, nodes, python, pyspy)
    steps = [keygen(base.user_key, "sparktriage-lab-user"),
             Step("bridge", (IP, "link", "add", BRIDGE, "type", "bridge")),
             Step("bridge address", (IP, "addr", "add", f"{CONTROLLER}/24", "dev", BRIDGE)),
             Step("bridge up", (IP, "link", "set", BRIDGE, "up"))]
    for node in nodes:
        ns = node.name
        steps += [
            keygen(base.node_dir(node) / "host_key", f"sparktriage-lab-{ns}"),
            Step(f"namespace {ns}", (IP, "netns", "add", ns)),
            Step(f"{ns} loopback", (IP, "-n", ns, "link", "set", "lo", "up")),
            Step(f"{ns} veth", (IP, "link", "add", node.veth, "type", "veth", "peer", "name",
                                node.veth_peer)),
            Step(f"{ns} veth into namespace", (IP, "link", "set", node.veth_peer, "netns", ns)),
            Step(f"{ns} interface name", (IP, "-n", ns, "link", "set", node.veth_peer, "name",
                                          NODE_IF)),
            Step(f"{ns} address", (IP, "-n", ns, "addr", "add", f"{node.address}/24", "dev",
                                   NODE_IF)),
            Step(f"{ns} interface up", (IP, "-n", ns, "link", "set", NODE_IF, "up")),
            Step(f"{ns} bridge port", (IP, "link", "set", node.veth, "master", BRIDGE)),
            Step(f"{ns} bridge port up", (IP, "link", "set", node.veth, "up")),
        ]
    sshd = tuple(Step(f"sshd {n.name}", (IP, "netns", "exec", n.name, SSHD, "-f",
                                          str(base.node_dir(n) / "sshd_config"), "-E",
                                          str(base.node_dir(n) / "sshd.log")))
                 for n in nodes)
    return LabPlan(state_dir, nodes, python, pyspy, tuple(steps), sshd)


def teardown_steps(namespaces: list[str], links: list[str]) -> list[Step]:
    """Removal of what a lab made (processes in the namespaces are killed before these)."""
    steps = [Step(f"namespace {ns}", (IP, "netns", "del", ns)) for ns in namespaces]
    steps += [Step(f"link {link}", (IP, "link", "del", link)) for link in links]
    return steps
