"""SLURM batch scripts: the `#SBATCH` resources, and the SLURM variables the job's scripts read.

`sbatch` reads `#SBATCH` options from the comment lines before the script's first command (a
`#SBATCH` line after it is a plain comment, as is a misspelt `#SBTACH`). The node count (`-N`,
`--nodes`, the lower end of a range) and the GPUs per node (`--gpus-per-node`, `--gres=gpu:N`,
`--gpus-per-task` times `--ntasks-per-node`, `-G/--gpus` shared over the nodes) give the job's
shape and the values SLURM sets for every task: SLURM_NNODES, SLURM_JOB_NUM_NODES,
SLURM_NTASKS_PER_NODE, SLURM_GPUS_ON_NODE, which the script and the scripts its `srun` lines
run read as given values (an env dump input still wins). Per-task values (SLURM_NODEID,
SLURM_PROCID, SLURM_LOCALID) and the node list (`$(scontrol show hostnames ...)`) differ from
node to node: they stay run-time values, placeholders where a server command needs them. The
`srun` lines and their container wrappers (`apptainer`/`singularity exec`, pyxis
`--container-image`, `shifter --image`) are read by the shell reader (reproduce/bash).
"""

from __future__ import annotations

import os
import re
import shlex
from dataclasses import dataclass

from sparktriage.reproduce.meaning.wrappers import row

MAX_NODES = 1 << 16
_SBATCH = re.compile(r"#SBATCH[ \t]+(.*)\Z")
_NUMBER = re.compile(r"^(\d+)")
# srun options that take a value as the next word (`-N 2`, `--gres gpu:4`): read to find where
# srun's own options end and the program it runs begins (the wrappers' table)
_SRUN_VALUED = row("srun").valued


@dataclass(frozen=True)
class Batch:
    """What the `#SBATCH` header (or an `srun` line) asks for (None where it does not say);
    `asked` is the option that gave the GPUs per node, as written (`--gres=gpu:a100:8`)."""

    nodes: int | None = None
    gpus_per_node: int | None = None
    tasks_per_node: int | None = None
    asked: str | None = None
    unknown: str | None = None  # an option whose GPUs per node the job does not say enough for

    def shape_detail(self) -> str | None:
        if self.nodes is None:
            return None
        gpus = f" x {self.gpus_per_node} GPU(s)" if self.gpus_per_node else ""
        return f"#SBATCH {self.nodes} node(s){gpus}" + (f" from {self.asked}" if gpus and
                                                        self.asked else "")

    def variables(self) -> dict[str, str]:
        """The values SLURM sets in every task of the job."""
        out = {}
        if self.nodes is not None:
            out["SLURM_NNODES"] = out["SLURM_JOB_NUM_NODES"] = str(self.nodes)
        if self.tasks_per_node is not None:
            out["SLURM_NTASKS_PER_NODE"] = str(self.tasks_per_node)
        if self.gpus_per_node is not None:
            out["SLURM_GPUS_ON_NODE"] = out["SLURM_GPUS_PER_NODE"] = str(self.gpus_per_node)
        return out


def _count(value: str) -> int | None:
    """The number in `4`, `2-4` (its lower end), `a100:4` (its last field)."""
    last = value.split(":")[-1].split(",")[0]
    found = _NUMBER.match(last)
    return min(int(found.group(1)), MAX_NODES) if found else None


def _gres_gpus(value: str) -> int | None:
    """GPUs per node in a `--gres` list (`gpu`, `gpu:4`, `gpu:a100:4`, `shard:2,gpu:2(S:0)`):
    a gpu entry's count, 1 where it names none (sbatch's default); None without a gpu entry."""
    for entry in re.sub(r"\([^)]*\)", "", value).split(","):
        fields = entry.strip().split(":")
        if fields[0] != "gpu":
            continue
        found = _NUMBER.match(fields[-1]) if len(fields) > 1 else None
        return min(int(found.group(1)), MAX_NODES) if found else 1
    return None


def _parse(words: list[str], out: dict[str, str], stop: bool = False) -> None:
    """Options `--name=value`, `--name value`, `-Xvalue`, `-X value` into `out` (long names
    without `--`, short ones as `-X`); with `stop`, up to the first word that is no option nor
    an option's value (the program an `srun` line runs)."""
    i = 0
    while i < len(words):
        word = words[i]
        if word.startswith("--"):
            name, eq, value = word[2:].partition("=")
            takes = not stop or f"--{name}" in _SRUN_VALUED
            if not eq and takes and i + 1 < len(words) and not words[i + 1].startswith("-"):
                value, i = words[i + 1], i + 1
            out[name] = value
        elif word.startswith("-") and len(word) >= 2:
            value = word[2:]
            takes = not stop or word[:2] in _SRUN_VALUED
            if not value and takes and i + 1 < len(words):
                value, i = words[i + 1], i + 1
            out[word[:2]] = value
        elif stop:
            return
        i += 1


