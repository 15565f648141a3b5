"""Which commands of a script start the server: `vllm serve`, the api_server module, a
container run, `ray start`; every other command is ignored (with its line).

Wrappers are taken off first: `sudo`, `exec`, `nohup`, `time`, `command`, `env A=B`, `nice`,
`numactl ...`, `taskset ...`, `timeout N`, `stdbuf`, `screen`, `srun`, `uv|conda|... run`,
python's own options. A command string run by `bash -c`, `ssh HOST '...'`, `docker exec
CONTAINER ...`, `eval`, `tmux new`, or a here-document fed to a shell is read as a script in
turn (bounded depth); placeholders in it are kept as words while it is read. A container
started with a `--name` and later `docker exec`'d is that run with the exec'd command; a
launcher not given whose arguments hold a serve command is taken to run it. Nothing is run.
"""

from __future__ import annotations

import os
import re
from dataclasses import dataclass, replace

from sparktriage.reproduce.bash.placeholders import protect, restore
from sparktriage.reproduce.bash.reading import read_script
from sparktriage.reproduce.meaning.stdin import interactive_exec, reads_stdin, typed_inside
from sparktriage.reproduce.meaning.wrappers import NAME, OPERANDS, OPTIONS, lookup, unwrap
from sparktriage.reproduce.bash.walk import Simple
from sparktriage.reproduce.meaning.harmless import ARGUMENTS_NOT_RUN
from sparktriage.reproduce.bash.words import Hole

PROGRAMS = ("vllm", "python", "python3", "docker", "podman", "ray", "uv", "env", "bash", "sh",
            "nohup", "exec", "ssh")
MAX_NESTED = 3
# the command strings run in another container, machine or pod, read as scripts in turn
_NESTED = ("ssh", "docker exec", "kubectl exec", "kubectl run")


@dataclass(frozen=True)
class Server:
    """A command that starts (part of) the server."""

    kind: str  # "serve", "container" (docker/podman run, docker compose run), "ray"
    words: tuple[str, ...]  # without wrappers (a container run starts at docker/podman)
    env: dict[str, str]  # `A=1 cmd`, `env A=1 cmd`, `docker exec -e A=1`
    command: Simple
    via: str = ""  # "bash -c", "ssh node2", "docker exec vllm" when read inside another


def _is_program(word: str) -> bool:
    base = os.path.basename(word)
    return base in PROGRAMS or base.startswith("python")


def strip_wrappers(words: list[str], env: dict[str, str]) -> list[str]:
    """The command under the wrappers; `env`'s assignments go into `env`."""
    while words:
        head = os.path.basename(words[0])
        if head == "env":
            words = words[1:]
            while words and (words[0].startswith("-") or "=" in words[0].split("/")[0]):
                if words[0] in ("-u", "--unset") and len(words) > 1:
                    words = words[1:]
                elif "=" in words[0] and not words[0].startswith("-"):
                    name, _, value = words[0].partition("=")
                    env[name] = value
                words = words[1:]
        elif head.startswith("python") and "-m" in words[1:] and \
                all(w.startswith("-") or words[i - 1] in ("-X", "-W")
                    for i, w in enumerate(words[1:words.index("-m")], 1)):
            return [words[0]] + words[words.index("-m"):]  # python3 -u -X dev -m vllm...
        elif (wrapper := lookup(words)) is not None and wrapper.taken_off and \
                len(words) > 1 + len(wrapper.sub):
            words = _under(wrapper, words)
        else:
            return words
    return words


def _under(wrapper, words: list[str]) -> list[str]:
    """The command a wrapper (a row of the wrappers' table) runs, read as its row says."""
    if wrapper.find in (NAME, OPTIONS, OPERANDS):
        found = unwrap(words)
        return list(found.command or ()) if found is not None else []
    return _to_program(words[1 + len(wrapper.sub):])


def _starts_program(words: list[str], i: int) -> bool:
    """Does a known program start at words[i] (not an option value that has its name, as in
    `conda run -n vllm ...`)?"""
    base, rest = os.path.basename(words[i]), words[i + 1:i + 6]
    wrapper = lookup(words[i:])
    if wrapper is not None and wrapper.taken_off and wrapper.where in ("container", "job"):
        return True  # `srun -N1 apptainer exec IMAGE ...`: the container wrapper, then its run
    if base == "vllm":
        return rest[:1] == ["serve"]
    if base.startswith("python"):
        return "-m" in rest
    if base in ("docker", "podman"):
        return rest[:1] in (["run"], ["container"], ["exec"])
    if base == "ray":
        return rest[:1] == ["start"]
    return _is_program(words[i])


def _to_program(words: list[str]) -> list[str]:
    """Skip a wrapper's options up to the program it runs (`--` or a known program)."""
    for index, word in enumerate(words):
        if word == "--":
            return words[index + 1:]
        if _starts_program(words, index):
            return words[index:]
    return words[-1:] if words else []


def is_serve(words: list[str]) -> bool:
    if not words:
        return False
    base = os.path.basename(words[0])
    if base == "vllm":
        return len(words) > 1 and words[1] == "serve"
    return base.startswith("python") and len(words) > 2 and words[1] == "-m" and \
        words[2].startswith("vllm")


