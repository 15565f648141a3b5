"""What a container runs: the serve command and/or the `ray start` inside a container, read
from its command and entrypoint as data (a `sh -c` script is split by container_script.py,
never run). Shared by the docker-run importer (docker.py) and the compose importer
(compose.py), which reach it from both sides (`docker compose run` in a script).
"""

from __future__ import annotations

import os
import re

from sparktriage.errors import InputError
from sparktriage.reproduce import vllm_options
from sparktriage.reproduce.importers.common import Ctx
from sparktriage.reproduce.importers.container_script import pick, split_script
from sparktriage.reproduce.importers.ray_start import RayStart, is_ray_start, parse_ray_start
from sparktriage.reproduce.importers.nodes import find_serve
from sparktriage.reproduce.importers.serve_args import Serve, parse_serve
from sparktriage.reproduce.importers.script_file import script_text


SHELLS = ("sh", "bash", "dash", "zsh")
SHELL_C = ("-c", "-lc", "-ec", "-xc", "-exc", "-ic", "-elc")


def container_command(command: list[str], entrypoint: str | None, engine: dict, ctx: Ctx,
                      line: int) -> Serve:
    """The serve command run in a container (InputError when it runs none)."""
    serve, _ = container_program(command, entrypoint, engine, ctx, line)
    if serve is None:
        raise InputError(f"{ctx.source}:{line}: the container does not run vllm serve")
    return serve


def container_program(command: list[str], entrypoint: str | None, engine: dict, ctx: Ctx,
                      line: int, environment: dict[str, str] | None = None
                      ) -> tuple[Serve | None, RayStart | None]:
    """(the serve command, the `ray start`) a container runs, with the image's entrypoint taken
    into account; a `sh -c` script is read as data (container_script.py), with `environment`
    (the container's own variables) as its environment. One of them is there, else
    InputError."""
    ctx.mounts = binds(engine.get("container_args") or [])
    ctx.image_release = image_release(engine.get("image"))
    try:
        return _program(command, entrypoint, engine, ctx, line, environment or {})
    finally:
        ctx.mounts = []
        ctx.image_release = None


def image_release(image) -> tuple[str, str] | None:
    """(covered release, why) from a vLLM image's tag (`vllm/vllm-openai:v0.11.0`); None for
    other images, whose tags are their own versions (`nvcr.io/nvidia/vllm:25.09-py3` is not
    vLLM 25.09), and a tag outside the covered releases."""
    if not isinstance(image, str) or ":" not in image.rsplit("/", 1)[-1]:
        return None
    name, _, tag = image.rpartition(":")
    if "vllm" not in name.lower() or not re.match(r"v?0\.\d+(\.\d+)*([^\d.]|$)", tag):
        return None
    covered = vllm_options.release_of(tag)
    if covered is None or not vllm_options.covers(tag):
        return None  # a tag of the image's own numbering (`dspark:0.1.1`), not vLLM's
    same = "" if tag.lstrip("v").startswith(covered) else f", read with {covered}'s options"
    return covered, f"the image {image}{same}"


def binds(args: list[str]) -> list[tuple[str, str]]:
    """(host, container) folders of the `-v HOST:CONTAINER` and `--mount` binds in `args`."""
    out = []
    for flag, value in zip(args, args[1:]):
        if flag in ("-v", "--volume") and value.count(":") >= 1:
            host, _, rest = value.partition(":")
            out.append((host, rest.split(":")[0]))
        elif flag == "--mount":
            parts = dict(p.partition("=")[::2] for p in value.split(","))
            source = parts.get("source") or parts.get("src")
            target = parts.get("target") or parts.get("destination") or parts.get("dst")
            if source and target:
                out.append((source, target))
    return out


