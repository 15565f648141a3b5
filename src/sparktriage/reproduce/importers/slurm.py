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

import re
import shlex
from dataclasses import dataclass

MAX_NODES = 1 << 16
_SBATCH = re.compile(r"#SBATCH[ \t]+(.*)\Z")
_NUMBER = re.compile(r"^(\d+)")


@dataclass(frozen=True)
class Batch:
    """What the `#SBATCH` header asks for (None where it does not say)."""

    nodes: int | None = None
    gpus_per_node: int | None = None
    tasks_per_node: int | None = None

    def shape_detail(self) -> str | None:
        if self.nodes is None:
            return None
        gpus = f" x {self.gpus_per_node} GPU(s)" if self.gpus_per_node else ""
        return f"#SBATCH {self.nodes} node(s){gpus}"

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
    """The number in `4`, `2-4` (its lower end), `gpu:a100:4` (its last field)."""
    last = value.split(":")[-1].split(",")[0]
    found = _NUMBER.match(last)
    return min(int(found.group(1)), MAX_NODES) if found else None


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
        i = 0
        while i < len(words):
            word = words[i]
            if word.startswith("--"):
                name, eq, value = word[2:].partition("=")
                if not eq and i + 1 < len(words) and not words[i + 1].startswith("-"):
                    value, i = words[i + 1], i + 1
                out[name] = value
            elif word.startswith("-") and len(word) >= 2:
                value = word[2:]
                if not value and i + 1 < len(words):
                    value, i = words[i + 1], i + 1
                out[word[:2]] = value
            i += 1
    return out


def batch(text: str) -> Batch:
    opts = options(text)
    nodes = _count(opts.get("nodes") or opts.get("-N") or "")
    tasks = _count(opts.get("ntasks-per-node") or opts.get("tasks-per-node") or "")
    gpus = _count(opts.get("gpus-per-node") or "")
    gres = opts.get("gres") or ""
    if gpus is None and "gpu" in gres:
        gpus = _count(next((g for g in gres.split(",") if g.startswith("gpu")), ""))
    per_task = _count(opts.get("gpus-per-task") or "")
    if gpus is None and per_task is not None:
        gpus = per_task * (tasks or 1)
    total = _count(opts.get("gpus") or opts.get("-G") or "")
    if gpus is None and total is not None:
        gpus = max(1, total // (nodes or 1))
    return Batch(nodes, gpus, tasks)
