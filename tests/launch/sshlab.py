"""Several "nodes" on this machine, each a real OpenSSH server (Debian's openssh-server).

Each node is `/usr/sbin/sshd -D` on its own 127.0.0.1 port with its own host key, config and
log; the client side gets a per-lab ssh_config (Host aliases n1..nN, a key made here, a
known_hosts with the nodes' host keys, StrictHostKeyChecking on). `SetEnv` lines in a node's
sshd_config become that node's login environment, which is how a test plants a difference
between nodes. Everything lives under one temporary folder; `close()` stops every sshd it
started (by pid, never by name).
"""

from __future__ import annotations

import os
import signal
import socket
import subprocess
import time
from pathlib import Path

import psutil

SSHD = "/usr/sbin/sshd"


def _free_port() -> int:
    with socket.socket() as sock:
        sock.bind(("127.0.0.1", 0))
        return sock.getsockname()[1]


def _keygen(path: Path) -> None:
    subprocess.run(["ssh-keygen", "-q", "-t", "ed25519", "-N", "", "-f", str(path)], check=True,
                   stdin=subprocess.DEVNULL)


class SshNode:
    def __init__(self, root: Path, name: str, authorized: Path, set_env: dict[str, str],
                 log_level: str = "VERBOSE") -> None:
        self.name = name
        self.port = _free_port()
        self.dir = root / name
        self.dir.mkdir(parents=True)
        _keygen(self.dir / "host_key")
        self.log = self.dir / "sshd.log"
        lines = [
            f"Port {self.port}", "ListenAddress 127.0.0.1", f"HostKey {self.dir / 'host_key'}",
            f"PidFile {self.dir / 'sshd.pid'}", f"AuthorizedKeysFile {authorized}",
            "PermitRootLogin prohibit-password", "PubkeyAuthentication yes",
            "PasswordAuthentication no", "KbdInteractiveAuthentication no", "UsePAM no",
            "StrictModes no", "PrintMotd no", "PrintLastLog no", f"LogLevel {log_level}",
            "AllowTcpForwarding yes", "MaxStartups 50",
        ]
        lines += [f"SetEnv {key}={value}" for key, value in set_env.items()]
        self.config = self.dir / "sshd_config"
        self.config.write_text("\n".join(lines) + "\n")
        self.process: subprocess.Popen | None = None

    def start(self) -> None:
        Path("/run/sshd").mkdir(exist_ok=True)  # privilege-separation folder sshd requires
        self.process = subprocess.Popen([SSHD, "-D", "-f", str(self.config), "-E", str(self.log)],
                                        stdin=subprocess.DEVNULL, start_new_session=True)
        deadline = time.monotonic() + 10
        while time.monotonic() < deadline:
            try:
                socket.create_connection(("127.0.0.1", self.port), timeout=0.5).close()
                return
            except OSError:
                assert self.process.poll() is None, self.log.read_text()
                time.sleep(0.05)
        raise RuntimeError(f"sshd {self.name} did not listen: {self.log.read_text()}")

    def sshd_pids(self) -> list[int]:
        """This node's listening sshd and its per-connection sshd children (not their shells)."""
        if self.process is None or self.process.poll() is not None:
            return []
        pids = [self.process.pid]
        try:
            for child in psutil.Process(self.process.pid).children(recursive=True):
                if child.name() == "sshd" or child.name().startswith("sshd"):
                    pids.append(child.pid)
        except psutil.NoSuchProcess:
            pass
        return pids

    def kill_sshd(self) -> None:
        """Cut every link to this node: SIGKILL its sshd processes, leave the rest running."""
        for pid in self.sshd_pids():
            try:
                os.kill(pid, signal.SIGKILL)
            except ProcessLookupError:
                pass
        if self.process is not None:
            self.process.wait(timeout=5)

    def stop(self) -> None:
        self.kill_sshd()


class SshLab:
    """N sshd nodes and the client configuration that reaches them."""

    def __init__(self, root: Path, count: int = 3, set_env: dict[int, dict] | None = None,
                 jump: dict[int, int] | None = None, log_level: dict[int, str] | None = None) -> None:
        self.root = root
        root.mkdir(parents=True, exist_ok=True)
        self.key = root / "client_key"
        _keygen(self.key)
        authorized = root / "authorized_keys"
        authorized.write_text((root / "client_key.pub").read_text())
        self.nodes = [SshNode(root, f"n{i + 1}", authorized, (set_env or {}).get(i + 1, {}),
                              (log_level or {}).get(i + 1, "VERBOSE")) for i in range(count)]
        known = root / "known_hosts"
        known.write_text("".join(
            f"[127.0.0.1]:{n.port} {(n.dir / 'host_key.pub').read_text().split(' ')[0]} "
            f"{(n.dir / 'host_key.pub').read_text().split(' ')[1]}\n" for n in self.nodes))
        blocks = []
        for index, node in enumerate(self.nodes, start=1):
            block = [f"Host {node.name}", "  HostName 127.0.0.1", f"  Port {node.port}",
                     "  User root", f"  IdentityFile {self.key}", "  IdentitiesOnly yes",
                     f"  UserKnownHostsFile {known}", "  StrictHostKeyChecking yes",
                     "  GlobalKnownHostsFile /dev/null", "  LogLevel ERROR"]
            if jump and index in jump:
                block.append(f"  ProxyJump {self.nodes[jump[index] - 1].name}")
            blocks.append("\n".join(block))
        self.ssh_config = root / "ssh_config"
        self.ssh_config.write_text("\n\n".join(blocks) + "\n")

    def start(self) -> "SshLab":
        for node in self.nodes:
            node.start()
        return self

    def close(self) -> None:
        for node in self.nodes:
            node.stop()

    def ssh(self, node: str, *command: str, timeout: float = 30) -> subprocess.CompletedProcess:
        return subprocess.run(["ssh", "-F", str(self.ssh_config), "-o", "BatchMode=yes", node,
                               *command], capture_output=True, timeout=timeout,
                              stdin=subprocess.DEVNULL)