def is_container_run(words: list[str]) -> bool:
    tool = os.path.basename(words[0]) if words else ""
    return tool in ("docker", "podman") and len(words) > 1 and \
        (words[1] == "run" or words[1:3] == ["container", "run"])


def _compose_run(words: list[str]) -> bool:
    """`docker compose run SERVICE ...` (the compose importer reads the service)."""
    from sparktriage.reproduce.importers.compose_run import is_compose_run
    return is_compose_run(words)


def is_ray_start(words: list[str]) -> bool:
    return len(words) > 1 and os.path.basename(words[0]) == "ray" and words[1] == "start"


def _shell_c(words: list[str]) -> int | None:
    """The index of the script string of `bash -c SCRIPT` (also `-lc`, `-ec`, `-l -c`)."""
    for at in (1, 2):
        if at < len(words) and words[at].startswith("-") and not words[at].startswith("--") \
                and words[at].endswith("c"):
            return at + 1 if at + 1 < len(words) else None
    return None


def image_index(words: list[str]) -> int | None:
    """The index of the image in `docker|podman [container] run OPTIONS IMAGE ...`, options
    read by its row of the wrappers' table (the docker importer's flags)."""
    found = unwrap(words)
    if found is None or not found.operands:
        return None
    return found.operands_at[0]


def _container(words: list[str]) -> tuple[str | None, list[str], list[str]] | None:
    """(its --name, the run up to the image, the command after it) of a container run."""
    at = image_index(words)
    if at is None:
        return None
    name = None
    for index, word in enumerate(words[:at]):
        if word.startswith("--name="):
            name = word.split("=", 1)[1]
        elif word == "--name" and index + 1 < at:
            name = words[index + 1]
    return name, words[:at + 1], words[at + 1:]


def _idle(rest: list[str], run: list[str] = ()) -> bool:
    """A container started to run nothing itself (`sleep infinity`, a shell), for `docker exec
    NAME ...` to run the server in later; with no command, an `--entrypoint` that is a program
    or a script file (`--entrypoint /serve.sh IMAGE`) is what it runs."""
    entry = _entrypoint(run)
    if not rest and entry:
        return os.path.basename(entry) in _IDLE
    return not rest or os.path.basename(rest[0]) in _IDLE and _shell_c(rest) is None


_IDLE = ("sleep", "tail", "bash", "sh", "cat")


def _entrypoint(run: list[str]) -> str:
    """The `--entrypoint` of a container run (up to its image), "" when none or cleared."""
    for index, word in enumerate(run[:-1]):
        if word.startswith("--entrypoint="):
            return word.split("=", 1)[1]
        if word == "--entrypoint" and index + 1 < len(run) - 1:
            return run[index + 1]
    return ""


_RAY_MODE = re.compile(r"^ray[-_]?(head|worker)\Z")


def _ray_mode(run: list[str], rest: list[str]) -> list[str] | None:
    """`IMAGE ray-head` / `IMAGE ray-worker`: an image whose entrypoint takes a mode word (the
    dgx-vllm images); read as `ray start --head` / `ray start --address=HEAD_IP:6379`."""
    match = _RAY_MODE.match(rest[0]) if len(rest) == 1 else None
    if match is None:
        return None
    if match.group(1) == "head":
        return ["ray", "start", "--head"]
    head = next((w.split("=", 1)[1] for w in run if w.startswith("HEAD_IP=")), None)
    return ["ray", "start", f"--address={head}:6379" if head else "--address"]


def _inner(words: list[str], env: dict[str, str],
           stdin: str | None = None) -> tuple[str, str] | None:
    """(a command string run by another command, how) for `sh -c`, `ssh`, `docker exec`, and
    a here-document fed to a shell."""
    if stdin is not None and (how := reads_stdin(words)) is not None:
        return stdin, f"{how} <<here-document"
    base = os.path.basename(words[0])
    if base in ("bash", "sh", "dash", "zsh"):
        at = _shell_c(words)
        return (words[at], f"{base} {words[at - 1]}") if at is not None else None
    if base == "eval" and len(words) > 1:
        return " ".join(words[1:]), "eval"  # its text is read as a script, never run
    if base == "tmux" and len(words) > 2 and words[1] in ("new", "new-session", "new-window",
                                                         "send-keys", "send"):
        return words[-1] if words[1] not in ("send-keys", "send") else " ".join(
            w for w in words[2:] if w not in ("Enter", "C-m") and not w.startswith("-")), \
            f"tmux {words[1]}"
    found = unwrap(words)
    if found is None or found.wrapper.label not in _NESTED or found.command is None or \
            not found.operands:
        return None
    where = f"{base}{' ' + ' '.join(found.wrapper.sub) if found.wrapper.sub else ''} " \
            f"{found.operands[0]}"
    if base == "ssh":  # ssh joins its words with spaces for the remote shell to read
        return " ".join(found.command), where
    for assignment in found.given("env"):  # `docker exec -e A=1`, `kubectl run --env A=1`
        if "=" in assignment:
            name, _, value = assignment.partition("=")
            env[name] = value
    return _quote(list(found.command)), where


