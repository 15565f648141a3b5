"""Node commands into one client deployment, Ray clusters included.

A member is what one node runs: a serve command, a `ray start`, or both (`ray start --head
&& vllm serve ...`). Without Ray this is `serve.assemble` (one node per serve command). With
Ray, the Ray head and the serve command (the driver, which runs on the head) are node 0 and
every Ray worker (times its compose `deploy.replicas`) is one more node of the same
deployment, with the Ray backend; the workers run no serve command of their own. An input
with Ray workers only (a worker compose file given beside the head's) gives nodes from rank 1,
so that `normalize.combine` places them after the head from the other input.
"""

from __future__ import annotations

from dataclasses import dataclass
from typing import Any

from sparktriage.reproduce.importers import apart
from sparktriage.reproduce.importers.common import Ctx
from sparktriage.reproduce.importers.ray_start import RayStart
from sparktriage.reproduce.importers.nodes import assemble
from sparktriage.reproduce.importers.serve_args import Serve
from sparktriage.reproduce.model import ClientNode, Imported

MAX_REPLICAS = 256


@dataclass
class Member:
    """One node command of the input: a serve, a ray start, or both."""

    serve: Serve | None
    ray: RayStart | None
    env: dict[str, str]
    line: int | None = None
    replicas: int = 1
    name: str = ""


def kept_servers(members: list[Member], ctx: Ctx,
                 engines: list[dict] | None = None) -> list[int]:
    """Which members are nodes of the one run: all of them, unless there are several serve
    commands none of which is a node of a multi-node run (no Ray, no `--nnodes`,
    `--node-rank`, `--headless`): then they are separate servers (a compose file of
    alternative models, a chat and an embedding server side by side), the first is the
    deployment and each other is an unknowns row naming its service and line; an independent
    one (apart.py) is also read alone, with its container settings (`engines`), into
    `ctx.others`."""
    serving = [i for i, m in enumerate(members) if m.serve is not None]
    multi = any(m.ray for m in members) or any(
        m.serve.headless or m.serve.node_rank is not None or m.serve.nnodes
        for m in members if m.serve is not None)
    if multi or len(serving) < 2:
        return list(range(len(members)))
    first = members[serving[0]]
    for i in serving[1:]:
        other = members[i]
        if apart.independent(first.serve, other.serve):
            apart.flag_other(ctx, first.serve, first.name, other.serve, other.name)
            ctx.others.append(alone([other], engines[i] if engines else None, ctx))
            continue
        ctx.flag_unknown(other.name or "vllm serve", f"line {other.line}: another vLLM server "
                         "(an alternative or a second server beside it, not a node of one run: "
                         f"no Ray, --nnodes or --headless); {first.name or 'the first'} (line "
                         f"{first.line}) is reproduced: give this one alone to reproduce it")
    return [i for i in range(len(members)) if i not in serving[1:]]


def assemble_cluster(members: list[Member], ctx: Ctx) -> Imported:
    """The deployment and client nodes of an input's node commands."""
    if not any(m.ray for m in members):
        return assemble([(m.serve, m.env) for m in members if m.serve], ctx)
    heads = [m for m in members if m.ray and m.ray.role == "head"]
    workers = [m for m in members if m.ray and m.ray.role == "worker" and not m.serve]
    drivers = [m for m in members if m.serve]
    for extra in heads[1:]:
        ctx.flag_unknown(f"{extra.name or 'ray start --head'}", f"line {extra.line}: a second "
                         "Ray head; the deployment has one (the first)")
    driver = next((m for m in drivers if m.ray and m.ray.role == "head"),
                  drivers[0] if drivers else None)
    for extra in drivers:
        if extra is not driver:
            ctx.flag_unknown(extra.name or "vllm serve", f"line {extra.line}: a second serve "
                             "command in one Ray cluster; the deployment runs the first")
    head = heads[0] if heads else None
    head_env = {**(head.env if head else {}), **(driver.env if driver else {})}
    if driver is not None:
        base = assemble([(driver.serve, head_env)], ctx)
        deployment: dict[str, Any] = {k: (dict(v) if isinstance(v, dict) else v)
                                      for k, v in base.deployment.items()}
        line = base.line
    else:
        deployment, line = {"engine": {}}, (head.line if head else None)
    engine = deployment.setdefault("engine", {})
    engine["backend"] = "ray"
    ray_engine = (head.ray.engine if head else workers[0].ray.engine if workers else {})
    for key, value in ray_engine.items():
        engine.setdefault(key, value)
    ctx.mapped.append("ray start (head and workers) -> engine.backend ray, one node each")
    envs: list[tuple[str, dict[str, str], bool]] = []
    first = 0 if (head or driver) else 1
    if head or driver:
        envs.append(("head", head_env, False))
    for member in workers:
        count = max(1, min(member.replicas, MAX_REPLICAS))
        envs += [(member.name, member.env, True)] * count
    common = dict(envs[0][1]) if envs else {}
    for _, env, _ in envs[1:]:
        common = {k: v for k, v in common.items() if env.get(k) == v}
    deployment["env"] = common
    nodes = []
    for offset, (_, env, headless) in enumerate(envs):
        rank = first + offset
        nodes.append(ClientNode(name=f"node{rank}", rank=rank, input=ctx.source,
                                headless=headless,
                                env={k: v for k, v in env.items() if common.get(k) != v}))
    if len(nodes) > 1 or first:
        deployment.setdefault("parallelism", {})["nodes"] = len(nodes) + first
    return ctx.result(deployment=deployment, nodes=nodes, line=line)


def alone(members: list[Member], engine: dict | None, ctx: Ctx) -> Imported:
    """An independent server group of the input read as if it were the input's only one (its
    rows, notes and mappings are the input's own already)."""
    scratch = Ctx(ctx.ref, ctx.secrets)
    part = assemble_cluster(members, scratch)
    deployment = dict(part.deployment)
    if engine:
        deployment["engine"] = {**deployment.get("engine", {}), **engine}
    return part.model_copy(update={"deployment": deployment, "unknown": [], "notes": [],
                                   "mapped": []})
