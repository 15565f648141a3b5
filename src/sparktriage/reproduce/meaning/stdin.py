"""How a command hands a script to a shell without `-c`: on its standard input (`bash -s
<<EOF`, `ssh HOST bash <<EOF`, `docker exec -i NAME bash <<EOF`, `kubectl exec -i POD -- bash
<<EOF`), or typed after an interactive `docker exec -it NAME bash` (the lines after it run
inside that container, where the host shell's exports are not set). The wrappers are read by
their rows of meaning/wrappers.py. Used by meaning/servers.py; nothing is run.
"""

from __future__ import annotations

import os
from dataclasses import replace

from sparktriage.reproduce.bash.walk import Simple
from sparktriage.reproduce.meaning.wrappers import Unwrapped, unwrap

_SHELLS = ("bash", "sh", "dash", "zsh")


def _shell_alone(words: list[str] | tuple[str, ...]) -> bool:
    """A shell given no script string (`bash`, `bash -s`, `sh -l`): it reads its input."""
    return bool(words) and os.path.basename(words[0]) in _SHELLS and \
        all(w.startswith("-") and not w.endswith("c") for w in words[1:])


def _remote(words: list[str]) -> Unwrapped | None:
    """`ssh HOST ...`, `docker|podman exec CONTAINER ...` or `kubectl exec POD -- ...` read by
    the wrappers' table."""
    found = unwrap(words)
    if found is None or found.wrapper.label not in ("ssh", "docker exec", "kubectl exec") or \
            not found.operands:
        return None
    return found


def reads_stdin(words: list[str]) -> str | None:
    """How a command runs the script on its standard input (`bash`, `bash -s`, `ssh HOST`,
    `ssh HOST bash`, `docker exec -i NAME bash`), or None."""
    if os.path.basename(words[0]) in _SHELLS:
        return os.path.basename(words[0]) if _shell_alone(words) else None
    found = _remote(words)
    if found is None:
        return None
    rest = list(found.command or ())
    how = f"{os.path.basename(words[0])}{' exec' if found.wrapper.sub else ''} " \
          f"{found.operands[0]}"
    if found.wrapper.sub:  # a container runs what it is given: a shell, or nothing reads
        return how if rest and reads_stdin(rest) else None
    return how if not rest or reads_stdin(rest) else None


def interactive_exec(words: list[str]) -> bool:
    """`docker exec -it NAME bash` (a shell with no script): the lines after it are typed
    inside that container (the playbooks' convention)."""
    found = _remote(words)
    return found is not None and bool(found.wrapper.sub) and _shell_alone(found.command or ())


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
