"""`sparktriage demo`: the main job on the embedded default (local CPU vLLM, bundled tiny model)."""

from __future__ import annotations

from pathlib import Path
from typing import Optional

import typer

from sparktriage.bench.client import ClientSettings
from sparktriage.bench.protocol import ProtocolPlan, run_protocol
from sparktriage.bench.workload import load_workloads
from sparktriage.cli import console
from sparktriage.cli.app import app, invoked_argv
from sparktriage.cli.bench import _progress, render_table
from sparktriage.cli.exit_codes import ExitCode
from sparktriage.store.rundir import RunDir, default_run_path
from sparktriage.testbed.paths import locate
from sparktriage.testbed.server import LocalServer, ServeSpec


@app.command("demo")
def demo(
    out: Optional[Path] = typer.Option(None, "--out", help="Run directory [./runs/<timestamp>]."),
    requests: int = typer.Option(15, "--requests", min=1, help="Measured requests per workload."),
    max_tokens: int = typer.Option(256, "--max-tokens", min=1, help="Output tokens per request."),
    ready_timeout: float = typer.Option(300.0, "--ready-timeout", min=1, help="Seconds to wait for the server to start."),
    json_out: Optional[str] = typer.Option(None, "--json", help="Write the bench document to PATH, or - for stdout."),
) -> None:
    """Start the local CPU vLLM with the bundled tiny model and run the protocol against it."""
    bed = locate().check()
    run = RunDir.create(out or default_run_path(), ["sparktriage", *invoked_argv()])
    launch = run.next_launch()
    console.info(f"run directory: {run.path}")
    spec = ServeSpec(model=bed.model())
    workloads = tuple(w.model_copy(update={"requests": requests, "max_tokens": max_tokens})
                      for w in load_workloads(["code,prose"]))
    with LocalServer(bed, spec, launch.path / "server.log") as server:
        console.info(f"starting vllm serve on {server.base_url} (about a minute on a small CPU)")
        seconds = server.wait_ready(ready_timeout)
        console.info(f"server ready after {seconds:.1f} s")
        plan = ProtocolPlan(ClientSettings(base_url=server.base_url), None, workloads)
        document = run_protocol(plan, launch, _progress)
    console.data_console(json_out).print(render_table(document))
    for w in document["workloads"]:
        for warning in w["warnings"]:
            console.warn(f"{w['name']}: {warning}")
    console.write_json(document, json_out)
    console.info(f"results: {launch.path / 'bench.json'}; server log: {server.log_path}")
    failed = sum(w["summary"]["counts"]["error"] + w["summary"]["counts"]["incomplete"]
                 for w in document["workloads"])
    if failed:
        raise typer.Exit(ExitCode.FINDINGS)
