"""`docker run` / `podman run` lines: the container settings and the serve command inside.

Options the launch plan sets itself (`--rm`, `--name`, `--network host`, `--ipc host`,
`--gpus all`) are accounted for there; others that change the container (volumes, `--shm-size`,
ulimits, devices, ...) go to `engine.container_args`; `-e NAME=VALUE` to `env` (secrets
replaced); settings that cannot be reproduced as written (another network mode, published
ports, `--env-file`, `-e NAME` taking the value from the client's shell) are unknown.
"""

from __future__ import annotations

import os
from dataclasses import dataclass, field

from sparktriage.errors import InputError
from sparktriage.redact.detect import secret_name
from sparktriage.reproduce.importers.common import Ctx
from sparktriage.reproduce.importers.serve import assemble, env_block, find_serve
from sparktriage.reproduce.importers.serve_args import Serve, parse_serve
from sparktriage.reproduce.model import Imported
from sparktriage.reproduce.shell import assignment, logical_commands

# options with a value that are kept as container arguments
KEEP_VALUE = {"-v", "--volume", "--mount", "--shm-size", "--ulimit", "--device", "--runtime",
              "--cap-add", "--security-opt", "--user", "-u", "--workdir", "-w", "--group-add",
              "--memory", "-m", "--cpus", "--cpuset-cpus", "--pid", "--uts", "--tmpfs",
              "--device-cgroup-rule", "--label", "-l", "--add-host", "--dns", "--hostname", "-h",
              "--pull", "--platform", "--stop-signal", "--stop-timeout", "--oom-score-adj",
              "--memory-swap", "--cgroupns", "--userns", "--sysctl", "--log-driver", "--log-opt"}
KEEP_BOOL = {"--privileged", "--init", "--read-only", "--oom-kill-disable"}
PLAN_BOOL = {"--rm": "the plan always runs containers with --rm",
             "-d": "the plan runs the container in the foreground (detach dropped)",
             "--detach": "the plan runs the container in the foreground (detach dropped)",
             "-i": "interactive flag dropped", "-t": "tty flag dropped", "-it": "tty flags dropped",
             "-ti": "tty flags dropped", "--interactive": "interactive flag dropped",
             "--tty": "tty flag dropped"}
ENV_OPTS = {"-e", "--env"}
# options the plan sets itself: option -> (the plan's option, its value, what is said otherwise)
PLAN_SETS = {"--network": ("--network", "host", "the plan runs containers with --network host"),
             "--net": ("--network", "host", "the plan runs containers with --network host"),
             "--ipc": ("--ipc", "host", "the plan runs containers with --ipc host"),
             "--gpus": ("--gpus", "all", "the plan passes --gpus all when the lab node has a GPU")}


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
    """(serve, env, engine settings) of one `docker|podman run ...` command."""
    runtime = words[0].rsplit("/", 1)[-1]
    args = words[2:] if len(words) > 1 and words[1] == "run" else words[3:]
    run = _Run({"runtime": runtime, "container_args": []})
    i, image = _read_options(args, run, ctx, line)
    if image is None:
        raise InputError(f"{ctx.source}:{line}: the {runtime} run command names no image")
    run.engine["image"] = image
    serve = container_command(args[i:], run.entrypoint, run.engine, ctx, line)
    return serve, run.env, run.engine


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


def _plan_sets(name: str, value: str, ctx: Ctx, line: int) -> None:
    """An option the plan always sets itself: mapped when it says the same, else unknown."""
    option, wanted, otherwise = PLAN_SETS[name]
    given = value.strip("'\"") if name == "--gpus" else value
    if given != wanted:
        ctx.flag_unknown(f"{name} {value}", f"line {line}: {otherwise}")
    else:
        ctx.mapped.append(f"{name} {wanted} -> the plan's {option} {wanted}")


