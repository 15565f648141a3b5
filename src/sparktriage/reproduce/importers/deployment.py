"""Our own deployment YAML: validated with the deployment model and passed through as is."""

from __future__ import annotations

from pathlib import Path

from sparktriage.config.deployment import Deployment
from sparktriage.yamldoc import load_with_lines, validate
from sparktriage.errors import InputError
from sparktriage.reproduce.importers.common import Ctx
from sparktriage.reproduce.model import ClientNode, Imported


def looks_like(data) -> bool:
    return isinstance(data, dict) and "model" in data and (
        "schema_version" in data or "lab" in data or "serve" in data)


def import_deployment(path: Path, ctx: Ctx) -> Imported:
    data, marks = load_with_lines(path)
    if not isinstance(data, dict):
        raise InputError(f"{ctx.source}: expected a mapping at the top level")
    lab = data.get("lab")
    probe = {**data, "lab": lab if isinstance(lab, (str, dict)) else "lab.yaml"}
    dep = validate(Deployment, probe, marks, path)
    dumped = dep.model_dump(mode="json", exclude={"lab"})
    dumped = ctx.secrets.deep(dumped)
    nodes = []
    count = dep.parallelism.nodes or (len(dep.nodes) if dep.nodes else None) or 1
    names = dep.nodes or ([n.name for n in dep.lab.nodes] if not isinstance(dep.lab, str)
                          else [f"node{r}" for r in range(count)])
    for rank, name in enumerate(names[:count] if count else names):
        nodes.append(ClientNode(name=name, rank=rank, input=ctx.source, headless=rank > 0,
                                env=dep.node_env.get(name, {})))
    ctx.mapped.append("deployment YAML -> deployment (validated, passed through)")
    return ctx.result(deployment=dumped, nodes=nodes)
