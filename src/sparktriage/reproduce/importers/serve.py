"""Shell scripts that start the server: `vllm serve`, the api_server module, container runs,
`ray start`, read statically as bash (reproduce/bash: nothing runs).

Every command the script could run is found (both branches of an `if`/`case` unless known
values choose one; functions where they are called); wrappers are taken off; other commands
are ignored with their line. Values known only at run time are `<supply:NAME>` placeholders
with their line. Serve arguments are mapped by `serve_args.parse_serve`, container runs by
the docker importer's `parse_container_run` (which reads `docker compose run` too); the node
commands make one deployment (`cluster.assemble_cluster`): a Ray head and `ray start
--address` workers make the Ray backend with a node each.
"""

from __future__ import annotations

import re

from sparktriage.errors import InputError
from sparktriage.reproduce.bash import Hole, Simple, read_script
from sparktriage.reproduce.bash.transcript import commands_of
from sparktriage.reproduce.meaning.servers import Server, servers
from sparktriage.reproduce.importers import apart, slurm
from sparktriage.reproduce.importers.cluster import Member, alone, assemble_cluster
from sparktriage.reproduce.importers.common import Ctx
from sparktriage.reproduce.importers.docker import parse_container_run
from sparktriage.reproduce.importers.nodes import env_block, find_serve
from sparktriage.reproduce.importers.ray_start import parse_ray_start
from sparktriage.reproduce.meaning import job_wrappers
from sparktriage.reproduce.meaning.harmless import in_script
from sparktriage.reproduce.importers.serve_args import parse_serve
from sparktriage.reproduce.model import Imported
from sparktriage.reproduce.secrets import PREFIX

_PLACEHOLDER = re.compile(re.escape(PREFIX) + r"([A-Za-z0-9_.-]+)>")
_CONTROL = re.compile(r"[\x00-\x08\x0a-\x1f\x7f]")
_JSON_CONTROL = re.compile(r"[\x00-\x08\x0b-\x1f\x7f]")
_SHELL_C = re.compile(r"^-[a-z]*c\Z")  # -c, -lc, -ec


def import_script(text: str, ctx: Ctx, given: dict[str, str] | None = None,
                  library: dict[str, str] | None = None) -> Imported:
    """A shell line or script: its server commands (one node each), the rest ignored.

    `given`: variables the client supplied (env dumps), which win over the script's defaults;
    `library`: the other scripts the client gave (file name -> text), read where this one runs
    them (`bash run_cluster.sh IMAGE IP --head ...`). A refusal's text has secrets replaced.
    """
    try:
        return _import(text, ctx, given, library)
    except InputError as exc:
        exc.message = ctx.secrets.text(exc.message)  # the construct it names may hold one
        raise


