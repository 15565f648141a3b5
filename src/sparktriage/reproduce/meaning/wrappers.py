"""The programs that run another command, as one table of data: for each, its name(s), how the
command it runs is found, which of its options take a value, and what it says about where and
how that command runs (an image, variables, binds, nodes and GPUs, a remote host or pod).

Every reader of a command line takes wrappers off through this table: meaning/servers.py (the
wrappers in front of a server command, and the command strings `ssh`, `docker exec`, `kubectl
exec|run` run), meaning/stdin.py (a script fed on a wrapper's standard input),
meaning/job_wrappers.py (the image, binds and variables of a job's container), and
importers/slurm.py (where an `srun` line's options end). How the wrapped command is found:

- `NAME`: right after the program's name (`nohup CMD`, `exec CMD`);
- `OPTIONS`: after the program's options, read by its table of valued options (`sudo -u x CMD`);
- `OPERANDS`: after its options and `operands` positional words (`ssh HOST CMD`, `docker exec
  CONTAINER CMD`, `apptainer exec IMAGE CMD`);
- `DASHDASH`: after `--` (`kubectl exec POD -- CMD`, `kubectl run NAME --image=I -- CMD`);
- `PROGRAM`: at the first program the readers know, or after `--` (`numactl --cpunodebind=0
  python3 -m ...`, `srun $SRUN_ARGS vllm serve ...`): these wrappers' options are many, vary by
  version, or come from variables that are placeholders when read statically, so their option
  tables cannot say where the command starts; the program can.

`docker|podman run`'s options mostly take a value: its row names those that do not (the docker
importer's own flag table, which reads the run's options) instead. The shell reader
(reproduce/bash) keeps its own short list of programs that run their arguments, used only to
follow another input script a wrapper runs; it knows no vLLM and no image, and
tests/reproduce/test_wrappers.py keeps it covering this table's local wrappers.
"""

from __future__ import annotations

import os
from dataclasses import dataclass, field

from sparktriage.reproduce.importers.docker_options import KEEP_BOOL, PLAN_BOOL

NAME, OPTIONS, OPERANDS, DASHDASH, PROGRAM = "name", "options", "operands", "--", "program"


@dataclass(frozen=True)
class Wrapper:
    """One program (with its subcommand) that runs another command."""

    names: tuple[str, ...]  # the program's names (basename)
    sub: tuple[str, ...] = ()  # the subcommand words after the name (`exec`, `run`)
    find: str = PROGRAM  # how its command is found (see the module doc)
    operands: int = 0  # positional words before the command (OPERANDS)
    valued: frozenset[str] = frozenset()  # its options that take the next word as value
    # or, for a program most of whose options take a value (`docker run`): those that do not,
    # and the short options written with their value attached (`-eA=1`, `-v/a:/b`)
    flags: frozenset[str] | None = None
    attached: tuple[str, ...] = ()
    # what it says about the command it runs: option (or "operand:N") -> image, env, bind,
    # nodes, gpus, host, pod, container (the node and GPU counts by SLURM's meaning of each
    # option: importers/slurm.py)
    gives: dict[str, str] = field(default_factory=dict)
    where: str = "local"  # local, container, job, remote (another machine or pod)
    # taken off in front of the command it runs; False where the wrapper itself is what is
    # read: a container run (the docker importer), a command string run in another container,
    # machine or pod (read as a script in turn, the wrapper named as where it runs)
    taken_off: bool = True

    @property
    def label(self) -> str:
        return " ".join((self.names[0],) + self.sub)


_SSH_VALUED = frozenset({"-p", "-i", "-l", "-o", "-F", "-J", "-b", "-c", "-E", "-L", "-R", "-D",
                         "-W", "-S", "-m", "-O", "-Q", "-w", "-B", "-e", "-I"})
_EXEC_VALUED = frozenset({"-e", "--env", "-w", "--workdir", "-u", "--user", "--env-file"})
_APPTAINER_VALUED = frozenset({
    "-B", "--bind", "--env", "--env-file", "-H", "--home", "-W", "--workdir", "--mount", "-o",
    "--overlay", "--pwd", "--security", "--network", "--network-args", "--app", "-S",
    "--scratch", "--apply-cgroups", "--hostname", "--fusemount"})
