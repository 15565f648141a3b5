"""All inputs into one client deployment: nodes in rank order, a common env, per-node env.

Command inputs (serve, docker, compose, deployment) give the deployment; when several describe
different nodes (one file per node), the head's options are used and each node keeps its own
environment. Fact inputs (collect-env, env dumps) are assigned to client nodes in order.
"""

from __future__ import annotations

from typing import Any

from sparktriage.errors import InputError
from sparktriage.reproduce.model import ClientNode, Facts, Imported


def deep_merge(base: dict, extra: dict) -> dict:
    """`base` with `extra` laid over it, mappings merged key by key (neither is changed)."""
    out = dict(base)
    for key, value in extra.items():
        if isinstance(value, dict) and isinstance(out.get(key), dict):
            out[key] = deep_merge(out[key], value)
        else:
            out[key] = value
    return out


def _commands(imported: list[Imported]) -> list[Imported]:
    """The inputs that describe nodes, the head's first: the first gives the options (of two
    at the same rank, the one that names a model: a Ray head or workers without a serve
    command of their own give nodes, not options)."""
    return sorted([i for i in imported if i.nodes],
                  key=lambda i: (min(n.rank for n in i.nodes), not _serves(i)))


def _serves(part: Imported) -> bool:
    return bool((part.deployment.get("model") or {}).get("path"))


def _env_only(imported: list[Imported]) -> list[Imported]:
    return [i for i in imported if not i.nodes and i.deployment]


def _ray_settings(deployment: dict, part: Imported) -> dict:
    """The Ray backend and Ray settings of an input that gives Ray nodes only, where the
    serve command's input says nothing of them."""
    engine = dict(deployment.get("engine") or {})
    bare = not engine.get("image")  # a serve command typed into the Ray node's container
    for key, value in (part.deployment.get("engine") or {}).items():
        if key == "backend" or key.startswith("ray") or \
                (bare and key in ("image", "runtime", "container_args")):
            engine.setdefault(key, value)
    return {**deployment, "engine": engine}


def origin(loc: tuple, imported: list[Imported]) -> Imported | None:
    """The input that gave the combined deployment's setting at `loc` (a pydantic error's
    location): of the inputs `combine` lays over each other, the one holding the longest part
    of `loc`, the later one on a tie (it won the merge); None when none holds its first key."""
    commands = _commands(imported)
    layers = commands[:1] + _env_only(imported)
    best, depth = None, 0
    for part in layers:
        node, held = part.deployment, 0
        for key in loc:
            if not isinstance(node, dict) or key not in node:
                break
            node, held = node[key], held + 1
        if held and held >= depth:
            best, depth = part, held
    return best


def combine(imported: list[Imported]) -> tuple[dict[str, Any], list[ClientNode], dict[str, Facts]]:
    """(client deployment, client nodes, {client node: facts})."""
    commands = [i for i in imported if i.nodes]
    env_only = _env_only(imported)
    if not commands and not any(i.facts for i in imported):
        raise InputError("no input describes a deployment or an environment")
    deployment: dict[str, Any] = {}
    nodes: list[ClientNode] = []
    full_env: dict[str, dict[str, str]] = {}
    if commands:
        ordered = _commands(imported)
        deployment = dict(ordered[0].deployment)
        taken: set[int] = set()
        real = {n.rank for part in ordered for n in part.nodes if not n.assumed}
        for part in ordered:
            base_env = dict(part.deployment.get("env") or {})
            if not _serves(part) and part is not ordered[0]:
                deployment = _ray_settings(deployment, part)
            for node in part.nodes:
                if node.assumed and node.rank in real | taken:
                    continue  # another input gives this node's own command
                if node.rank == 0 and 0 in taken and not _serves(part):
                    # a Ray head without a serve command: the node the serve command runs on
                    head = next(n for n in nodes if n.rank == 0)
                    full_env[head.name] = {**base_env, **node.env, **full_env[head.name]}
                    continue
                rank = node.rank
                while rank in taken:
                    rank += 1
                taken.add(rank)
                named = node.model_copy(update={"rank": rank, "name": f"node{rank}"
                                                if node.name.startswith("node") else node.name})
                nodes.append(named)
                full_env[named.name] = {**base_env, **node.env}
        nodes.sort(key=lambda n: n.rank)
        if len(nodes) > 1:
            deployment.setdefault("parallelism", {})
            deployment["parallelism"] = {**deployment["parallelism"], "nodes": len(nodes)}
    for part in env_only:
        deployment = deep_merge(deployment, part.deployment)
        for name in full_env:
            full_env[name].update(part.deployment.get("env") or {})
    if full_env:
        names = list(full_env)
        common = dict(full_env[names[0]])
        for name in names[1:]:
            common = {k: v for k, v in common.items() if full_env[name].get(k) == v}
        deployment["env"] = common
        nodes = [n.model_copy(update={"env": {k: v for k, v in full_env[n.name].items()
                                              if common.get(k) != v}}) for n in nodes]
    facts = [f for i in imported for f in i.facts]
    by_node: dict[str, Facts] = {}
    for index, fact in enumerate(facts):
        if index < len(nodes):
            name = nodes[index].name
        else:
            name = f"node{index}"
            if not commands:
                nodes.append(ClientNode(name=name, rank=index, input=fact.source))
        by_node[name] = fact.model_copy(update={"node": name})
    return deployment, nodes, by_node