def _quote(words: list[str]) -> str:
    """Words back into one command string (for reading again), quoted as data."""
    import shlex
    return " ".join(shlex.quote(w) for w in words)


def servers(commands: list[Simple], source: str, ignored: list[Simple], holes: list[Hole],
            given: dict[str, str] | None = None, depth: int = 0, via: str = "") -> list[Server]:
    """The server commands among `commands`; the others are appended to `ignored`; what a
    command string read inside another could not know is appended to `holes` (at the outer
    command's line)."""
    found = []
    containers: dict[str, list[str]] = {}  # idle containers by name: the run up to the image
    host: dict[str, str] | None = None  # exports before an interactive `docker exec -it C sh`
    for command in commands:
        env = dict(command.prefix)
        words = strip_wrappers(list(command.words), env)
        if host is not None:
            command = typed_inside(command, host)
        if words and command.stdin is None and interactive_exec(words):
            host = dict(command.exported)  # what follows is typed inside the container
        if not words:  # a wrapper alone (`env`, `sudo -v`)
            ignored.append(command)
        elif is_serve(words):
            found.append(Server("serve", tuple(words), env, command, via))
        elif is_container_run(words) and (parts := _container(words)) is not None:
            name, run, rest = parts
            if name:
                containers[name] = run
            mode = _ray_mode(run, rest)
            if _idle(rest, run) or (depth < MAX_NESTED and
                               not _runs_server(rest, source, command, given, depth)):
                ignored.append(command)  # idle, or its `sh -c` script starts no server
            elif mode is not None:
                found.append(Server("container", tuple(run + mode), env, command,
                                    f"the image's entrypoint word `{rest[0]}`, read as "
                                    f"`{' '.join(mode)}` (assumed)"))
            else:
                found.append(Server("container", tuple(words), env, command, via))
        elif is_container_run(words) or _compose_run(words):
            found.append(Server("container", tuple(words), env, command, via))
        elif is_ray_start(words):
            found.append(Server("ray", tuple(words), env, command, via))
        elif depth < MAX_NESTED and (inner := _inner(words, env, command.stdin)) is not None:
            text, tokens = protect(inner[0])
            inner_env = {**(given or {}), **command.exported, **env}  # what the inner shell has
            script = read_script(text, f"{source}:{command.line} ({inner[1]})", inner_env)
            commands = [restore(c, tokens) for c in script.commands]  # the reading is shared
            holes.extend(Hole(h.name, command.line, f"{h.what} (inside {inner[1]})", h.dropped)
                         for h in script.holes)
            around: list[Simple] = []  # the inner script's other commands, at this line
            nested = servers(commands, source, around, holes, inner_env, depth + 1,
                             inner[1])
            if not nested:
                ignored.append(command)
            else:
                ignored.extend(replace(c, line=command.line, end_line=command.end_line)
                               for c in around)
            how = inner[1].split(" <<")[0]
            run = containers.get(how.split()[-1]) if " exec " in f" {how} " else None
            for server in nested:
                # the outer command's line, environment and branch
                own = {**env, **server.command.exported, **server.env}
                if run is not None and server.kind in ("serve", "ray"):
                    # `docker exec NAME ...` in a container started idle: that run, this command
                    extra = [w for k, v in own.items() for w in ("-e", f"{k}={v}")]
                    found.append(Server("container", tuple(run[:-1] + extra + run[-1:])
                                        + server.words, {}, command, inner[1]))
                else:
                    found.append(Server(server.kind, server.words, own, command, server.via))
        elif (tail := _serve_in_tail(words)) is not None:
            found.append(Server("serve", tuple(words[tail:]), env, command,
                                f"the arguments of `{words[0]}` (a launcher not given: assumed "
                                "to run them as the command)"))
        else:
            ignored.append(command)
    return found


def _runs_server(rest: list[str], source: str, command: Simple,
                 given: dict[str, str] | None, depth: int) -> bool:
    """Does a container's command start a server? False only for a `sh -c SCRIPT` whose
    script (read as data) runs no serve command and no `ray start` (a build or install step);
    any other command is the docker importer's to read."""
    at = _shell_c(rest) if rest and os.path.basename(rest[0]) in ("bash", "sh", "dash") \
        else None
    if at is None:
        return True
    text, tokens = protect(rest[at])
    script = read_script(text, f"{source}:{command.line} (container script)", given)
    commands = [restore(c, tokens) for c in script.commands]  # the reading is shared
    return bool(servers(commands, source, [], [], given, depth + 1))


def _serve_in_tail(words: list[str]) -> int | None:
    """Where a serve command starts among the arguments of a launcher this module does not
    know (`./launch-cluster.sh -n a,b exec vllm serve MODEL ...`), or None."""
    if os.path.basename(words[0]) in ARGUMENTS_NOT_RUN:
        return None
    for index in range(1, len(words)):
        if is_serve(words[index:]):
            return index
    return None
