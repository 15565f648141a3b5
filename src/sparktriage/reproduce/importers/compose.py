"""Compose files, read the way `docker compose` reads them: one client deployment.

Read with the bounded YAML reader (templates and merge keys `<<: *x` expand within its node
bound). Then, per service: `extends` (same file or a file inside the input's folder, at most
`compose_include.MAX_EXTENDS` deep), `profiles` (a service with profiles runs only when one of
them is active: `COMPOSE_PROFILES` in the `.env` beside the file; otherwise it is skipped, as
compose does),
`${VAR}` interpolation from that `.env` (compose_vars.py), `env_file:` files, then every key:
mapped onto the deployment (`engine.container_args`, `env`, the plan's own `--gpus all`,
`--ipc host`, `--network host`), noted (the plan does it its own way) or an `unknowns` row with
its line. A service runs `vllm serve`, `ray start`, or both in a `sh -c` script; a Ray head
and its workers (`ray start --address=... --block`, times `deploy.replicas`) are one
multi-node deployment with the Ray backend (cluster.py).
"""

from __future__ import annotations

import os
import re
from dataclasses import dataclass
from pathlib import Path
from typing import Any

from sparktriage.errors import InputError
from sparktriage.reproduce.importers.cluster import Member, assemble_cluster, kept_servers
from sparktriage.reproduce.importers.common import Ctx
from sparktriage.reproduce.importers.compose_include import extends, include_rows
from sparktriage.reproduce.importers.compose_keys import service_keys
from sparktriage.reproduce.importers.compose_vars import Interpolator, inside, read_env_file
from sparktriage.reproduce.importers.container import container_program
from sparktriage.reproduce.importers.nodes import env_block
from sparktriage.reproduce.importers.protocol import ReadInput
from sparktriage.reproduce.model import Imported
from sparktriage.reproduce.shell import split_words
from sparktriage.yamldoc import load_with_lines

PLACEHOLDER = re.compile(r"<supply:([A-Za-z0-9_.-]+)>")
SAFE = "SPARKTRIAGE_SUPPLY_"
SAFE_WORD = re.compile(SAFE + r"([A-Za-z0-9_.-]+?)" + SAFE)
TOP_LEVEL = {"services", "volumes", "networks", "version", "name", "configs", "secrets"}


def _words(value, ctx: Ctx, what: str, line: int | None) -> list[str]:
    if value is None:
        return []
    if isinstance(value, str):
        return split_words(value, f"{ctx.source} ({what})", line or 1)
    if isinstance(value, list) and all(isinstance(v, (str, int, float)) for v in value):
        return [str(v) for v in value]
    raise InputError(f"{ctx.source}:{line or 1}: {what} must be a string or a list of strings")


def _environment(value, known: dict[str, str], ctx: Ctx, service: str,
                 line: int | None) -> dict[str, str]:
    """`environment:` as a map or a list; a bare NAME takes the project's value (.env), else
    it is unknown (the client's shell)."""
    if value is None:
        return {}
    items: list[tuple[str, object]] = []
    if isinstance(value, dict):
        items = [(str(k), v) for k, v in value.items()]
    elif isinstance(value, list):
        for item in value:
            name, eq, val = str(item).partition("=")
            items.append((name, val if eq else None))
    else:
        raise InputError(f"{ctx.source}:{line}: service {service}: environment must be a map "
                         "or a list")
    pairs: dict[str, str] = {}
    for name, item in items:
        if item is None:
            if name in known:
                pairs[name] = known[name]
                continue
            ctx.flag_unknown(name, f"line {line}: service {service}: value taken from the "
                             "client's shell; not known")
            continue
        pairs[name] = str(item).lower() if isinstance(item, bool) else str(item)
    return pairs