def options(text: str) -> dict[str, str]:
    """The `#SBATCH` options sbatch reads: long names without `--`, short ones as `-X`."""
    out: dict[str, str] = {}
    for line in text.splitlines():
        stripped = line.strip()
        if not stripped or (stripped.startswith("#") and not _SBATCH.match(stripped)):
            continue
        match = _SBATCH.match(stripped)
        if match is None:
            break  # sbatch stops reading options at the first command
        try:
            words = shlex.split(match.group(1), comments=True)
        except ValueError:
            continue
        _parse(words, out)
    return out


def request(opts: dict[str, str], job_nodes: int | None = None) -> Batch:
    """Nodes, tasks and GPUs per node from sbatch/srun options, by SLURM's meaning of each:
    `--gpus-per-node` and `--gres=gpu[:type]:N` count per node; `--gpus-per-task` counts per
    task (times the tasks on a node: `--ntasks-per-node`, else `--ntasks` over the nodes, else
    one); `--gpus-per-socket` per socket (times `--sockets-per-node`; unknown without it);
    `-G/--gpus` counts for the whole job, spread over its nodes, so some node gets at least the
    rounded-up share. `job_nodes`: the job's nodes, where the options do not say (an `srun`
    line without `-N` runs on all of the job's nodes)."""
    nodes = _count(opts.get("nodes") or opts.get("-N") or "")
    over = nodes or job_nodes
    tasks = _count(opts.get("ntasks-per-node") or opts.get("tasks-per-node") or "")
    all_tasks = _count(opts.get("ntasks") or opts.get("-n") or "")
    candidates = [("gpus-per-node", _count(opts.get("gpus-per-node") or "")),
                  ("gres", _gres_gpus(opts.get("gres") or ""))]
    per_task = _count(opts.get("gpus-per-task") or "")
    if per_task is not None:
        on_node = tasks or (-(-all_tasks // (over or 1)) if all_tasks else 1)
        candidates.append(("gpus-per-task", per_task * on_node))
    per_socket = _count(opts.get("gpus-per-socket") or "")
    sockets = _count(opts.get("sockets-per-node") or "")
    unknown = None
    if per_socket is not None and sockets is not None:
        candidates.append(("gpus-per-socket", per_socket * sockets))
    elif per_socket is not None:
        unknown = (f"--gpus-per-socket={opts['gpus-per-socket']}: GPUs per node are that times "
                   "the sockets per node, which the job does not say (--sockets-per-node); "
                   "the GPUs each node asks for are not known")
    total_key = "gpus" if "gpus" in opts else "-G"
    total = _count(opts.get(total_key) or "")
    if total is not None:
        candidates.append((total_key, -(-total // (over or 1))))
    for key, gpus in candidates:
        if gpus is not None:
            shown = f"-G {opts[key]}" if key == "-G" else f"--{key}={opts[key]}"
            if key == "gpus-per-task" and tasks:
                shown += f" x {tasks} task(s) per node"
            if key == "gpus-per-socket":
                shown += f" x {sockets} socket(s) per node"
            if key in ("gpus", "-G") and over:
                shown += f" over {over} node(s)" + ("" if nodes else " (the job's)")
            return Batch(nodes, gpus, tasks, shown)
    return Batch(nodes, None, tasks, unknown=unknown)


def batch(text: str) -> Batch:
    return request(options(text))


def job_nodes(values: dict[str, str]) -> int | None:
    """The job's node count from the values SLURM sets (`SLURM_JOB_NUM_NODES`)."""
    return _count(values.get("SLURM_JOB_NUM_NODES") or values.get("SLURM_NNODES") or "")


def step(words: list[str] | tuple[str, ...], nodes: int | None = None) -> Batch | None:
    """What an `srun` line's own options ask for (`srun -N1 --gres=gpu:4 vllm serve ...`), up
    to the program it runs, `nodes` the job's (an `srun` without `-N` runs on all of them);
    None for a command without srun."""
    words = list(words)
    at = next((i for i, w in enumerate(words) if os.path.basename(w) == "srun"), None)
    if at is None:
        return None
    out: dict[str, str] = {}
    _parse(words[at + 1:], out, stop=True)
    found = request(out, nodes)
    if found.gpus_per_node is not None:
        return Batch(found.nodes, found.gpus_per_node, found.tasks_per_node,
                     f"srun {found.asked}")
    return found
