"""The container a job launcher runs the server in: read from the wrappers before the program.

On a SLURM cluster a server runs inside a container started by the job step, not by `docker
run`: pyxis's `srun --container-image=IMAGE` (an enroot image: `nvcr.io#nvidia/vllm:25.09` is the
registry image `nvcr.io/nvidia/vllm:25.09`), `apptainer|singularity exec|run [options] IMAGE`,
`shifter --image=IMAGE`. The shell reader takes these wrappers off to find the program
(meaning/servers.py); this reads what they say about the image, as a `docker run` image is read,
so that the lab runs the same software, and their binds (`--container-mounts`, `-B/--bind`) and
variables (`--env K=V`) as the `-v` / `-e` options they are. A Docker or OCI name is the deployment's image; a local
SIF file or enroot squashfs cannot be run by docker and is an unknowns row.
"""

from __future__ import annotations

import os
from dataclasses import dataclass

_CONTAINER_RUNNERS = ("apptainer", "singularity")
# apptainer/singularity exec options that take a value
_VALUED = {"-B", "--bind", "--env", "--env-file", "-H", "--home", "-W", "--workdir", "--mount",
           "-o", "--overlay", "--pwd", "--security", "--network", "--network-args", "--app",
           "-S", "--scratch", "--apply-cgroups", "--hostname", "--fusemount"}


@dataclass(frozen=True)
class Wrapped:
    """The image a job wrapper runs the server in, and which wrapper said so."""

    image: str
    wrapper: str  # "srun --container-image", "apptainer exec", "shifter --image"
    runnable: bool  # a registry image docker can pull (not a local file)
    args: tuple[str, ...] = ()  # its binds and variables as `docker run` options


def _docker_name(image: str) -> str:
    """An enroot/pyxis or `docker://` reference as a docker image name."""
    image = image.removeprefix("docker://")
    return image.replace("#", "/", 1) if "#" in image else image


def _local(image: str) -> bool:
    return image.endswith((".sif", ".sqsh", ".simg", ".img")) or image.startswith(("/", "./",
                                                                                    "~"))


def container_of(words: list[str] | tuple[str, ...]) -> Wrapped | None:
    """The image of the first container wrapper in `words` (a whole command line)."""
    words = list(words)
    for i, word in enumerate(words):
        base = os.path.basename(word)
        name, eq, value = word.partition("=")
        if name == "--container-image" and i and _launcher(words[:i]):
            image = value if eq else (words[i + 1] if i + 1 < len(words) else "")
            return _wrapped(image, "srun --container-image", _pyxis_args(words))
        if base == "shifter" or (name == "--image" and i and
                                 os.path.basename(words[i - 1]) == "shifter"):
            for item in words[i + 1:]:
                key, eq2, val = item.partition("=")
                if key == "--image" and eq2:
                    return _wrapped(val, "shifter --image")
        if base in _CONTAINER_RUNNERS and i + 1 < len(words) and words[i + 1] in ("exec",
                                                                                   "run"):
            image, args = _runner_image(words[i + 2:])
            if image:
                return _wrapped(image, f"{base} {words[i + 1]}", args)
    return None


def _launcher(before: list[str]) -> bool:
    return any(os.path.basename(w) in ("srun", "salloc", "sbatch") for w in before)


def _pyxis_args(words: list[str]) -> list[str]:
    """pyxis's `--container-mounts=SRC:DST[:FLAGS],...` as `-v` binds."""
    out = []
    for i, word in enumerate(words):
        name, eq, value = word.partition("=")
        if name == "--container-mounts":
            value = value if eq else (words[i + 1] if i + 1 < len(words) else "")
            out += [arg for bind in value.split(",") if ":" in bind for arg in ("-v", bind)]
    return out


def _runner_image(args: list[str]) -> tuple[str, list[str]]:
    """(IMAGE, its binds and variables as docker options) of `apptainer exec [options] IMAGE
    COMMAND...`."""
    out: list[str] = []
    i = 0
    while i < len(args):
        arg = args[i]
        if arg.startswith("-"):
            name, eq, value = arg.partition("=")
            if name in _VALUED and not eq:
                value = args[i + 1] if i + 1 < len(args) else ""
            if name in ("-B", "--bind"):
                out += [a for bind in value.split(",") if bind for a in ("-v", bind if ":" in
                                                                         bind else
                                                                         f"{bind}:{bind}")]
            elif name == "--env" and "=" in value:
                out += ["-e", value]
            i += 1 if eq or name not in _VALUED else 2
            continue
        return arg, out
    return "", out


def _wrapped(image: str, wrapper: str, args: list[str] | None = None) -> Wrapped | None:
    if not image:
        return None
    local = _local(image) and not image.startswith("docker://")
    return Wrapped(image if local else _docker_name(image), wrapper, not local,
                   tuple(args or ()))
