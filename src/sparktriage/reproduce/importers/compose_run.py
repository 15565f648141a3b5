"""`docker compose run SERVICE [COMMAND...]` in a launch script: the compose service's container
(image, binds, environment, every key as compose.py reads it) with its command replaced.

The compose file is the one `-f` names, else `compose.yaml`, `compose.yml`,
`docker-compose.yml` or `docker-compose.yaml` in the script's folder (compose looks in the
folder it is run from; the script's is the best guess, and the file must have been given beside
it). Options of `run`: `-e NAME=VALUE` adds to the service's environment, `--entrypoint`
replaces its entrypoint, `-v`, `-u`, `-w` become container arguments; `--rm`, `-d`,
`--service-ports`, `--no-deps`, `-T` are noted. Unknowns and notes about the compose file name
the compose file and its lines.
"""

from __future__ import annotations

import os
import re
from pathlib import Path

from sparktriage.errors import InputError
from sparktriage.reproduce.importers.common import Ctx
from sparktriage.reproduce.importers.compose_vars import inside
from sparktriage.reproduce.importers.ray_start import RayStart
from sparktriage.reproduce.importers.serve_args import Serve
from sparktriage.reproduce.model import InputRef
from sparktriage.reproduce.shell import assignment

GLOBAL_VALUE = {"-f", "--file", "-p", "--project-name", "--project-directory", "--profile",
                "--env-file", "--ansi", "--progress", "--parallel"}
RUN_VALUE = {"-e", "--env", "--entrypoint", "-v", "--volume", "--name", "-u", "--user", "-w",
             "--workdir", "-l", "--label", "-p", "--publish", "--pull", "--cap-add",
             "--cap-drop", "--env-from-file"}
ARGS = {"-v": "-v", "--volume": "-v", "-u": "--user", "--user": "--user", "-w": "--workdir",
        "--workdir": "--workdir", "--cap-add": "--cap-add", "--cap-drop": "--cap-drop",
        "-l": "--label", "--label": "--label"}
NAMES = ("compose.yaml", "compose.yml", "docker-compose.yml", "docker-compose.yaml")


def _after_tool(words: list[str]) -> list[str] | None:
    tool = os.path.basename(words[0]) if words else ""
    if tool == "docker-compose":
        return words[1:]
    if tool in ("docker", "podman") and len(words) > 1 and words[1] == "compose":
        return words[2:]
    return None


def _globals(rest: list[str]) -> tuple[list[str], int]:
    """(the -f files, the index of the subcommand)."""
    files, i = [], 0
    while i < len(rest) and rest[i].startswith("-"):
        name, eq, value = rest[i].partition("=")
        if name in GLOBAL_VALUE and not eq:
            value = rest[i + 1] if i + 1 < len(rest) else ""
            i += 1
        if name in ("-f", "--file"):
            files.append(value)
        i += 1
    return files, i


def is_compose_run(words: list[str]) -> bool:
    rest = _after_tool(words)
    if rest is None:
        return False
    _, i = _globals(rest)
    return i < len(rest) and rest[i] == "run"


def _compose_file(files: list[str], ctx: Ctx, line: int) -> Path:
    base = Path(os.path.abspath(ctx.source)).parent
    for ref in files or list(NAMES):
        found = inside(base, ref) or inside(base, Path(ref).name)
        if found is not None and found.is_file():
            return found
    named = files[0] if files else "compose.yaml / docker-compose.yml"
    raise InputError(f"{ctx.source}:{line}: docker compose run: the compose file ({named}) was "
                     "not given beside the script; give it as an input in the same folder")


def compose_run(words: list[str], ctx: Ctx,
                line: int) -> tuple[Serve | None, RayStart | None, dict, dict]:
    """(serve, ray start, env, engine) of `docker compose run ... SERVICE [COMMAND...]`."""
    from sparktriage.reproduce.importers.compose import load_project
    rest = _after_tool(words) or []
    files, i = _globals(rest)
    i += 1  # "run"
    env: dict[str, str] = {}
    args: list[str] = []
    entrypoint = None
    while i < len(rest) and rest[i].startswith("-"):
        name, eq, value = rest[i].partition("=")
        if name in RUN_VALUE and not eq:
            value = rest[i + 1] if i + 1 < len(rest) else ""
            i += 1
        i += 1
        if name in ("-e", "--env"):
            pair = assignment(value)
            if pair:
                env[pair[0]] = pair[1]
            else:
                ctx.flag_unknown(f"-e {value}", f"line {line}: docker compose run takes {value} "
                                 "from the client's shell; not known")
        elif name == "--entrypoint":
            entrypoint = value
        elif name in ARGS:
            args += [ARGS[name], value]
            ctx.mapped.append(f"line {line}: docker compose run {name} -> engine.container_args")
        elif name in ("-p", "--publish"):
            ctx.flag_unknown(f"{name} {value}", f"line {line}: published port not needed with "
                             "--network host; not reproduced")
        else:
            ctx.note(f"line {line}: docker compose run {rest[i - 1] if not eq else name}: the "
                     "plan runs the container itself")
    if i >= len(rest):
        raise InputError(f"{ctx.source}:{line}: docker compose run names no service")
    service_name, command = rest[i], rest[i + 1:]
    path = _compose_file(files, ctx, line)
    sub = Ctx(InputRef(path=str(path), kind="compose"), ctx.secrets, release=ctx.release,
              read=ctx.read)
    known = ctx.read.get(os.path.abspath(path))
    project = load_project(path, sub, known.with_lines() if known is not None else None)
    if service_name not in project.services:
        raise InputError(f"{ctx.source}:{line}: docker compose run {service_name}: no such "
                         f"service in {path.name} ({', '.join(map(str, project.services))})")
    service = dict(project.service(service_name, sub))
    if command:
        service["command"] = list(command)
    if entrypoint is not None:
        service["entrypoint"] = [entrypoint]
    member, engine = project.member(service_name, service, sub)
    ctx.unknown.extend(sub.unknown)
    ctx.notes.extend(sub.notes)
    ctx.mapped.extend(f"{path.name}: {m}" for m in sub.mapped)
    if member is None:
        raise InputError(f"{ctx.source}:{line}: docker compose run {service_name}: the service "
                         "runs neither vllm serve nor ray start")
    engine["container_args"] = list(engine.get("container_args") or []) + args
    ctx.mapped.append(f"line {line}: docker compose run {service_name} -> the compose "
                      f"service's container ({path.name}), its command replaced")
    return member.serve, member.ray, {**member.env, **env}, engine


_RUN = re.compile(r"(?:\bdocker\s+compose|\bdocker-compose|\bpodman\s+compose)"
                  r"((?:\s+(?:-f|--file|-p|--project-name|--env-file|--profile)[=\s]+\S+"
                  r"|\s+--?[A-Za-z][\w-]*)*)\s+run\b")
_FILE = re.compile(r"(?:-f|--file)[=\s]+(\S+)")


def composes_run(scripts: list[str]) -> set[str]:
    """The compose file names the scripts' `docker compose run` commands use (their `-f`, else
    compose's default names): such a compose input is read through the run, not on its own
    (its default command is replaced)."""
    names: set[str] = set()
    for text in scripts:
        for match in _RUN.finditer(text.replace("\\\n", " ")):
            files = [Path(f.strip("'\"")).name for f in _FILE.findall(match.group(1))]
            names |= set(files) if files else set(NAMES)
    return names
