"""Shell inputs: a script or terminal paste that starts the server, and a SLURM batch job.

Both are read by the one shell reader (reproduce/bash) through the serve importer (serve.py).
A script is claimed as `docker` when it runs `docker|podman run`, as `serve` when it runs `vllm
serve`, the api_server module, `ray start` or another script; one that starts no server itself
but writes a systemd unit from a here-document and starts it is read through that unit. A
batch script with `#SBATCH` lines is a SLURM job: read as a script with the variables its
header makes SLURM set (an env dump's values win), its shape the job's nodes and GPUs.
"""

from __future__ import annotations

import re

from sparktriage.errors import InputError
from sparktriage.reproduce.importers import slurm
from sparktriage.reproduce.importers.common import Ctx
from sparktriage.reproduce.importers.protocol import ReadInput
from sparktriage.reproduce.importers.serve import import_script
from sparktriage.reproduce.importers.systemd import read_unit, written_unit
from sparktriage.reproduce.model import Imported

_DOCKER = re.compile(r"(?m)^\s*(?:sudo\s+)?(?:\S*/)?(?:docker|podman)\s+(?:container\s+)?run\b")
_SBATCH = re.compile(r"(?m)^#SBATCH[ \t]+-")
_SERVE = re.compile(r"(?m)(?:^|[\s;&|'\"(])(?:\S*/)?vllm\s+serve\b"
                    r"|-m\s+vllm\.entrypoints\.(?:openai\.api_server|api_server|cli\.main)\b"
                    r"|(?:^|[\s;&|'\"])ray\s+start\b")
# a launch script that runs another script (`bash run_cluster.sh IMAGE IP --head ...`)
_RUNS_SCRIPT = re.compile(r"(?m)^\s*(?:sudo\s+)?(?:(?:bash|sh|source|\.)\s+\S+\.sh|\./\S+\.sh)\b")


def _joined(text: str) -> str:
    return re.sub(r"\\\r?\n", " ", text)  # line continuations


def read_shell(source: ReadInput, ctx: Ctx) -> Imported:
    """A script's server commands; else the systemd unit it writes and starts."""
    try:
        return import_script(source.text, ctx, ctx.given, ctx.library)
    except InputError:
        unit = written_unit(source.text, source.source, ctx.given, ctx.library)
        if unit is None:
            raise
    # no server of its own, but a systemd unit it writes from a here-document and starts
    ctx = Ctx(ctx.ref, ctx.secrets, release=ctx.release, given=ctx.given, library=ctx.library,
              read=ctx.read)
    ctx.note(f"line {unit[2]}: the systemd unit written to {unit[1]} from a here-document is "
             "the server (read as a unit; the script's other commands are not listed)")
    return read_unit(unit[0], source.path, ctx)


class DockerImporter:
    """A shell text running `docker|podman run` (read by reproduce/bash)."""

    kind = "docker"
    role = "script"

    def claims(self, source: ReadInput) -> bool:
        return bool(_DOCKER.search(_joined(source.text)))

    def read(self, source: ReadInput, ctx: Ctx) -> Imported:
        return read_shell(source, ctx)


class ServeImporter:
    """A shell text running `vllm serve`, the api_server module, `ray start` or a script."""

    kind = "serve"
    role = "script"

    def claims(self, source: ReadInput) -> bool:
        text = _joined(source.text)
        return bool(_SERVE.search(text) or _RUNS_SCRIPT.search(text))

    def read(self, source: ReadInput, ctx: Ctx) -> Imported:
        return read_shell(source, ctx)


class SlurmImporter:
    """A SLURM batch script: `#SBATCH` lines before its first command (importers/slurm.py)."""

    kind = "slurm"
    role = "script"

    def claims(self, source: ReadInput) -> bool:
        return bool(_SBATCH.search(source.text))

    def read(self, source: ReadInput, ctx: Ctx) -> Imported:
        job = slurm.batch(source.text)
        ctx.given = {**job.variables(), **ctx.given}
        for name, value in sorted(job.variables().items()):
            ctx.mapped.append(f"#SBATCH -> {name}={value} (set by SLURM in every task)")
        if job.unknown:
            ctx.flag_unknown(job.unknown.split(":")[0], f"#SBATCH {job.unknown}")
        part = import_script(source.text, ctx, ctx.given, ctx.library)
        if part.gpus_per_node is not None:  # the server's `srun` line asks for its own
            job = slurm.Batch(job.nodes, part.gpus_per_node, job.tasks_per_node,
                              part.gpus_asked)
        update = {"shape": "a SLURM job", "shape_detail": job.shape_detail()}
        if job.gpus_per_node is not None:
            update.update(gpus_per_node=job.gpus_per_node, gpus_asked=f"#SBATCH {job.asked}"
                          if part.gpus_per_node is None else job.asked)
        return part.model_copy(update=update)