def _env_files(value, base: Path, interp: Interpolator, ctx: Ctx, service: str,
               line: int | None) -> dict[str, str]:
    """`env_file:` (a path, a list of paths, or of {path, required}) read in order."""
    entries = value if isinstance(value, list) else [value]
    out: dict[str, str] = {}
    for entry in entries:
        ref = entry.get("path") if isinstance(entry, dict) else entry
        required = entry.get("required", True) if isinstance(entry, dict) else True
        if not isinstance(ref, str):
            ctx.flag_unknown(f"env_file: {entry}", f"line {line}: service {service}: not a path")
            continue
        target = inside(base, ref)
        if target is None:
            ctx.flag_unknown(f"env_file: {ref}", f"line {line}: service {service}: outside "
                             "the input's folder, not read; give its content as an input")
            continue
        if not target.is_file():
            if required:
                ctx.flag_unknown(f"env_file: {ref}", f"line {line}: service {service}: the "
                                 "file was not given; its variables are missing")
            continue
        values = read_env_file(target, ctx, f"env_file: {ref}")
        if values is not None:
            out.update({k: interp.text(v, f"{ref}") for k, v in values.items()})
            ctx.mapped.append(f"services.{service}.env_file {ref} -> env")
    return out


def _interpolated(service: dict, interp: Interpolator, marks: dict, name: str) -> dict:
    """The service with `${...}` filled in; in a `command`/`entrypoint` string a placeholder
    travels as a plain word through the word splitter (`<` would read as a redirection)."""
    out = interp.tree(service, marks, ("services", name))
    for key in ("command", "entrypoint"):
        if isinstance(out.get(key), str):
            out[key] = PLACEHOLDER.sub(lambda m: f"{SAFE}{m.group(1)}{SAFE}", out[key])
    return out


def _restored(words: list[str]) -> list[str]:
    return [SAFE_WORD.sub(lambda m: f"<supply:{m.group(1)}>", w) for w in words]


SHAPES = {"profiles": (list, str), "environment": (dict, list), "env_file": (str, list, dict),
          "volumes": (list,), "ports": (list,), "deploy": (dict,), "ulimits": (dict,),
          "extends": (str, dict), "command": (str, list), "entrypoint": (str, list),
          "image": (str,), "devices": (list,), "cap_add": (list,), "cap_drop": (list,),
          "security_opt": (list,), "labels": (dict, list), "extra_hosts": (list, dict),
          "dns": (list, str), "tmpfs": (list, str), "sysctls": (dict, list),
          "group_add": (list,), "networks": (list, dict), "depends_on": (list, dict)}
SCALARS = ("runtime", "user", "ipc", "network_mode", "shm_size", "pid", "working_dir",
           "platform", "mem_limit", "cpus", "hostname", "container_name", "restart")


def _check_shape(name: str, service: dict, marks: dict, ctx: Ctx) -> None:
    """Compose's own types for the keys this importer reads (compose refuses others too)."""
    for key, value in service.items():
        line = marks.get(("services", name, key), marks.get(("services", name)))
        if value is None:
            continue
        if key in SHAPES and not isinstance(value, SHAPES[key]):
            kinds = " or ".join({dict: "a mapping", list: "a list", str: "a string"}[k]
                                for k in SHAPES[key])
            raise InputError(f"{ctx.source}:{line}: service {name}: {key} must be {kinds}")
        if key in SCALARS and isinstance(value, (dict, list)):
            raise InputError(f"{ctx.source}:{line}: service {name}: {key} must be one value")
        if key == "deploy":
            replicas = value.get("replicas")
            if replicas is not None and (not isinstance(replicas, int) or replicas < 0
                                         or isinstance(replicas, bool)):
                raise InputError(f"{ctx.source}:{line}: service {name}: deploy.replicas must "
                                 "be a count")


def _runs_engine(entry: list[str], command: list[str], image) -> bool:
    text = " ".join(entry + command + [str(image or "")])
    return "vllm" in text or "ray start" in text or ("ray" in entry + command[:1]
                                                     and "start" in command)


@dataclass
class Project:
    """A compose file read: its services, key lines, folder, `.env` values and profiles."""

    path: Path
    services: dict
    marks: dict
    base: Path
    dotenv: dict[str, str]
    interp: Interpolator
    active: set[str]

    def service(self, name: str, ctx: Ctx) -> dict:
        """The service as compose runs it: shape checked, `extends` merged, interpolated."""
        raw = self.services[name]
        if not isinstance(raw, dict):
            raise InputError(f"{ctx.source}:{self.marks.get(('services', name))}: service "
                             f"{name} is not a mapping")
        _check_shape(name, raw, self.marks, ctx)
        service = extends(name, raw, self.services, self.base, ctx)
        _check_shape(name, service, self.marks, ctx)
        return service

    def member(self, name: str, service: dict, ctx: Ctx) -> tuple[Member | None, dict]:
        line = self.marks.get(("services", name))
        try:
            return _service(name, _interpolated(service, self.interp, self.marks, name),
                            self.marks, self.base, self.interp, self.dotenv, ctx)
        except (TypeError, AttributeError, ValueError) as exc:  # a shape compose would refuse
            raise InputError(f"{ctx.source}:{line}: service {name}: a value of a type compose "
                             f"does not take ({type(exc).__name__}: {exc})") from None


