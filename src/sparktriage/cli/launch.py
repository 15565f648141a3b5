"""`sparktriage launch`: start a deployment on its nodes, watch startup, collect, stop it."""

from __future__ import annotations

import json
from dataclasses import replace
from pathlib import Path
from typing import List, Optional

import typer

from sparktriage.logs import startup_time
from sparktriage.cli import console
from sparktriage.cli.progress import launch_progress
from sparktriage.errors import ConfigError




def launch(
    deployment: Path = typer.Argument(..., help="Deployment YAML (docs/launch.md)."),
    dry_run: bool = typer.Option(False, "--dry-run", help="Print the per-node plan (argv and environment) and stop."),
    lab: Optional[Path] = typer.Option(None, "--lab", help="Lab YAML to use instead of the deployment's."),
    out: Optional[Path] = typer.Option(None, "--out", help="Run directory [./runs/<timestamp>]."),
    hold: float = typer.Option(0.0, "--hold", min=0.0, help="Seconds to keep the deployment up after it is ready."),
    launches: int = typer.Option(1, "--launches", min=1, help="Launches in a row (replicates), each torn down before the next."),
    startup_timeout: Optional[float] = typer.Option(None, "--startup-timeout", min=1.0, help="Seconds from launch to ready [the deployment's timeouts.startup_s]."),
    json_out: Optional[str] = typer.Option(None, "--json", help="Write the result (or with --dry-run the plan) to PATH, or - for stdout."),
    accept: Optional[List[str]] = typer.Option(None, "--accept-client-code", help="Client code the plan lists that you accept, by name, comma list (repeatable; docs/security.md)."),
    accept_from: Optional[List[Path]] = typer.Option(None, "--accept-client-code-from", help="File of accepted client-code names, one a line."),
) -> None:
    """Start a deployment on its nodes, watch it to readiness, collect an evidence bundle, stop it."""
    from sparktriage.config.deployment import load_deployment
    from sparktriage.documents.launch import LaunchResult
    from sparktriage.launch.plan import build_plan
    from sparktriage.launch import acceptance as client_code
    from sparktriage.launch.render import render_launch_plan
    from sparktriage.launch.run import launch_replicates, raise_for
    import yaml

    from sparktriage.store.documents import write_yaml_document
    from sparktriage.store.rundir import RunDir, default_run_path
    from sparktriage.store.typed import check
    try:
        dep = load_deployment(deployment, lab)
    except ConfigError as exc:
        for line in exc.errors[1:]:
            console.stderr.print(f"error: {line}", markup=False)
        raise
    plan = build_plan(dep)
    if startup_timeout is not None:
        plan = replace(plan, startup_timeout_s=startup_timeout)
    if dry_run:
        console.draw(render_launch_plan(plan), console.data_console(json_out))
        console.write_json({"schema_version": 1, "kind": "launch-plan", **plan.to_json()}, json_out)
        return
    accepted = client_code.require(plan.client_code,
                                   client_code.parse_accepted(accept, accept_from))
    run = RunDir.create(out or default_run_path(), ["sparktriage", *console.invoked_argv()])
    client_code.record(run.path, accepted)
    # the copy keeps no secret: the YAML (already read and checked above) walked by the one
    # redaction stage (values under secret names, the element after a secret flag in a list)
    write_yaml_document(run.path / "deployment.yaml",
                        yaml.safe_load(deployment.read_text(encoding="utf-8")))
    console.info(f"run directory: {run.path}")
    results = launch_replicates(plan, run, launches, launch_progress, hold_s=hold)
    for result in results:
        console.data_console(json_out).print(outcome_line(result), markup=False)
    document = {"schema_version": 1, "kind": "launch-result", "run": str(run.path),
                "launches": json.loads(json.dumps(results, default=str))}
    console.write_json(check(LaunchResult, document), json_out)
    raise_for(results)


def outcome_line(result: dict) -> str:
    """One launch's outcome as stdout shows it: the startup time by its one definition
    (logs/startup_time.py), what is left running, and the phases."""
    line = f"{result['label']}: {result.get('outcome')}"
    startup = result.get("startup") or {}
    if startup.get("complete"):
        line += f", {startup_time.words(startup.get('startup_s'))}"
    left = sum(len(v) for v in (result.get("survivors") or {}).values())
    line += f", {left} process(es) left running" if left else ", nothing left running"
    phases = [p for p in startup.get("phases") or [] if p.get("duration_s") is not None]
    if phases:
        line += "\n  startup: " + ", ".join(f"{p['name']} {p['duration_s']:.1f} s"
                                           for p in phases)
    return line