def _import(text: str, ctx: Ctx, given: dict[str, str] | None,
            library: dict[str, str] | None) -> Imported:
    text, prompts = commands_of(text)
    if prompts:
        ctx.note(f"a terminal paste: the {prompts} command(s) typed at its prompts are read, "
                 "its output lines are not")
    script = read_script(text, ctx.source, given, library)
    ignored: list[Simple] = []
    holes = list(script.holes)
    found = servers(script.commands, ctx.source, ignored, holes, given)
    if not found:
        # run without arguments it starts no server (`./manage.sh` prints its usage): read
        # it again with its arguments unknown, so that the subcommand that starts the server
        # (`./manage.sh start`) is among the branches read
        again = read_script(text, ctx.source, given, library, args_unknown=True)
        ignored_again: list[Simple] = []
        holes_again = list(again.holes)
        found_again = servers(again.commands, ctx.source, ignored_again, holes_again, given)
        if found_again:
            ctx.note("without arguments the script starts no server: read with its arguments "
                     "unknown, the branches they choose included")
            script, ignored, holes, found = again, ignored_again, holes_again, found_again
    ctx.files = dict(script.files)  # a `--config F` the script writes itself (bash/files.py)
    for note in script.notes:
        ctx.note(note)
    for row in sorted(set(script.exports)):
        ctx.mapped.append(f"line {row}: export -> env")
    if not found:
        if script.errors:
            line, bad = script.errors[0]
            raise InputError(f"{ctx.source}:{line}: {_construct(bad)}; no server command "
                             "could be read")
        for command in ignored:  # a command whose program is not known statically
            name = _PLACEHOLDER.fullmatch(command.words[0])
            if name:
                what = next((h.what for h in holes if h.name == name.group(1)), "not known")
                raise InputError(f"{ctx.source}:{command.line}: the program of `"
                                 f"{command.source[:60]}` is not known statically ({what}); no "
                                 "server command could be read")
        raise InputError(f"{ctx.source}: no server command found (vllm serve, python -m "
                         "vllm.entrypoints.openai.api_server, docker/podman run, ray start)")
    for server in found:
        _readable(server, script.errors, ctx)
    _holes(found, holes, ctx)
    _ignored(ignored, ctx)
    members: list[Member] = []
    engine: dict = {}
    for server in found:
        for note in server.command.notes:
            ctx.note(f"{_at(server.command)}: {note}")
        members.append(_member(server, engine, ctx))
        where = _where(server)
        if where:
            ctx.note(f"{_at(server.command)}: server command found {where}")
    members = _alternatives(members, found, engine, ctx)
    result = assemble_cluster(members, ctx)
    # the server command may sit in another input script this one runs (`srun ... ./head.sh`)
    other_file = next((f.command.file for f in found if f.kind != "ray" and f.command.file
                       and f.command.line == result.line), None)
    if other_file:
        result = result.model_copy(update={"command_at": f"{other_file}:{result.line}"})
    deployment = dict(result.deployment)
    if engine:
        deployment["engine"] = {**engine, **deployment.get("engine", {}),
                                **{k: v for k, v in engine.items()
                                   if k in ("image", "runtime", "container_args")}}
    return result.model_copy(update={"deployment": deployment})


def _at(command: Simple) -> str:
    """`line N`, or `run_cluster.sh line N` for a command of another input script."""
    return f"{command.file} line {command.line}" if command.file else f"line {command.line}"


def _ignored(ignored: list[Simple], ctx: Ctx) -> None:
    """Commands that are not the server, each once with its line: output and waiting are
    notes; anything that may change the machine (cleanup, installs, sysctl, ...) is unknown."""
    seen = set()
    for command in ignored:
        said = in_script(command.words)
        if said == "quiet" or (command.line, command.source) in seen:
            continue
        seen.add((command.line, command.source))
        if said == "note":
            ctx.note(f"{_at(command)}: ignored: {command.source[:120]}")
        else:
            ctx.flag_unknown(command.source[:300], f"{_at(command)}: ignored: not a server "
                             "command; not reproduced (run it on the lab yourself if needed)")


def _construct(bad: str) -> str:
    """A syntax error's construct in words."""
    if bad[:1] in ("'", '"', "`"):
        return f"unbalanced {bad[0]} quote"
    return f"cannot parse `{bad[:60]}` as bash"


def _readable(server: Server, errors: list[tuple[int, str]], ctx: Ctx) -> None:
    """Refuse (one line, naming the construct) when the server's own argv cannot be read."""
    command = server.command
    for line, bad in errors:
        if command.line <= line <= command.end_line + 1:
            raise InputError(f"{ctx.source}:{line}: {_construct(bad)}: the server command "
                             f"of line {command.line} cannot be read")
    words = server.words
    for index, word in enumerate(words + tuple(server.env.values())):
        if 0 < index < len(words) and _SHELL_C.match(words[index - 1]):
            continue  # a container's `sh -c` script: read by the docker importer
        control = _JSON_CONTROL if word.lstrip()[:1] in ("{", "[") else _CONTROL
        if control.search(word):
            raise InputError(f"{ctx.source}:{command.line}: a quoted value of the server command "
                             "contains a newline or a control character; write it on one line")