def load_project(path: Path, ctx: Ctx,
                 parsed: tuple[Any, dict] | None = None) -> Project:
    """The compose project of `path`; `parsed`: its (data, lines) where the input was read."""
    data, marks = parsed if parsed is not None else load_with_lines(path)
    services = data.get("services") if isinstance(data, dict) else None
    base = Path(os.path.abspath(path)).parent
    included = include_rows(data["include"], base, marks.get(("include",)), ctx) \
        if isinstance(data, dict) and data.get("include") is not None else 0
    if not isinstance(services, dict) or not services:
        more = (f" (its {included} include: file(s) are not merged: give them as inputs)"
                if included else "")
        raise InputError(f"{path}: no services in the compose file{more}")
    for key in data:
        if key == "include":
            continue
        if key not in TOP_LEVEL and not str(key).startswith("x-"):
            ctx.flag_unknown(str(key), f"line {marks.get((key,))}: top-level compose key not "
                             "reproduced")
    dotenv: dict[str, str] = {}
    if (base / ".env").is_file() and inside(base, ".env"):
        dotenv = read_env_file(base / ".env", ctx, ".env") or {}
        ctx.mapped.append(f".env beside {path.name} -> interpolation values")
    active = {p.strip() for p in dotenv.get("COMPOSE_PROFILES", "").split(",") if p.strip()}
    return Project(path, services, marks, base, dotenv, Interpolator(dotenv, ctx), active)


class ComposeImporter:
    """A compose file: a YAML mapping whose `services` is a mapping."""

    kind = "compose"
    role = "compose"

    def claims(self, source: ReadInput) -> bool:
        return isinstance(source.data, dict) and isinstance(source.data.get("services"), dict)

    def read(self, source: ReadInput, ctx: Ctx) -> Imported:
        return _import(load_project(source.path, ctx, source.with_lines()), ctx)


def _import(project: Project, ctx: Ctx) -> Imported:
    members: list[Member] = []
    engines: list[dict] = []
    skipped: list[str] = []
    held: list[str] = []  # services behind a profile none activates
    for name in project.services:
        line = project.marks.get(("services", name))
        service = project.service(name, ctx)
        profiles = service.get("profiles") or []
        profiles = [profiles] if isinstance(profiles, str) else profiles
        if profiles and not set(map(str, profiles)) & project.active:
            ctx.note(f"line {line}: service {name} is in profile(s) {', '.join(map(str, profiles))}"
                     ", none active (COMPOSE_PROFILES in .env): compose does not start it")
            skipped.append(f"{name} ({', '.join(map(str, profiles))})")
            held.append(name)
            continue
        if profiles:
            ctx.mapped.append(f"services.{name}.profiles: active")
        member, eng = project.member(name, service, ctx)
        if member is None:
            continue
        members.append(member)
        engines.append(eng)
    if not members and held:
        # every server is behind a profile: the client started one by its profile or name
        # (`docker compose --profile models up`, `docker compose up SERVICE`)
        ctx.note(f"every vLLM service is in a profile none activates: read as started by "
                 f"profile or by name ({', '.join(skipped)})")
        for name in held:
            member, eng = project.member(name, project.service(name, ctx), ctx)
            if member is not None:
                members.append(member)
                engines.append(eng)
    if not members:
        if any("runs its image's default command" in n for n in ctx.notes):
            ctx.note("no service runs a server command of its own: a script's `docker compose "
                     "run SERVICE vllm serve ...` gives it (read there)")
            return ctx.result()
        more = f"; skipped by profile: {', '.join(skipped)}" if skipped else ""
        raise InputError(f"{ctx.source}: no service runs vLLM or Ray{more}")
    kept = kept_servers(members, ctx, engines)
    members, engines = [members[i] for i in kept], [engines[i] for i in kept]
    result = assemble_cluster(members, ctx)
    deployment = dict(result.deployment)
    deployment["engine"] = {**deployment.get("engine", {}), **_node0_engine(members, engines)}
    return result.model_copy(update={"deployment": deployment})


