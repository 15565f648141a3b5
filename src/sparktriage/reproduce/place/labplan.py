"""The lab plan: client nodes on lab nodes, and what the written deployment runs on each.

The deployment is written first and loaded back with `load_deployment`, then planned with
`launch.plan.build_plan`: the argv and environment per node are exactly what
`sparktriage launch DIR/deployment.yaml --dry-run` shows. Statements say when the lab has
fewer nodes or other hardware than the client.
"""

from __future__ import annotations

import re
from dataclasses import dataclass
from pathlib import Path

from sparktriage.config.deployment import load_deployment
from sparktriage.config.lab import Lab
from sparktriage.errors import ConfigError, InputError, SourceLocation
from sparktriage.limits import PLACED_MAX_NODES, LimitError
from sparktriage.launch.plan import LaunchPlan, build_plan
from sparktriage.reproduce.model import ClientNode, LabPlan, NodeAssignment

GB10 = re.compile(r"gb10|spark|gx10", re.IGNORECASE)


def gpus_per_node(lab: Lab, client_gpu: str | None) -> tuple[int | None, str]:
    """(GPUs per node the ranks are placed at, where that figure comes from): the lab's nodes
    (`gpus`, or their `gpu` kind), else the client's GPU when it is a GB10 (one per node)."""
    counts = [n.gpu_count() for n in lab.nodes]
    known = [c for c in counts if c]
    if known:
        return min(known), "the lab's nodes"
    if client_gpu and GB10.search(client_gpu):
        return 1, f"the client's {client_gpu}"
    return None, ""


def place_ranks(deployment: dict, nodes: list[ClientNode], lab: Lab, lab_given: bool,
                client_gpu: str | None, source: str,
                shape: Shape | None = None) -> tuple[list[ClientNode], list[str]]:
    """Ranks onto nodes: tp x pp x dp ranks at the GPUs per node make the node count; client
    nodes the inputs did not describe are added (assumed, headless). InputError (exit 2) when a
    given lab has fewer nodes than that, naming the input's shape where it has one."""
    par = deployment.get("parallelism") or {}
    tp, pp, dp = (int(par.get(k) or 1) for k in ("tp", "pp", "dp"))
    ranks = tp * pp * dp
    per, why = gpus_per_node(lab, client_gpu)
    if not per or ranks <= per:
        return nodes, []
    needed = -(-ranks // per)  # integers: a float is not exact past 2**53
    sizes = f"tp {tp} x pp {pp} x dp {dp} = {ranks} ranks at {per} GPU(s) per node, {why}"
    if lab_given and needed > len(lab.nodes) and shape is not None:
        raise shape.refusal(tp, pp, dp, lab, per)
    if lab_given and needed > len(lab.nodes):
        raise InputError(f"the deployment needs {needed} nodes ({sizes}); the lab has "
                         f"{len(lab.nodes)}")
    if needed > PLACED_MAX_NODES:
        raise LimitError(f"{source}: the deployment needs {needed} nodes ({sizes}), more than "
                         f"the limit of {PLACED_MAX_NODES} nodes a reproduction places",
                         hint="see docs/limits.md")
    engine = deployment.setdefault("engine", {})
    chosen = "as the client gave it"
    if not engine.get("backend"):
        if par.get("nodes") is None and len(nodes) <= 1 and tp * pp > per:
            # vLLM's own choice: no executor and no --nnodes, more ranks than one node's GPUs
            engine["backend"] = "ray"
            chosen = "vLLM picks Ray when the ranks exceed one node's GPUs and no --nnodes " \
                     "is given"
        elif tp * pp <= per:
            chosen = "data-parallel ranks on their own nodes: native multi-node"
        else:
            chosen = "native multi-node (--nnodes)"
    statements = [f"ranks onto nodes: tp {tp} x pp {pp} x dp {dp} = {ranks} ranks at {per} "
                  f"GPU(s) per node ({why}): {needed} node(s), one rank per GPU; backend "
                  f"{engine.get('backend') or 'mp'} ({chosen})"]
    if needed > len(nodes):
        statements.append(f"the inputs describe {len(nodes)} node(s); {needed - len(nodes)} more "
                          "run the same command (assumed)")
        start = max((n.rank for n in nodes), default=-1) + 1
        nodes = nodes + [ClientNode(name=f"node{r}", rank=r, input=source, headless=True,
                                    assumed=True) for r in range(start, start + needed - len(nodes))]
        deployment.setdefault("parallelism", {})["nodes"] = needed
    if not lab_given and needed > len(lab.nodes):
        statements.append(f"this machine is one node; give --lab with {needed} nodes to launch "
                          "it as the client does")
    return nodes, statements


@dataclass(frozen=True)
class Shape:
    """What runs the client's server where the input says more than a command line (a
    Kubernetes LeaderWorkerSet, a SLURM job), and where its server command is."""

    name: str  # "a Kubernetes LeaderWorkerSet"
    detail: str | None = None  # "2 pod(s) x 8 GPU(s)"
    where: SourceLocation | None = None

    def refusal(self, tp: int, pp: int, dp: int, lab: Lab, per: int) -> InputError:
        """The input's shape and what it needs, against what the lab holds."""
        ranks = tp * pp * dp
        parallel = f"tp {tp} x pp {pp}" + (f" x dp {dp}" if dp > 1 else "")
        kinds = sorted({n.gpu for n in lab.nodes if n.gpu})
        kind = f"{kinds[0].upper()} " if len(kinds) == 1 and len(kinds[0]) <= 8 else ""
        each = "one GPU" if per == 1 else f"{per} GPUs"
        detail = f" ({self.detail})" if self.detail else ""
        return InputError(f"{self.name} running {parallel} = {ranks} GPUs{detail}; the lab has "
                          f"{len(lab.nodes)} {kind}nodes ({each} each): it needs "
                          f"{-(-ranks // per)}", location=self.where)


def plan_for(path: Path, lab_name: str, pairs: list[tuple[str | None, str]],
             statements: list[str]) -> tuple[LabPlan, LaunchPlan | None]:
    try:
        dep = load_deployment(path)
        launch = build_plan(dep)
    except ConfigError as exc:
        reason = exc.errors[0] if exc.errors else exc.one_line()
        return LabPlan(lab=lab_name, statements=statements + [
            f"the lab cannot hold this deployment as written: {reason}"], launchable=False), None
    client_of = {lab: client for client, lab in pairs}
    nodes = []
    for stage in launch.stages:
        for node, proc in stage.processes:
            if proc.name != "server":
                continue
            env = dict(proc.env)
            if not env:  # in a container the environment travels as `-e NAME=VALUE`
                argv = list(proc.argv)
                for flag, value in zip(argv, argv[1:]):
                    if flag == "-e" and "=" in value:
                        name, _, item = value.partition("=")
                        env[name] = item
            nodes.append(NodeAssignment(client=client_of.get(node), lab=node,
                                        argv=list(proc.argv), env=env))
    return LabPlan(lab=lab_name, nodes=nodes, statements=statements), launch
