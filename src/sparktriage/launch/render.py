"""Plans as text for `--dry-run`: exactly what would run where, shell-quoted for reading.

The quoting here is for display only (so that a reader can paste a line into a shell and get
the same argv); nothing is ever executed through a shell.
"""

from __future__ import annotations

import shlex

from sparktriage.textsafe import escape_controls
from sparktriage.collect.plan import CollectPlan
from sparktriage.collect.shipping import agent_argv
from sparktriage.launch.ray import WATCH_SOURCE
from sparktriage.view import View


def _quote(argv: list[str] | tuple[str, ...]) -> str:
    """Shell-quoted argv on one line, control characters (ANSI, newlines) shown escaped."""
    return escape_controls(" ".join(shlex.quote(str(a)) for a in argv), keep_newlines=False)


def _collector_lines(plan: CollectPlan, indent: str = "  ") -> list[str]:
    lines = []
    for spec in plan.collectors:
        every = "once" if spec.interval_s is None else f"every {spec.interval_s:g} s"
        options = {k: v for k, v in spec.options.items() if v is not None}
        extra = f"  {options}" if options else ""
        lines.append(f"{indent}{spec.name:<12} {every:<14} timeout {spec.timeout_s:g} s{extra}")
    return lines


def render_collect_plan(request) -> View:
    """The `collect --dry-run` text of a CollectRequest."""
    lines = [f"collect on node {request.node} ({request.transport.describe()})",
             f"  target: {request.target()}",
             f"  bundle: {request.out}"]
    stop = []
    if request.duration_s is not None:
        stop.append(f"after {request.duration_s:g} s")
    if request.until_ready:
        stop.append(f"when {request.endpoint or 'the server'} is ready")
    stop.append("when the target exits, on Ctrl-C, or when the link is lost")
    lines.append("  stops: " + "; ".join(stop))
    python = request.python or ("<this python>" if request.transport.local else "python3")
    lines.append("  agent: " + _quote(request.transport.argv(agent_argv(python))[:-1] +
                                      ["<bootstrap>"] if not request.transport.local
                                      else [python, "-c", "<bootstrap>"]))
    lines.append("  collectors:")
    lines += _collector_lines(request.collect_plan(), "    ")
    if request.logs:
        lines.append("  follow: " + ", ".join(request.logs))
    if request.export:
        lines.append(f"  export: {request.export}")
    return View.of_lines(lines)


def client_code_lines(items) -> list[str]:
    """The items a launch runs by the client's choice, one per line, by the name to accept."""
    lines = [f"runs client code ({len(items)}; accept each by name: --accept-client-code "
             "NAME[,NAME], docs/security.md):"]
    width = min(max(len(i.name) for i in items), 60)
    return lines + [escape_controls(f"  {i.name:<{width}}  {i.what}", keep_newlines=False)
                    for i in items]


def render_launch_plan(plan) -> View:
    """The `launch --dry-run` text of a LaunchPlan."""
    lines = [f"deployment {plan.deployment}: backend {plan.backend}, {len(plan.nodes)} node(s); "
             f"ready when {'GET /health answers 200 at ' + plan.endpoint if plan.ready == 'api' else 'the head logs Application startup complete'}",
             f"deadlines: startup {plan.startup_timeout_s:g} s, each gated stage "
             f"{plan.stage_timeout_s:g} s, SIGTERM→SIGKILL {plan.grace_s:g} s, "
             f"silent link {plan.link_timeout_s:g} s", ""]
    if plan.client_code:
        lines += client_code_lines(plan.client_code) + [""]
    for node in plan.nodes:
        python = node.python or "<this python>"
        agent = node.transport.argv([python, "-c", "<bootstrap>"])
        lines.append(f"node {node.name} (rank {node.rank}, {node.role}, {node.host}): "
                     f"agent via {_quote(agent)}")
        lines += _collector_lines(node.collect, "    ")
    for index, stage in enumerate(plan.stages, start=1):
        lines += ["", f"stage {index}: {stage.name}"]
        for node, proc in stage.processes:
            gate = f" (then wait for log marker '{proc.marker}')" if proc.marker else ""
            lines.append(f"  on {node}: {proc.name}{gate}")
            if proc.env:
                lines.append("    env:  " + escape_controls(" ".join(f"{k}={shlex.quote(v)}" for k, v in proc.env),
                                                 keep_newlines=False))
            argv = ["<ray watcher: launch/ray.py>" if a == WATCH_SOURCE else a for a in proc.argv]
            lines.append("    argv: " + _quote(argv))
    if plan.teardown:
        lines += ["", "after teardown:"]
        lines += [f"  on {node}: {_quote(argv)}" for node, argv in plan.teardown]
    if plan.client_steps:
        lines += ["", "client steps (client code: launch starts nothing until they are accepted):"]
        lines += [escape_controls(f"  {s['name']} ({s['kind']}): " + (
            "run in each server container before its program" if s["runnable"]
            else f"cannot run: {s['why']}"), keep_newlines=False) for s in plan.client_steps]
    return View.of_lines(lines)