def container_command(command: list[str], entrypoint: str | None, engine: dict, ctx: Ctx,
                      line: int) -> Serve:
    """The serve command run in a container, with the image's entrypoint taken into account."""
    words = ([entrypoint] if entrypoint else []) + command
    if len(words) >= 3 and os.path.basename(words[0]) in ("sh", "bash", "dash") and words[1] == "-c":
        # `bash -c "..."`: the script is read as data with the same rules as a serve script
        inner = [c for c in logical_commands(words[2], f"{ctx.source}:{line} (sh -c)")]
        serving = [c.words for c in inner if find_serve(_strip_env(c.words, engine, ctx))]
        for c in inner:
            if not find_serve(_strip_env(list(c.words), {}, ctx)) and c.words:
                ctx.flag_unknown(" ".join(c.words)[:300], f"line {line}: command inside sh -c "
                                 "not reproduced")
        if len(serving) != 1:
            raise InputError(f"{ctx.source}:{line}: the sh -c script runs "
                             f"{len(serving)} vllm serve commands (expected one)")
        words = _strip_env(serving[0], engine, ctx)
        entrypoint = None
        ctx.note(f"line {line}: the serve command inside `{os.path.basename(command[0] if command else 'sh')} -c` is run directly")
    found = find_serve(words)
    if found is not None:
        prefix, form, args = found
        if entrypoint:
            engine["container_args"] += ["--entrypoint", entrypoint]
            prefix = prefix[1:]  # the entrypoint supplies it
            ctx.mapped.append("--entrypoint -> engine.container_args")
        serve = parse_serve(prefix, form, args, ctx)
        if entrypoint:
            serve.set("engine", "vllm", prefix)
        return serve
    if entrypoint is None and (not command or command[0] != "serve"):
        # vllm/vllm-openai style images: ENTRYPOINT ["vllm", "serve"], the command is MODEL ...
        ctx.flag_unknown(" ".join(command[:3]) or "(no command)", f"line {line}: assumed the "
                         "image's entrypoint is `vllm serve` (vllm/vllm-openai); written as "
                         "--entrypoint vllm")
        engine["container_args"] += ["--entrypoint", "vllm"]
        serve = parse_serve([], "serve", command, ctx)
        serve.set("engine", "vllm", [])
        return serve
    if entrypoint is None and command and command[0] == "serve":
        ctx.flag_unknown("serve ...", f"line {line}: assumed the image's entrypoint is `vllm`; "
                         "written as --entrypoint vllm")
        engine["container_args"] += ["--entrypoint", "vllm"]
        serve = parse_serve([], "serve", command[1:], ctx)
        serve.set("engine", "vllm", [])
        return serve
    raise InputError(f"{ctx.source}:{line}: the container does not run vllm serve "
                     f"(entrypoint {entrypoint!r})")


def _strip_env(words: list[str], engine: dict, ctx: Ctx) -> list[str]:
    """Leading NAME=VALUE words of a command inside `sh -c`: kept as env of the container."""
    out = list(words)
    while out and assignment(out[0]):
        name, value = assignment(out[0])
        engine.setdefault("_env", {})[name] = value
        out = out[1:]
    if out and out[0] == "exec":
        out = out[1:]
    return out


def is_container_run(words: list[str]) -> bool:
    if len(words) < 2:
        return False
    tool = words[0].rsplit("/", 1)[-1]
    return tool in ("docker", "podman") and (words[1] == "run" or words[1:3] == ["container", "run"])


def import_docker(text: str, ctx: Ctx) -> Imported:
    serves = []
    engine: dict = {}
    exported: dict[str, str] = {}
    for command in logical_commands(text, ctx.source):
        for n in command.notes:
            ctx.note(f"line {command.line}: {n}")
        words = list(command.words)
        while words and assignment(words[0]):
            pair = assignment(words[0])
            exported[pair[0]] = pair[1]
            words = words[1:]
        if words and words[0] == "export":
            for word in words[1:]:
                pair = assignment(word)
                if pair:
                    exported[pair[0]] = pair[1]
            continue
        if words and words[0] == "sudo":
            words = words[1:]
        if not is_container_run(words):
            if words:
                ctx.flag_unknown(" ".join(words)[:300], f"line {command.line}: not a container "
                                 "run; not reproduced")
            continue
        serve, env, engine = parse_docker(words, ctx, command.line)
        serve.line = command.line
        env = {**env, **engine.pop("_env", {})}
        serves.append((serve, env_block(env, ctx, f"line {command.line} -e")))
    if not serves:
        raise InputError(f"{ctx.source}: no docker/podman run command found")
    if exported:
        ctx.note("shell variables set around the container run are not passed into the "
                 "container: " + ", ".join(sorted(exported)))
    result = assemble(serves, ctx)
    deployment = dict(result.deployment)
    deployment["engine"] = {**deployment.get("engine", {}), **engine}
    return result.model_copy(update={"deployment": deployment})
