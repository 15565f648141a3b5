"""Shell lines and scripts that run `vllm serve` (or the OpenAI api_server module).

Each logical command (see reproduce/shell.py) is one of: `export NAME=VALUE...`, plain
assignments, a serve command with optional env prefixes (`A=1 vllm serve ...`, `env A=1 ...`,
`exec`, `nohup`), or anything else (kept as unknown: not reproduced). Serve arguments are
mapped by `serve_args.parse_serve` onto the deployment model; `assemble` makes one deployment
of several node commands, for the docker and compose importers too.
"""

from __future__ import annotations

import os
from typing import Any

from sparktriage.errors import InputError
from sparktriage.reproduce.importers.common import Ctx
from sparktriage.reproduce.importers.serve_args import Serve, parse_serve
from sparktriage.reproduce.model import ClientNode, Imported
from sparktriage.reproduce.shell import assignment, logical_commands

API_SERVER_MODULES = ("vllm.entrypoints.openai.api_server", "vllm.entrypoints.api_server")
CLI_MODULES = ("vllm.entrypoints.cli.main",)
WRAPPERS = {"exec", "nohup", "time", "command"}
_IGNORED_COMMANDS = {"set", "#!/bin/bash", "true", ":"}


def find_serve(words: list[str]) -> tuple[list[str], str, list[str]] | None:
    """(engine argv prefix, form, args after `serve`/the module) when `words` run vLLM."""
    if not words:
        return None
    base = os.path.basename(words[0])
    if base == "vllm" and len(words) > 1 and words[1] == "serve":
        return words[:1], "serve", words[2:]
    if base.startswith("python") and len(words) > 2 and words[1] == "-m":
        module = words[2]
        if module in API_SERVER_MODULES:
            return [words[0], "-m", "vllm.entrypoints.cli.main"], "api_server", words[3:]
        if module in CLI_MODULES + ("vllm",) and len(words) > 3 and words[3] == "serve":
            return words[:3], "serve", words[4:]
    return None


def env_block(pairs: dict[str, str], ctx: Ctx, where: str) -> dict[str, str]:
    out = {}
    for name, value in pairs.items():
        ctx.check_variables(value, f"{where} {name}")
        out[name] = ctx.secrets.env_value(name, value, f"{where} {name}")
    return out


def _export(words: list[str], line: int, exported: dict[str, str], shell_vars: dict[str, str],
            ctx: Ctx) -> None:
    """`export A=1 B` / `declare -x ...`: into the exported env (B from the script's own
    assignment; a variable the script never set is unknown)."""
    for word in words:
        if word.startswith("-"):
            continue
        pair = assignment(word)
        if pair:
            exported[pair[0]] = pair[1]
        elif word in shell_vars:
            exported[word] = shell_vars[word]
        else:
            ctx.flag_unknown(f"export {word}", f"line {line}: exports a variable whose value the "
                             "script does not set; its value comes from the client's login "
                             "environment")
    ctx.mapped.append(f"line {line}: export -> env")


def import_script(text: str, ctx: Ctx) -> Imported:
    """A shell line or script: exports, assignments, serve commands (one node each)."""
    exported: dict[str, str] = {}
    shell_vars: dict[str, str] = {}
    serves: list[tuple[Serve, dict]] = []
    for command in logical_commands(text, ctx.source):
        for n in command.notes:
            ctx.note(f"line {command.line}: {n}")
        words = list(command.words)
        if not words:
            continue
        if words[0] in ("export", "declare") and (len(words) == 1 or words[0] == "export"
                                                  or words[1] == "-x"):
            _export(words[1:], command.line, exported, shell_vars, ctx)
            continue
        prefix_env: dict[str, str] = {}
        while words and (assignment(words[0]) or words[0] in WRAPPERS or words[0] == "env"):
            pair = assignment(words[0])
            if pair:
                prefix_env[pair[0]] = pair[1]
            words = words[1:]
        if not words:
            shell_vars.update(prefix_env)
            for name in prefix_env:
                ctx.flag_unknown(f"{name}=...", f"line {command.line}: shell variable, not "
                                 "exported: the server does not see it (not in env)")
            continue
        found = find_serve(words)
        if found is None:
            if words[0] not in _IGNORED_COMMANDS:
                ctx.flag_unknown(" ".join(words)[:300], f"line {command.line}: not a vllm serve "
                                 "command; not reproduced (run it on the lab yourself if needed)")
            continue
        serve = parse_serve(*found, ctx)
        serve.line = command.line
        env = {**exported, **prefix_env}
        serves.append((serve, env_block(env, ctx, f"line {command.line}")))
    if not serves:
        if exported:
            return ctx.result(deployment={"env": env_block(exported, ctx, "export")})
        raise InputError(f"{ctx.source}: no vllm serve command found")
    return assemble(serves, ctx)


def assemble(serves: list[tuple[Serve, dict]], ctx: Ctx) -> Imported:
    """Several serve commands (one per node) into one deployment and its client nodes."""
    ordered = sorted(serves, key=lambda s: (s[0].node_rank or 0))
    head, head_env = ordered[0]
    deployment: dict[str, Any] = {k: v for k, v in head.deployment.items()}
    deployment["serve"] = {**deployment["serve"], "flags": dict(deployment["serve"]["flags"]),
                           "extra_args": list(deployment["serve"]["extra_args"])}
    if head.speculative:
        deployment["speculative"] = head.speculative
    common = dict(head_env)
    for _, env in ordered[1:]:
        common = {k: v for k, v in common.items() if env.get(k) == v}
    deployment["env"] = common
    nodes = []
    for index, (serve, env) in enumerate(ordered):
        rank = serve.node_rank if serve.node_rank is not None else index
        own = {k: v for k, v in env.items() if common.get(k) != v}
        differs = sorted(set(serve.comparable) ^ set(head.comparable)) if index else []
        for item in differs:
            ctx.flag_unknown(item, f"node {rank}: option differs from the head node's; the "
                                   "deployment uses the head node's options")
        nodes.append(ClientNode(name=f"node{rank}", rank=rank, input=ctx.source,
                                headless=serve.headless, master_addr=serve.master_addr,
                                env=own, argv_differs=differs))
    count = max([s.nnodes or 1 for s, _ in ordered] + [len(ordered)])
    if count > 1:
        deployment["parallelism"]["nodes"] = count
    if count > len(ordered):
        ctx.note(f"--nnodes {count} but {len(ordered)} node command(s) given: the other "
                 "nodes are assumed to run the same command")
        for rank in range(len(ordered), count):
            nodes.append(ClientNode(name=f"node{rank}", rank=rank, input=ctx.source,
                                    headless=True, assumed=True))
    return ctx.result(deployment=deployment, nodes=nodes, line=head.line)