_SRUN_VALUED = frozenset({
    "-N", "--nodes", "-n", "--ntasks", "--ntasks-per-node", "--tasks-per-node", "-G", "--gpus",
    "--gpus-per-node", "--gpus-per-task", "--gres", "-p", "--partition", "-w", "--nodelist",
    "-x", "--exclude", "-J", "--job-name", "-c", "--cpus-per-task", "--cpus-per-gpu", "--mem",
    "--mem-per-cpu", "--mem-per-gpu", "-t", "--time", "-A", "--account", "-q", "--qos", "-C",
    "--constraint", "-D", "--chdir", "-o", "--output", "-e", "--error", "-i", "--input",
    "--export", "--jobid", "--mpi", "-m", "--distribution", "--cpu-bind", "--gpu-bind",
    "--reservation", "--het-group", "--container-image", "--container-mounts",
    "--container-name", "--container-workdir", "--container-env", "--gpus-per-socket",
    "--sockets-per-node"})
_KUBECTL_VALUED = frozenset({
    "-n", "--namespace", "-c", "--container", "--context", "--cluster", "--kubeconfig",
    "--user", "-s", "--server", "--token", "-f", "--filename", "--pod-running-timeout",
    "--request-timeout", "--image", "--env", "--port", "-l", "--labels", "--overrides",
    "--restart", "--image-pull-policy", "--annotations", "--serviceaccount", "--limits",
    "--requests", "--hostport", "--expose", "--dry-run", "-o", "--output", "--timeout"})
_SUDO_VALUED = frozenset({"-u", "-g", "-C", "-D", "-h", "-p", "-U"})
# `docker run` options that take no value: the docker importer's own table
_RUN_FLAGS = frozenset(PLAN_BOOL) | KEEP_BOOL
_RUN_ATTACHED = ("-e", "-v", "-p", "-w", "-u", "-m")
_RUN_GIVES = {"operand:1": "image", "-e": "env", "--env": "env", "-v": "bind", "--volume": "bind",
              "--gpus": "gpus"}

TABLE: tuple[Wrapper, ...] = (
    # containers
    Wrapper(("docker", "podman"), ("run",), OPERANDS, 1, flags=_RUN_FLAGS,
            attached=_RUN_ATTACHED, gives=_RUN_GIVES, where="container", taken_off=False),
    Wrapper(("docker", "podman"), ("container", "run"), OPERANDS, 1, flags=_RUN_FLAGS,
            attached=_RUN_ATTACHED, gives=_RUN_GIVES, where="container", taken_off=False),
    Wrapper(("docker", "podman"), ("exec",), OPERANDS, 1, _EXEC_VALUED, where="container",
            gives={"operand:1": "container", "-e": "env", "--env": "env"}, taken_off=False),
    Wrapper(("apptainer", "singularity"), ("exec",), OPERANDS, 1, _APPTAINER_VALUED,
            where="container", gives={"operand:1": "image", "-B": "bind", "--bind": "bind",
                                      "--env": "env"}),
    Wrapper(("apptainer", "singularity"), ("run",), OPERANDS, 1, _APPTAINER_VALUED,
            where="container", gives={"operand:1": "image", "-B": "bind", "--bind": "bind",
                                      "--env": "env"}),
    Wrapper(("shifter",), (), PROGRAM, 0, frozenset({"--image", "--module", "-V", "--volume"}),
            where="container", gives={"--image": "image"}),
    # Kubernetes: the command runs in a pod, on a node the cluster chooses
    Wrapper(("kubectl",), ("exec",), DASHDASH, 1, _KUBECTL_VALUED, where="remote",
            gives={"operand:1": "pod", "-c": "container", "--container": "container"},
            taken_off=False),
    Wrapper(("kubectl",), ("run",), DASHDASH, 1, _KUBECTL_VALUED, where="remote",
            gives={"operand:1": "pod", "--image": "image", "--env": "env"}, taken_off=False),
    # job launchers
    # (pyxis reads its --container-* options on salloc and sbatch lines too)
    Wrapper(("srun", "salloc", "sbatch"), (), PROGRAM, 0, _SRUN_VALUED, where="job",
            gives={"-N": "nodes", "--nodes": "nodes", "--gres": "gpus", "--gpus": "gpus",
                   "-G": "gpus", "--gpus-per-node": "gpus", "--gpus-per-task": "gpus",
                   "--container-image": "image", "--container-mounts": "bind",
                   "--container-env": "env"}),
    Wrapper(("mpirun", "mpiexec"), (), PROGRAM, where="job"),
    # another machine
    Wrapper(("ssh",), (), OPERANDS, 1, _SSH_VALUED, where="remote", gives={"operand:1": "host"},
            taken_off=False),
    # privilege and process wrappers: the same machine, the same software
    Wrapper(("sudo",), (), OPTIONS, 0, _SUDO_VALUED),
    Wrapper(("exec", "nohup", "time", "command", "builtin", "setsid", "unbuffer"), (), NAME),
    Wrapper(("nice", "numactl", "taskset", "timeout", "stdbuf", "ionice", "chrt", "screen",
             "xargs"), (), PROGRAM),
    # environment managers: `TOOL run ... PROGRAM`
    Wrapper(("uv", "conda", "mamba", "micromamba", "pixi", "poetry", "pipenv", "hatch"),
            ("run",), PROGRAM),
)