def _holes(found: list[Server], holes: list[Hole], ctx: Ctx) -> None:
    """Placeholders in the server commands: declared (to supply) and listed with their line;
    script arguments left out, listed."""
    used = set()
    for server in found:
        for word in server.words + tuple(server.env.values()) + \
                tuple(server.command.exported.values()):
            used.update(_PLACEHOLDER.findall(word))
    lines = {s.command.line for s in found}
    seen = set()
    for hole in holes:
        what = ctx.secrets.text(hole.what)  # a construct's text may hold a secret
        key = (hole.name, hole.line, what)
        if key in seen:
            continue
        seen.add(key)
        if hole.dropped and hole.line in lines:
            ctx.flag_unknown(what, f"line {hole.line}: {what}")
        elif not hole.dropped and hole.name in used:
            ctx.secrets.declare(hole.name, f"{ctx.source}:{hole.line}: {what}")
            ctx.flag_unknown(f"{PREFIX}{hole.name}>", f"line {hole.line}: {what}; not "
                             "known without running the script: a placeholder to supply on the "
                             "lab (or give the value in an env dump input)")


def _where(server: Server) -> str:
    parts = []
    function = server.command.function
    if function:
        parts.append(f"in {function}" if function.endswith(".sh") else f"in function {function}")
    if server.via:
        parts.append(f"in {server.via}" if server.via.startswith("the ")
                     else f"inside `{server.via}`")
    if server.command.branch:
        parts.append("in branch " + " > ".join(server.command.branch))
    return ", ".join(parts)


def _member(server: Server, engine: dict, ctx: Ctx) -> Member:
    """One server command as a node member: parse_serve, the docker importer's container
    run, or ray_start's `ray start`."""
    command = server.command
    serve, ray = None, None
    try:
        if server.kind == "container":
            serve, ray, env, run_engine = parse_container_run(list(server.words), ctx,
                                                              command.line)
            if serve is not None or not engine:
                engine.update(run_engine)
            if command.exported:
                ctx.note(f"line {command.line}: variables the script exports are not passed "
                         "into the container: " + ", ".join(sorted(command.exported)))
        elif server.kind == "ray":
            ray = parse_ray_start(list(server.words), ctx, command.line)
            env = {**command.exported, **server.env}
        else:
            found = find_serve(list(server.words))
            if found is None:
                raise InputError(f"{ctx.source}:{command.line}: not a vllm serve command "
                                 f"({' '.join(server.words[:3])})")
            serve = parse_serve(*found, ctx)
            env = {**command.exported, **server.env}
            _job_container(command, engine, ctx)
            _job_gpus(command, ctx)
    except InputError as exc:
        raise _located(exc, command, ctx) from None
    if serve is not None:
        serve.line = command.line
    return Member(serve, ray, env_block(env, ctx, f"line {command.line}"), command.line,
                  name=command.source[:80])


def _job_container(command: Simple, engine: dict, ctx: Ctx) -> None:
    """The image a job wrapper (`srun --container-image`, `apptainer exec`, `shifter`) runs
    the server in, as a `docker run` image is read."""
    wrapped = job_wrappers.container_of(command.words)
    if wrapped is None or engine.get("image"):
        return
    if wrapped.runnable:
        engine.update(image=wrapped.image, runtime="docker")
        engine["container_args"] = list(engine.get("container_args") or []) + list(wrapped.args)
        ctx.mapped.append(f"line {command.line}: {wrapped.wrapper} {wrapped.image} -> "
                          "engine.image (run with docker on the lab)"
                          + (", its binds and variables -> engine.container_args"
                             if wrapped.args else ""))
    else:
        ctx.flag_unknown(f"{wrapped.wrapper} {wrapped.image}", f"line {command.line}: a local "
                         "container file docker cannot run; give the registry image it was "
                         "built from as the deployment's engine.image")


