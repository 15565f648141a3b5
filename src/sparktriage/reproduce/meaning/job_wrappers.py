"""The container a job launcher runs the server in: read from the wrappers before the program.

On a SLURM cluster a server runs inside a container started by the job step, not by `docker
run`: pyxis's `srun --container-image=IMAGE` (an enroot image: `nvcr.io#nvidia/vllm:25.09` is the
registry image `nvcr.io/nvidia/vllm:25.09`), `apptainer|singularity exec|run [options] IMAGE`,
`shifter --image=IMAGE`; on Kubernetes, `kubectl run NAME --image=IMAGE -- ...`. Each is read by
its row of the wrappers' table (meaning/wrappers.py: which option or operand gives the image,
the binds, the variables), as a `docker run` image is read, so that the lab runs the same
software; their binds (`--container-mounts`, `-B/--bind`) and variables (`--env K=V`) become
the `-v` / `-e` options they are. A Docker or OCI name is the deployment's image; a local SIF
file or enroot squashfs cannot be run by docker and is an unknowns row.
"""

from __future__ import annotations

from dataclasses import dataclass

from sparktriage.reproduce.meaning.wrappers import PROGRAM, lookup, options, unwrap

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
    """The image of the first container wrapper in `words` (a whole command line), read by
    its row of the wrappers' table (meaning/wrappers.py)."""
    words = list(words)
    for i in range(len(words)):
        found = lookup(words[i:])
        if found is None or "image" not in found.gives.values() or \
                {"docker", "podman"} & set(found.names):  # a docker run: the importer's
            continue
        if found.find == PROGRAM:  # srun --container-image, shifter --image
            given = options(found, words[i + 1:])
            image = next(((k, v) for k, v in given if found.gives.get(k) == "image"), None)
            if image is None:
                continue
            binds = [v for k, v in given if found.gives.get(k) == "bind"]
            return _wrapped(image[1], f"{found.label} {image[0]}", _pyxis_binds(binds))
        read = unwrap(words[i:])
        images = read.given("image") if read is not None else []
        if images:
            return _wrapped(images[0], found.label,
                            _binds(read.given("bind")) + _env(read.given("env")))
    return None


def _pyxis_binds(values: list[str]) -> list[str]:
    """pyxis's `--container-mounts=SRC:DST[:FLAGS],...` as `-v` binds."""
    return [arg for value in values for bind in value.split(",") if ":" in bind
            for arg in ("-v", bind)]


def _binds(values: list[str]) -> list[str]:
    """apptainer's `-B SRC[:DST],...` as `-v` binds (a path alone is bound to itself)."""
    return [arg for value in values for bind in value.split(",") if bind
            for arg in ("-v", bind if ":" in bind else f"{bind}:{bind}")]


def _env(values: list[str]) -> list[str]:
    return [arg for value in values if "=" in value for arg in ("-e", value)]


def _wrapped(image: str, wrapper: str, args: list[str] | None = None) -> Wrapped | None:
    if not image:
        return None
    local = _local(image) and not image.startswith("docker://")
    return Wrapped(image if local else _docker_name(image), wrapper, not local,
                   tuple(args or ()))
