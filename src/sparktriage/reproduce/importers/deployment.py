"""Our own deployment YAML: validated with the deployment model and passed through as is, its
`./` and `../` paths against its own folder (as launch reads them)."""

from __future__ import annotations

import os
from pathlib import Path

from sparktriage.config.deployment import Deployment
from sparktriage.yamldoc import validate
from sparktriage.errors import InputError
from sparktriage.reproduce.importers.common import Ctx
from sparktriage.reproduce.importers.protocol import ReadInput
from sparktriage.reproduce.model import ClientNode, Imported


def looks_like(data) -> bool:
    return isinstance(data, dict) and "model" in data and (
        "schema_version" in data or "lab" in data or "serve" in data)


class DeploymentImporter:
    """Our own deployment YAML: a mapping with `model` and `schema_version`, `lab` or `serve`."""

    kind = "deployment"
    role = "alone"

    def claims(self, source: ReadInput) -> bool:
        return looks_like(source.data)

    def read(self, source: ReadInput, ctx: Ctx) -> Imported:
        part = _import(source.path, *source.with_lines(), ctx)
        return part.model_copy(update={"deployment": _resolve_paths(
            part.deployment, Path(os.path.abspath(source.path)).parent)})


def _resolve_paths(dep: dict, base: Path) -> dict:
    """./ and ../ values of a deployment YAML input, against its folder (as launch does)."""
    def fix(value):
        if isinstance(value, str) and value.startswith(("./", "../")):
            return os.path.normpath(base / value)
        return value
    model = dict(dep.get("model") or {})
    if "path" in model:
        model["path"] = fix(model["path"])
    engine = dict(dep.get("engine") or {})
    vllm = engine.get("vllm")
    engine["vllm"] = [fix(v) for v in vllm] if isinstance(vllm, list) else fix(vllm)
    return {**dep, "model": model, "engine": engine}


def _import(path: Path, data, marks: dict, ctx: Ctx) -> Imported:
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
    named = None if lab is None else f"lab: {lab}" if isinstance(lab, str) else \
        "lab: (an inline lab)"
    return ctx.result(deployment=dumped, nodes=nodes, client_lab=named)
