"""Serve commands and node commands, for every importer: `find_serve` (is this vLLM's server,
and in which form), `env_block` (a command's environment, secrets replaced) and `assemble`
(several serve commands, one per node, into one deployment and its client nodes). The serve
commands are `serve_args.Serve` records (not imported here: serve_args' own imports lead back
to this module)."""

from __future__ import annotations

import os
from typing import Any

from sparktriage.reproduce.importers.common import Ctx
from sparktriage.reproduce.model import ClientNode, Imported

API_SERVER_MODULES = ("vllm.entrypoints.openai.api_server", "vllm.entrypoints.api_server")
CLI_MODULES = ("vllm.entrypoints.cli.main",)


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


def assemble(serves: list[tuple[Any, dict]], ctx: Ctx) -> Imported:
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