def lookup(words: list[str] | tuple[str, ...]) -> Wrapper | None:
    """The table's row for the command `words` (its program and subcommand), or None."""
    if not words:
        return None
    base = os.path.basename(words[0])
    for row in TABLE:
        if base in row.names and tuple(words[1:1 + len(row.sub)]) == row.sub:
            return row
    return None


def row(name: str, sub: tuple[str, ...] = ()) -> Wrapper:
    """The row of one program (and subcommand); KeyError when the table has none."""
    found = lookup([name, *sub])
    if found is None or found.sub != sub:
        raise KeyError(f"{name} {' '.join(sub)}".strip())
    return found


@dataclass(frozen=True)
class Unwrapped:
    """A wrapper's own words read by its row: its options (name -> value, in order), its
    operands, and the command it runs (None where none is given)."""

    wrapper: Wrapper
    options: tuple[tuple[str, str], ...]
    operands: tuple[str, ...]
    command: tuple[str, ...] | None
    operands_at: tuple[int, ...] = ()  # where each operand is in the words read

    def given(self, what: str) -> list[str]:
        """The values the wrapper gives of one kind (`image`, `env`, `bind`, `pod`, ...)."""
        out = [v for k, v in self.options if self.wrapper.gives.get(k) == what]
        out += [v for i, v in enumerate(self.operands, 1)
                if self.wrapper.gives.get(f"operand:{i}") == what]
        return out


def unwrap(words: list[str] | tuple[str, ...]) -> Unwrapped | None:
    """`words` read as its wrapper's row says (rows found by OPERANDS, OPTIONS, DASHDASH and
    NAME; a PROGRAM row needs the readers' programs: servers.strip_wrappers); None when
    `words` is not a wrapper of those rows."""
    found = lookup(words)
    if found is None or found.find == PROGRAM:
        return None
    rest = list(words[1 + len(found.sub):])
    if found.find == NAME:
        return Unwrapped(found, (), (), tuple(rest) or None)
    options: list[tuple[str, str]] = []
    operands: list[str] = []
    at: list[int] = []
    i = 0
    while i < len(rest):
        word = rest[i]
        if found.find == OPERANDS and len(operands) == found.operands:
            # the command starts right after the operands (`ssh HOST CMD`, `docker exec C CMD`)
            command = rest[i + 1:] if word == "--" else rest[i:]
            return _read(found, options, operands, at, command)
        if word == "--":
            return _read(found, options, operands, at, rest[i + 1:])
        if word.startswith("-") and len(word) > 1:
            name, eq, value = word.partition("=")
            if _attached(found, word):
                name, value = word[:2], word[2:]
            elif not eq and _takes_value(found, name):
                value, i = (rest[i + 1] if i + 1 < len(rest) else ""), i + 1
            options.append((name, value))
        elif found.find == OPTIONS:
            return _read(found, options, operands, at, rest[i:])
        else:
            operands.append(word)
            at.append(1 + len(found.sub) + i)
        i += 1
    return _read(found, options, operands, at, [])


def options(found: Wrapper, words: list[str] | tuple[str, ...]) -> list[tuple[str, str]]:
    """Every option among `words` (a wrapper's words after its name) as (name, value), read
    by its row's valued options; other words are passed over (a PROGRAM row's options may sit
    after placeholders of values known only at run time)."""
    out: list[tuple[str, str]] = []
    i = 0
    while i < len(words):
        word = words[i]
        if word.startswith("-") and len(word) > 1 and word != "--":
            name, eq, value = word.partition("=")
            if not eq and _takes_value(found, name):
                value, i = (words[i + 1] if i + 1 < len(words) else ""), i + 1
            out.append((name, value))
        i += 1
    return out


def _read(found: Wrapper, options: list[tuple[str, str]], operands: list[str], at: list[int],
          command: list[str]) -> Unwrapped:
    return Unwrapped(found, tuple(options), tuple(operands), tuple(command) or None, tuple(at))


def _attached(found: Wrapper, word: str) -> bool:
    """A short option written with its value (`-eA=1`) in a row that says which may be."""
    return len(word) > 2 and not word.startswith("--") and word[:2] in found.attached


def _takes_value(found: Wrapper, name: str) -> bool:
    """Does option `name` (written without `=VALUE`) take the next word as its value?"""
    return name in found.valued if found.flags is None else name not in found.flags
