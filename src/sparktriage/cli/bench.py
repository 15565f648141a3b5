"""`sparktriage bench`: the delivered-token protocol against one running server."""

from __future__ import annotations

import os
import time
from pathlib import Path
from typing import List, Optional

import typer

from sparktriage.cli import console
from sparktriage.cli.exit_codes import ExitCode
from sparktriage.cli.progress import bench_progress
from sparktriage.bench.render import delivered_table
from sparktriage.reconcile.render import render as reconcile_view
from sparktriage.errors import UsageError








def _failed(document: dict) -> int:
    return sum(w["summary"]["counts"]["error"] + w["summary"]["counts"]["incomplete"]
               for w in document["workloads"])


def _rebuild(path: Path, json_out: str | None) -> None:
    from sparktriage.bench.protocol import rebuild_run
    from sparktriage.store.rundir import RunDir
    documents = rebuild_run(RunDir.open(path))
    for document in documents:
        console.draw(delivered_table(document), console.data_console(json_out))
    console.write_json(documents[0] if len(documents) == 1 else
                       {"schema_version": documents[0]["schema_version"], "launches": documents}, json_out)
    console.info(f"rebuilt bench.json of {len(documents)} launch(es) in {path} from requests.jsonl")
    if any(_failed(d) for d in documents):
        raise typer.Exit(ExitCode.FINDINGS)


def bench(
    endpoint: Optional[str] = typer.Option(None, "--endpoint", help="Server base URL, e.g. http://host:8000."),
    workload: list[str] = typer.Option(
        ["code,prose"], "--workload", help="Built-in workload names or YAML files (comma lists)."
    ),
    requests: Optional[int] = typer.Option(None, "--requests", min=1, help="Measured requests per workload [15]."),
    max_tokens: Optional[int] = typer.Option(None, "--max-tokens", min=1, help="Output tokens per request [256]."),
    warmup: Optional[int] = typer.Option(None, "--warmup", min=0, help="Warm-up requests per workload, excluded [1]."),
    model: Optional[str] = typer.Option(None, "--model", help="Model id [the first one /v1/models lists]."),
    api_key: Optional[str] = typer.Option(None, "--api-key", help="Bearer token [env OPENAI_API_KEY]."),
    out: Optional[Path] = typer.Option(None, "--out", help="Run directory [./runs/<timestamp>]."),
    launch_label: Optional[str] = typer.Option(None, "--launch", help="Record into this existing launch of --out (e.g. L001, made by an earlier bench, probe or launch) instead of a new one."),
    stall_timeout: float = typer.Option(60.0, "--stall-timeout", min=0.1, help="Seconds without data before a request counts as stalled."),
    insecure: bool = typer.Option(False, "--insecure", help="Do not verify the server's TLS certificate (https)."),
    rebuild: Optional[Path] = typer.Option(None, "--rebuild", help="Rebuild bench.json of RUN_DIR from its raw records; nothing is sent."),
    json_out: Optional[str] = typer.Option(None, "--json", help="Write the bench document to PATH, or - for stdout."),
    roofline: Optional[Path] = typer.Option(None, "--roofline", metavar="DEPLOY", help="Deployment YAML with a roofline: block; each delivered rate is also shown as % of its ceiling."),
    log: Optional[List[str]] = typer.Option(None, "--log", help="Server log to reconcile with: FILE, NODE=FILE or *.lines.jsonl (repeatable)."),
    metrics: Optional[str] = typer.Option(None, "--metrics", help="Prometheus URL scraped before and after each workload, e.g. http://host:8000/metrics."),
    log_wait: float = typer.Option(15.0, "--log-wait", min=0, help="Seconds to wait for the stats line that covers the end of the run."),
    log_tz: Optional[str] = typer.Option(None, "--log-tz", help="Time zone of the log's stamps: UTC, +02:00, Europe/Paris [local]."),
) -> None:
    """Measure tokens delivered to a streaming client (TTFT, decode and end-to-end rates)."""
    from sparktriage.bench.client import ClientSettings
    from sparktriage.bench.workload import load_workloads
    from sparktriage.logs.clock import parse_tz
    from sparktriage.logs.sources import resolve_inputs
    from sparktriage.store.rundir import claim_launch, default_run_path, provisional_run
    if rebuild is not None:
        if endpoint is not None:
            raise UsageError("--rebuild works offline: do not give --endpoint with it")
        _rebuild(rebuild, json_out)
        return
    if endpoint is None:
        raise UsageError("missing option --endpoint (or --rebuild RUN_DIR)")
    workloads = load_workloads(workload)
    overrides = {k: v for k, v in (("requests", requests), ("max_tokens", max_tokens),
                                   ("warmup", warmup)) if v is not None}
    workloads = tuple(w.model_copy(update=overrides) for w in workloads)
    settings = ClientSettings(
        base_url=endpoint, api_key=api_key or os.environ.get("OPENAI_API_KEY") or None,
        stall_timeout_s=stall_timeout, verify_tls=not insecure,
    )
    if launch_label is not None and out is None:
        raise UsageError("--launch names a launch of an existing run: give --out RUN_DIR too")
    zone = parse_tz(log_tz)
    if log:
        resolve_inputs(log)  # a wrong path fails now, not after the measurement
    roof = None
    if roofline is not None:
        from sparktriage.config.deployment import load_deployment
        from sparktriage.roofline.ceiling import deployment_ceiling
        roof = deployment_ceiling(load_deployment(roofline))
        if roof is None:
            raise UsageError(f"--roofline {roofline}: the deployment has no roofline: block (docs/roofline.md)")
    with provisional_run(out or default_run_path(), ["sparktriage", *console.invoked_argv()]) as run:
        launch = claim_launch(run, launch_label, ("launch.json", "requests.jsonl", "bench.json"))
        console.info(f"run directory: {run.path}")
        _measure(run, launch, settings, model, workloads, log, log_wait, metrics, zone, json_out, roof)