def _script(words: list[str], ctx: Ctx, line: int) -> str | None:
    """The script text a container runs: `sh -c TEXT`, or a script file the input wrote (a
    here-document) or sent beside it, bind-mounted into the container (`--entrypoint bash IMAGE
    /serve.sh`, `IMAGE /serve.sh`, `--entrypoint /serve.sh IMAGE`: script_file.py); None for
    any other program."""
    shell = bool(words) and os.path.basename(words[0]) in SHELLS
    if shell and len(words) >= 3 and words[1] in SHELL_C:
        return words[2]
    ref = words[1] if shell and len(words) >= 2 else (words[0] if words else "")
    return script_text(ref, ctx, line)


def _program(command: list[str], entrypoint: str | None, engine: dict, ctx: Ctx,
             line: int, environment: dict[str, str]) -> tuple[Serve | None, RayStart | None]:
    words = ([entrypoint] if entrypoint else []) + command
    where = f"{ctx.source}:{line}"
    script = _script(words, ctx, line)
    if script is not None:
        found, ray_cmd = pick(split_script(script, ctx, line, environment), find_serve,
                              ctx, line)
        if found is None and ray_cmd is None:
            raise InputError(f"{where}: the container's script runs neither vllm serve nor "
                             "ray start")
        for cmd in (found, ray_cmd):
            if cmd is not None:
                engine.setdefault("_env", {}).update(cmd.env)
        ray = parse_ray_start(ray_cmd.words, ctx, line) if ray_cmd else None
        ctx.note(f"line {line}: the commands inside `{' '.join(words[:2])}` are run "
                 "directly")
        if found is None:
            return None, ray
        prefix, form, args = find_serve(found.words)
        if entrypoint is None:
            return parse_serve(prefix, form, args, ctx), ray
        # the client replaced the image's entrypoint with a shell (or cleared it), so the
        # image's own (`vllm serve` in vllm/vllm-openai) never ran: the server program is the
        # entrypoint
        engine["container_args"] += ["--entrypoint", prefix[0]]
        ctx.mapped.append(f"line {line}: --entrypoint {entrypoint or '[] (cleared)'} running "
                          f"a script -> "
                          f"--entrypoint {prefix[0]} (the image's own entrypoint is not run, "
                          "as on the client)")
        serve = parse_serve(prefix, form, args, ctx)
        serve.set("engine", "vllm", prefix[1:])
        return serve, ray
    if is_ray_start(words):
        if entrypoint:
            ctx.mapped.append(f"line {line}: --entrypoint {entrypoint} -> ray start (run "
                              "directly)")
        return None, parse_ray_start(words, ctx, line)
    found = find_serve(words)
    if found is not None:
        prefix, form, args = found
        if entrypoint is not None:  # given, or cleared (""): the program runs as written
            engine["container_args"] += ["--entrypoint", entrypoint or prefix[0]]
            prefix = prefix[1:]  # the entrypoint supplies it
            ctx.mapped.append("--entrypoint -> engine.container_args")
        serve = parse_serve(prefix, form, args, ctx)
        if entrypoint is not None:
            serve.set("engine", "vllm", prefix)
        return serve, None
    if entrypoint is None and (not command or command[0] != "serve"):
        # vllm/vllm-openai style images: ENTRYPOINT ["vllm", "serve"], the command is MODEL ...
        ctx.flag_unknown(" ".join(command[:3]) or "(no command)", f"line {line}: assumed the "
                         "image's entrypoint is `vllm serve` (vllm/vllm-openai); written as "
                         "--entrypoint vllm")
        engine["container_args"] += ["--entrypoint", "vllm"]
        serve = parse_serve([], "serve", command, ctx)
        serve.set("engine", "vllm", [])
        return serve, None
    if entrypoint is None and command and command[0] == "serve":
        ctx.flag_unknown("serve ...", f"line {line}: assumed the image's entrypoint is `vllm`; "
                         "written as --entrypoint vllm")
        engine["container_args"] += ["--entrypoint", "vllm"]
        serve = parse_serve([], "serve", command[1:], ctx)
        serve.set("engine", "vllm", [])
        return serve, None
    raise InputError(f"{ctx.source}:{line}: the container does not run vllm serve "
                     f"(entrypoint {entrypoint!r})")