def _job_gpus(command: Simple, ctx: Ctx) -> None:
    """The GPUs per node the server's `srun` line asks for (its own options win over the
    job's `#SBATCH` header, as in SLURM), compared with the lab's nodes by reproduce/place/devices.py."""
    asked = slurm.step(command.words, slurm.job_nodes(ctx.given))
    if asked is not None and asked.unknown:
        ctx.flag_unknown(asked.unknown.split(":")[0], f"line {command.line}: srun "
                         f"{asked.unknown}")
    if asked is not None and asked.gpus_per_node is not None:
        ctx.gpu_ask = (asked.gpus_per_node, asked.asked or "srun")
        ctx.mapped.append(f"line {command.line}: {asked.asked} -> {asked.gpus_per_node} GPU(s) "
                          "per node")


def _located(exc: InputError, command: Simple, ctx: Ctx) -> InputError:
    """A refusal from the argument mapper, at the command's line; a placeholder in it named
    with the construct it came from."""
    message = exc.message
    for name in _PLACEHOLDER.findall(message):
        where = ctx.secrets.names.get(name, "")
        return InputError(f"{ctx.source}:{command.line}: {message.split(': ', 1)[-1]}: the value "
                          f"is {PREFIX}{name}> ({where or 'not known statically'}); give it in "
                          "an env dump input or write it in the script")
    if message.startswith(f"{ctx.source}:"):
        return exc
    return InputError(f"{ctx.source}:{command.line}: {message}")


def _alternatives(members: list[Member], found: list[Server], engine: dict,
                  ctx: Ctx) -> list[Member]:
    """Several serve commands none of which is a node of a multi-node run (`--headless`,
    `--node-rank`, `--nnodes`, Ray): alternatives (branches of an `if`/`case`, or commands
    run one after the other), not nodes: the first is used, the others listed. The same
    command found twice counts once."""
    unique: list[Member] = []
    for member in members:
        if not any(_same(m, member) for m in unique):
            unique.append(member)
    serves = [m.serve for m in unique if m.serve is not None]
    multi = any(s.headless or s.node_rank is not None or s.nnodes for s in serves) or \
        any(m.ray for m in unique)
    if multi or len(serves) < 2:
        return unique
    first = next(m for m in unique if m.serve is not None)
    branches = {m.line: f.command.branch for m in unique for f in found
                if f.command.line == m.line}
    background = {f.command.line for f in found
                  if any("background" in note for note in f.command.notes)}
    for member in unique:
        if member.serve is not None and member is not first:
            same_branch = branches.get(member.line) == branches.get(first.line)
            if same_branch and apart.independent(first.serve, member.serve, {
                    first.line, member.line} <= background):
                apart.flag_other(ctx, first.serve, _short(first), member.serve, _short(member))
                ctx.others.append(alone([member], dict(engine) if engine else None, ctx))
                continue
            how = ("another branch runs this server command" if not same_branch
                   else "another server command of the script (an alternative or a later "
                   "run, not a node)")
            ctx.flag_unknown(" ".join(member.serve.comparable)[:300], f"line {member.line}: "
                             f"{how}; the one on line {first.line} is used (give the variable "
                             "that chooses the branch in an env dump input, or that command "
                             "alone)")
    return [m for m in unique if m.serve is None or m is first]


def _short(member: Member) -> str:
    """A server command named by what it serves (`vllm serve MODEL`)."""
    model = (member.serve.deployment.get("model") or {}).get("path") if member.serve else None
    return f"vllm serve {model}" if model else "vllm serve"


def _same(a: Member, b: Member) -> bool:
    """The same node command found twice (a function called twice, both arms alike)."""
    if (a.serve is None) != (b.serve is None) or (a.ray is None) != (b.ray is None):
        return False
    if a.serve is not None and b.serve is not None and a.serve.comparable != b.serve.comparable:
        return False
    if a.ray is not None and b.ray is not None and \
            (a.ray.role, a.ray.address) != (b.ray.role, b.ray.address):
        return False
    return a.env == b.env and (a.ray is None or a.ray.role == "head")


