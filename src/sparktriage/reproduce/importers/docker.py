"""`docker run` / `podman run` lines: the container settings and the serve command inside.

Options the launch plan sets itself (`--rm`, `--name`, `--network host`, `--ipc host`,
`--gpus all`) are accounted for there; others that change the container (volumes, `--shm-size`,
ulimits, devices, ...) go to `engine.container_args`; `-e NAME=VALUE` to `env` (secrets
replaced); settings that cannot be reproduced as written (another network mode, published
ports, `--env-file`, `-e NAME` taking the value from the client's shell) are unknown.
"""

from __future__ import annotations

from dataclasses import dataclass, field

from sparktriage.errors import InputError
from sparktriage.redact.detect import secret_name
from sparktriage.reproduce.importers.common import Ctx
from sparktriage.reproduce.importers.compose_run import compose_run, is_compose_run
from sparktriage.reproduce.importers.container import container_program
from sparktriage.reproduce.importers.docker_options import (ENV_OPTS, KEEP_BOOL, KEEP_VALUE,
                                                            PLAN_BOOL, PLAN_SETS)
from sparktriage.reproduce.importers.ray_start import RayStart
from sparktriage.reproduce.importers.serve_args import Serve
from sparktriage.reproduce.shell import assignment

def _split(word: str, args: list[str], i: int) -> tuple[str, str | None, int]:
    if word.startswith("--") and "=" in word:
        name, _, value = word.partition("=")
        return name, value, i
    if len(word) > 2 and word[:2] in ("-e", "-v", "-p", "-w", "-u", "-m") and not word.startswith("--"):
        return word[:2], word[2:], i
    if i < len(args):
        return word, args[i], i + 1
    return word, None, i


@dataclass
class _Run:
    """One container run's settings, as its options are read."""

    engine: dict
    env: dict[str, str] = field(default_factory=dict)
    entrypoint: str | None = None


def parse_docker(words: list[str], ctx: Ctx, line: int) -> tuple[Serve, dict, dict]:
    """(serve, env, engine settings) of one `docker|podman run ...` command that runs vLLM."""
    serve, _, env, engine = parse_container_run(words, ctx, line)
    if serve is None:
        raise InputError(f"{ctx.source}:{line}: the container does not run vllm serve")
    return serve, env, engine


def parse_container_run(words: list[str], ctx: Ctx,
                        line: int) -> tuple[Serve | None, RayStart | None, dict, dict]:
    """(serve, ray start, env, engine settings) of one `docker|podman run ...` command; the
    container runs vllm serve, ray start, or both (`bash -c "ray start ... && vllm serve"`).
    The env holds `-e` values and the script's own `NAME=value` / `export`. `docker compose
    run SERVICE ...` is the compose service's container (compose_run.py)."""
    if is_compose_run(words):
        return compose_run(words, ctx, line)
    runtime = words[0].rsplit("/", 1)[-1]
    args = words[2:] if len(words) > 1 and words[1] == "run" else words[3:]
    run = _Run({"runtime": runtime, "container_args": []})
    i, image = _read_options(args, run, ctx, line)
    if image is None:
        raise InputError(f"{ctx.source}:{line}: the {runtime} run command names no image")
    run.engine["image"] = image
    # the `-e` values are the environment of a `sh -c` script in the container
    serve, ray = container_program(args[i:], run.entrypoint, run.engine, ctx, line, run.env)
    env = {**run.env, **run.engine.pop("_env", {})}
    return serve, ray, env, run.engine


def _read_options(args: list[str], run: _Run, ctx: Ctx, line: int) -> tuple[int, str | None]:
    """The run's options, up to its image: (the index after the image, the image)."""
    i = 0
    while i < len(args):
        word = args[i]
        i += 1
        if not word.startswith("-"):
            return i, word
        if word in PLAN_BOOL:
            ctx.note(f"line {line}: {word}: {PLAN_BOOL[word]}")
            continue
        if word in KEEP_BOOL:
            run.engine["container_args"].append(word)
            ctx.mapped.append(f"{word} -> engine.container_args")
            continue
        name, value, i = _split(word, args, i)
        if value is None:
            raise InputError(f"{ctx.source}:{line}: {name} needs a value")
        _option(name, value, run, ctx, line)
    return i, None


