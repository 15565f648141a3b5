"""How the collecting machine reaches a node: directly (local) or through OpenSSH.

For SSH the local command is an argv list (no local shell), options first, then `--`, the
destination and ONE remote command string built with `shlex.quote` per argument, because the
remote side hands that string to the user's login shell. Destinations and jump hosts are
checked against a strict pattern so that a config value can never become an ssh option
(`-oProxyCommand=...`). The user's ssh_config is honoured: the default `~/.ssh/config`, or the
file given (`-F`), with its Host aliases, keys, ports and ProxyJump.
"""

from __future__ import annotations

import shlex
import sys
from dataclasses import dataclass

from sparktriage.config.ssh_names import check_destination, check_jump

SSH_DEFAULT_OPTIONS = (
    "-T",  # no pty: the agent talks JSON over plain pipes
    "-o", "BatchMode=yes",  # never prompt (a prompt would hang the launch)
    "-o", "ServerAliveInterval=5",
    "-o", "ServerAliveCountMax=3",  # a dead link is noticed within ~15 s
    "-o", "ConnectTimeout=15",
)


@dataclass(frozen=True)
class Transport:
    """Where a node's commands run. `destination` None means this machine."""

    destination: str | None = None
    ssh_config: str | None = None
    port: int | None = None
    identity_file: str | None = None
    proxy_jump: str | None = None
    ssh: str = "ssh"

    def __post_init__(self) -> None:
        if self.destination is not None:
            check_destination(self.destination)
        if self.proxy_jump is not None:
            check_jump(self.proxy_jump)

    @property
    def local(self) -> bool:
        return self.destination is None

    def ssh_options(self) -> list[str]:
        options = list(SSH_DEFAULT_OPTIONS)
        if self.ssh_config:
            options[0:0] = ["-F", self.ssh_config]
        if self.port:
            options += ["-p", str(int(self.port))]
        if self.identity_file:
            options += ["-i", self.identity_file]
        if self.proxy_jump:
            options += ["-J", self.proxy_jump]
        return options

    def argv(self, command: list[str]) -> list[str]:
        """The local argv that runs `command` (an argv list) on the node."""
        if self.local:
            return list(command)
        return [self.ssh, *self.ssh_options(), "--", self.destination,
                " ".join(shlex.quote(str(arg)) for arg in command)]

    def describe(self) -> str:
        return "local" if self.local else f"ssh {self.destination}"


def local_python() -> str:
    """The interpreter that runs the agent on this machine: sparktriage's own."""
    return sys.executable