def _node0_engine(members: list[Member], engines: list[dict]) -> dict:
    """The container settings of node 0: the serve command's service, with the container
    options of the Ray head's service added when they are two services on one node (its
    volumes and shared memory matter to the ranks it hosts)."""
    serving = [i for i, m in enumerate(members) if m.serve is not None]
    heads = [i for i, m in enumerate(members) if m.ray is not None and m.ray.role == "head"]
    first = serving[0] if serving else (heads[0] if heads else 0)
    engine = dict(engines[first])
    args = list(engine.get("container_args") or [])
    for i in heads[:1]:
        if i == first:
            continue
        extra = engines[i].get("container_args") or []
        pairs = {tuple(args[j:j + 2]) for j in range(len(args))}
        j = 0
        while j < len(extra):
            pair = tuple(extra[j:j + 2])
            if extra[j].startswith("-") and j + 1 < len(extra) and \
                    not extra[j + 1].startswith("-"):
                if pair not in pairs and extra[j] != "--entrypoint":
                    args += list(pair)
                j += 2
            else:
                if extra[j] not in args:
                    args.append(extra[j])
                j += 1
    engine["container_args"] = args
    return engine


def _service(name: str, service: dict, marks: dict, base: Path, interp: Interpolator,
             dotenv: dict[str, str], ctx: Ctx) -> tuple[Member | None, dict]:
    """One service as a member of the cluster (None: it runs neither vLLM nor Ray)."""
    line = marks.get(("services", name))
    cmd_line = marks.get(("services", name, "command"), line)
    command = _restored(_words(service.get("command"), ctx, f"services.{name}.command",
                               cmd_line))
    entry = _restored(_words(service.get("entrypoint"), ctx, f"services.{name}.entrypoint",
                             cmd_line))
    image = service.get("image")
    if not _runs_engine(entry, command, image):
        ctx.note(f"line {line}: service {name} does not run vLLM or Ray; not reproduced")
        return None, {}
    if not command and not entry:
        ctx.note(f"line {line}: service {name} runs its image's default command (no model "
                 "given: a base for others, or a service started by hand); not reproduced")
        return None, {}
    program = entry + command
    if program and os.path.basename(program[0]) == "vllm" and program[1:2] != ["serve"]:
        ctx.note(f"line {line}: service {name} runs `vllm {' '.join(program[1:2])}`, not the "
                 "server; not reproduced")
        return None, {}
    if not image:
        raise InputError(f"{ctx.source}:{line}: service {name} has no image (build: is not "
                         "reproduced; give the built image's name)")
    eng: dict = {"image": str(image), "runtime": "docker", "container_args": []}
    replicas = service_keys(name, service, marks, eng, ctx, base)
    mapped = len(ctx.mapped)
    env = {}
    if service.get("env_file"):
        env.update(_env_files(service["env_file"], base, interp, ctx, name,
                              marks.get(("services", name, "env_file"))))
    env.update(_environment(service.get("environment"), dotenv, ctx, name,
                            marks.get(("services", name, "environment"), line)))
    if service.get("environment"):
        ctx.mapped.append(f"services.{name}.environment -> env")
    env_mapped, ctx.mapped[mapped:] = ctx.mapped[mapped:], []  # listed after the command's
    cleared = "" if service.get("entrypoint", 0) in ([], "") else None  # `entrypoint: []`
    # the container's environment is the environment of its `sh -c` script
    serve, ray = container_program(entry[1:] + command, entry[0] if entry else cleared, eng, ctx,
                                   cmd_line or 1, env)
    ctx.mapped += env_mapped
    if serve is not None:
        serve.line = cmd_line
    env.update(eng.pop("_env", {}))
    pin = eng.pop("_gpu_pin", None)  # a GPU reservation's device list (compose_keys._devices)
    if pin is not None:
        env.setdefault("NVIDIA_VISIBLE_DEVICES", pin)
    env = env_block(env, ctx, f"services.{name}.environment")
    return Member(serve, ray, env, cmd_line, replicas, name), eng