def _option(name: str, value: str, run: _Run, ctx: Ctx, line: int) -> None:
    """One option with its value onto the run's env, container arguments or entrypoint."""
    if name in ENV_OPTS:
        _env_option(name, value, run, ctx, line)
    elif name == "--gpus" and gpu_pin(value.strip("'\"")) is not None:
        pinned = gpu_pin(value.strip("'\""))
        run.env.setdefault("NVIDIA_VISIBLE_DEVICES", pinned)
        ctx.mapped.append(f"{name} {value} -> env.NVIDIA_VISIBLE_DEVICES={pinned} (what the "
                          "NVIDIA runtime makes of it; mapped onto each lab node's GPUs) and the "
                          "plan's --gpus all")
    elif name in PLAN_SETS:
        _plan_sets(name, value, ctx, line)
    elif name == "--env-file":
        ctx.flag_unknown(f"{name} {value}", f"line {line}: env file not read; give its "
                         "content as an input (an env dump) to include its variables")
    elif name == "--name":
        ctx.note(f"line {line}: --name {value}: the plan names containers itself")
    elif name in ("-p", "--publish"):
        ctx.flag_unknown(f"{name} {value}", f"line {line}: published port not needed with "
                         "--network host; not reproduced")
    elif name == "--entrypoint":
        run.entrypoint = value
    elif name in KEEP_VALUE:
        ctx.check_variables(value, f"line {line}: {name}")
        run.engine["container_args"] += [name, ctx.secrets.text(value)]
        ctx.mapped.append(f"{name} -> engine.container_args")
    else:
        ctx.flag_unknown(f"{name} {value}", f"line {line}: container option not known; kept "
                         "in engine.container_args")
        run.engine["container_args"] += [name, ctx.secrets.text(value)]


def _env_option(name: str, value: str, run: _Run, ctx: Ctx, line: int) -> None:
    """`-e NAME=VALUE` into env; `-e NAME` takes the client's shell value: a placeholder for a
    secret, unknown otherwise."""
    pair = assignment(value)
    if pair:
        run.env[pair[0]] = pair[1]
        ctx.mapped.append(f"{name} {pair[0]} -> env.{pair[0]}")
    elif secret_name(value):
        run.env[value] = ctx.secrets.declare(value, f"-e {value} (value from the client's shell)")
        ctx.mapped.append(f"{name} {value} -> env.{value} (a secret, now a placeholder)")
    else:
        ctx.flag_unknown(f"{name} {value}", f"line {line}: takes the value of {value} from the "
                         "client's shell; not known, not in env")


def gpu_pin(value: str) -> str | None:
    """The device list a docker `--gpus` value pins (`device=4,5` -> "4,5"; a count `2` -> the
    runtime's first two, "0,1"), or None (`all`, or a value that pins no list)."""
    value = value.strip()
    if value.startswith("device="):
        devices = value[len("device="):].strip("'\"")
        return devices or None
    if value.isdigit() and 0 < int(value) <= 64:
        return ",".join(str(i) for i in range(int(value)))
    return None


def _plan_sets(name: str, value: str, ctx: Ctx, line: int) -> None:
    """An option the plan always sets itself: mapped when it says the same, else unknown."""
    option, wanted, otherwise = PLAN_SETS[name]
    given = value.strip("'\"") if name == "--gpus" else value
    if given != wanted:
        ctx.flag_unknown(f"{name} {value}", f"line {line}: {otherwise}")
    else:
        ctx.mapped.append(f"{name} {wanted} -> the plan's {option} {wanted}")


def is_container_run(words: list[str]) -> bool:
    if len(words) < 2:
        return False
    tool = words[0].rsplit("/", 1)[-1]
    return tool in ("docker", "podman") and (words[1] == "run" or words[1:3] == ["container", "run"])