def _measure(run, launch, settings, model, workloads, log, log_wait, metrics, zone, json_out,
             roof=None) -> None:
    """The protocol on one launch, its reconciliation when a log or /metrics is given, output."""
    from sparktriage.bench.metrics_recorder import MetricsRecorder, wait_for_log
    from sparktriage.bench.protocol import ProtocolPlan, run_protocol
    from sparktriage.reconcile.launch import reconcile_launch
    headers = {"Authorization": f"Bearer {settings.api_key}"} if settings.api_key else None
    recorder = MetricsRecorder(metrics, launch, console.warn, headers) if metrics else None
    observe = recorder.observer(bench_progress) if recorder else bench_progress
    document = run_protocol(ProtocolPlan(settings, model, workloads), launch, observe)
    console.draw(delivered_table(document), console.data_console(json_out))
    if roof is not None:  # every delivered rate also as % of the deployment's ceiling
        from sparktriage.roofline.ceiling import bench_fractions
        document = {**document, "roofline": bench_fractions(roof, document)}
        launch.write("bench.json", {k: v for k, v in document.items() if k != "schema_version"})
        for row in document["roofline"]["workloads"]:
            if row["roofline_pct"] is not None:
                console.data_console(json_out).print(
                    f"{row['workload']}: {row['delivered_tok_s']:.2f} tok/s is {row['roofline_pct']:.1f}% "
                    f"of the {row['ceiling_tok_s']:.1f} tok/s ceiling", markup=False, highlight=False)
    for w in document["workloads"]:
        for warning in w["warnings"]:
            console.warn(f"{w['name']}: {warning}")
    if log or metrics:
        if log and not wait_for_log(log, time.time() - 1.0, log_wait, zone):
            console.warn(f"no stats line in {', '.join(log)} after the run within {log_wait:g} s")
        reconciled = reconcile_launch(launch, log or (), tz=zone)
        console.draw(reconcile_view(reconciled), console.data_console(json_out))
        document = {**document, "reconcile": reconciled}
    console.write_json(document, json_out)
    console.info(f"raw records: {launch.requests_path}; summary: {launch.path / 'bench.json'}")
    if _failed(document):
        raise typer.Exit(ExitCode.FINDINGS)
