"""The lab plan: client nodes on lab nodes, and what the written deployment runs on each.

The deployment is written first and loaded back with `load_deployment`, then planned with
`launch.plan.build_plan`: the argv and environment per node are exactly what
`sparktriage launch DIR/deployment.yaml --dry-run` shows. Statements say when the lab has
fewer nodes or other hardware than the client.
"""

from __future__ import annotations

from pathlib import Path

from sparktriage.config.deployment import load_deployment
from sparktriage.errors import ConfigError
from sparktriage.launch.plan import LaunchPlan, build_plan
from sparktriage.reproduce.model import LabPlan, NodeAssignment


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
