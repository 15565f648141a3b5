"""How a command hands a script to a shell without `-c`: on its standard input (`bash -s
<<EOF`, `ssh HOST bash <<EOF`, `docker exec -i NAME bash <<EOF`), or typed after an
interactive `docker exec -it NAME bash` (the lines after it run inside that container, where
the host shell's exports are not set). Used by meaning/servers.py; nothing is run.
"""

from __future__ import annotations

import os
from dataclasses import replace

from sparktriage.reproduce.bash.walk import Simple

SSH_VALUE = {"-p", "-i", "-l", "-o", "-F", "-J", "-b", "-c", "-E", "-L", "-R", "-D", "-W",
             "-S", "-m", "-O", "-Q", "-w", "-B", "-e", "-I"}
EXEC_VALUE = {"-e", "--env", "-w", "--workdir", "-u", "--user", "--env-file"}


def reads_stdin(words: list[str]) -> str | None:
    """How a command runs the script on its standard input (`bash`, `bash -s`, `ssh HOST`,
    `ssh HOST bash`, `docker exec -i NAME bash`), or None."""
    base = os.path.basename(words[0])
    if base in ("bash", "sh", "dash", "zsh"):
        return base if all(w.startswith("-") and not w.endswith("c") for w in words[1:]) \
            else None
    if base == "ssh":
        i = 1
        while i < len(words) and words[i].startswith("-"):
            i += 2 if words[i] in SSH_VALUE else 1
        rest = words[i + 1:]
        return f"ssh {words[i]}" if i < len(words) and (not rest or reads_stdin(rest)) \
            else None
    if base in ("docker", "podman") and words[1:2] == ["exec"]:
        i = 2
        while i < len(words) and words[i].startswith("-"):
            i += 2 if words[i] in EXEC_VALUE else 1
        rest = words[i + 1:]
        return f"{base} exec {words[i]}" if rest and reads_stdin(rest) else None
    return None


def interactive_exec(words: list[str]) -> bool:
    """`docker exec -it NAME bash` (a shell with no script): the lines after it are typed
    inside that container (the playbooks' convention)."""
    if os.path.basename(words[0]) not in ("docker", "podman") or words[1:2] != ["exec"]:
        return False
    i = 2
    while i < len(words) and words[i].startswith("-"):
        i += 2 if words[i] in EXEC_VALUE else 1
    rest = words[i + 1:]
    return bool(rest) and os.path.basename(rest[0]) in ("bash", "sh", "dash", "zsh") and \
        all(w.startswith("-") and not w.endswith("c") for w in rest[1:])


def typed_inside(command: Simple, host: dict[str, str]) -> Simple:
    """A command typed inside a container: the host shell's exports are not its environment."""
    left = sorted(k for k, v in host.items() if command.exported.get(k) == v)
    if not left:
        return command
    return replace(command, exported={k: v for k, v in command.exported.items()
                                      if host.get(k) != v},
                   notes=command.notes + ("typed inside the container of `docker exec`: the "
                                          "host shell's exports are not in its environment "
                                          f"({', '.join(left)})",))
