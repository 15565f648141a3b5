"""`sparktriage selfcheck`: check your own server: garbage, delivered tokens, logs, a report."""

from __future__ import annotations

import json
import os
from pathlib import Path
from typing import List, Optional

import typer

from sparktriage.logs import startup_time
from sparktriage.cli import console
from sparktriage.cli.progress import protocol_lines
from sparktriage.cli.session_view import plain
from sparktriage.bench.render import delivered_table
from sparktriage.cli.exit_codes import ExitCode
from sparktriage.errors import UsageError


def render_summary(doc: dict) -> list[str]:
    """The check's outcome as plain lines (stdout)."""
    lines = [f"run directory: {doc['run']}" + (f" (launch {doc['launch']})" if doc["launch"] else
                                                " (nothing measured)")]
    ready = doc.get("readiness")
    if ready:
        lines.append(f"readiness ({ready['api']}): {ready['outcome']}"
                     + (f", {ready['content_chars']} characters of content, finish "
                        f"{ready['finish_reason']}, model {ready['model_answered']}"
                        if ready["outcome"] == "answered" else f" ({ready.get('reason')})"))
    if doc.get("fields"):
        lines.append(f"invented request field: {doc['fields']['verdict']} (HTTP {doc['fields']['status']})")
    for finding in doc.get("findings") or []:
        lines.append(f"{finding['severity'].upper()} {finding['id']}: {finding['text']}")
    probe = doc["probe"]
    if probe:
        lines.append(f"output quality: {probe['verdict'].upper()}"
                     + (" (against the baseline)" if probe["baseline"] else " (no baseline given)")
                     + f", {probe['tokens_spent']} tokens")
        if probe["verdict"] != "healthy" and probe.get("advice"):
            lines.append(f"  advice: {probe['advice']}")
    lines += protocol_lines(doc["bench"])
    startup = doc["startup"]
    if startup:
        lines.append(f"startup in the log: {'complete' if startup['complete'] else 'incomplete'}, "
                     + startup_time.words(startup.get("startup_s")))
    if doc["stalls"] is not None:
        if not doc["stalls"]:
            lines.append("stalls: none found")
        for f in doc["stalls"]:
            lines.append(f"stall: {f['cause']} in {f['phase']}, {f['duration_s']:.0f} s ({f['kind']})")
    report = doc["report"]
    if report:
        lines.append(f"report: {report['dir']} (signed: {report['signed']}; "
                     f"private redaction map, never send it: {report['map']})")
    for step in doc["steps"]:
        if step["status"] != "ok":
            lines.append(f"FAILED {step['step']}: {step['reason']}")
    return lines


def selfcheck(
    endpoint: str = typer.Option(..., "--endpoint", help="Server base URL, e.g. http://host:8000."),
    log: Optional[List[str]] = typer.Option(None, "--log", help="Server log: FILE, NODE=FILE, a bundle or *.lines.jsonl (repeatable; the first is classified for stalls)."),
    metrics: Optional[str] = typer.Option(None, "--metrics", help="Prometheus URL [ENDPOINT/metrics]."),
    no_metrics: bool = typer.Option(False, "--no-metrics", help="Do not scrape Prometheus."),
    quick: bool = typer.Option(False, "--quick", help="5 requests of 128 tokens per workload instead of 15 of 256."),
    workload: list[str] = typer.Option(["code,prose"], "--workload", help="Built-in workload names or YAML files (comma lists)."),
    baseline: Optional[Path] = typer.Option(None, "--baseline", help="Fingerprint of a known-good launch (probe)."),
    reference: Optional[str] = typer.Option(None, "--reference", help="Base URL of a known-good server (probe)."),
    no_probe: bool = typer.Option(False, "--no-probe", help="Skip the garbage probe."),
    model: Optional[str] = typer.Option(None, "--model", help="Model id [the first one /v1/models lists]."),
    api_key: Optional[str] = typer.Option(None, "--api-key", help="Bearer token [env OPENAI_API_KEY]."),
    log_tz: Optional[str] = typer.Option(None, "--log-tz", help="Time zone of the log's stamps: UTC, +02:00, Europe/Paris [local]."),
    sign: Optional[str] = typer.Option(None, "--sign", help="Sign the report: Ed25519 OpenSSH key file, 'agent', or KEY.pub in ssh-agent."),
    formats: str = typer.Option("md,pdf", "--format", help="Report formats, comma list of md, pdf, html."),
    out: Optional[Path] = typer.Option(None, "--out", help="Run directory [./runs/<timestamp>]."),
    json_out: Optional[str] = typer.Option(None, "--json", help="Write the summary to PATH, or - for stdout."),
    answer_deadline: float = typer.Option(120.0, "--answer-deadline", min=0.1, max=3600, help="Seconds the first (readiness) request may take before the server counts as not answering."),
    max_pause: float = typer.Option(5.0, "--max-pause", min=0.01, max=3600, help="Seconds of silence between two chunks of an answer before it is a finding."),
) -> None:
    """Check a running server: garbage probe, delivered tokens, log and metrics reconciliation, report."""
    from sparktriage.logs.clock import parse_tz
    from sparktriage.logs.sources import resolve_inputs
    from sparktriage.probe import baseline as baseline_io
    from sparktriage.report.build import parse_formats
    from sparktriage.signing.signing import SignSpec
    from sparktriage.signing.signing import resolve as resolve_signer
    from sparktriage.session.selfcheck import (SelfcheckSettings, check_endpoint, has_findings,
                                               quick_budget, run_selfcheck)
    from sparktriage.store.rundir import RunDir, default_run_path
    if baseline is not None and reference is not None:
        raise UsageError("give --baseline or --reference, not both")
    if metrics is not None and no_metrics:
        raise UsageError("give --metrics or --no-metrics, not both")
    if baseline is not None:
        baseline_io.load(baseline)  # a bad file fails before anything is sent
    if log:
        resolve_inputs(log)  # a wrong path fails now, not after the measurement
    parse_formats(formats)
    if sign:
        resolve_signer(SignSpec(sign))  # an unreadable or unusable key fails before the check
    settings = SelfcheckSettings(
        endpoint=endpoint, logs=tuple(log or ()), metrics=None if no_metrics else (metrics or ""),
        model=model, api_key=api_key or os.environ.get("OPENAI_API_KEY") or None,
        baseline=baseline, reference=reference, quick=quick, workloads=tuple(workload),
        sign=SignSpec(sign) if sign else None, formats=formats, tz=parse_tz(log_tz), probe=not no_probe,
        tz_name=log_tz, answer_deadline_s=answer_deadline, max_pause_s=max_pause)
    check_endpoint(settings)  # unreachable: exit 3 before a run directory exists
    run = RunDir.create(out or default_run_path(), ["sparktriage", *console.invoked_argv()])
    console.info(f"run directory: {run.path}")
    console.info(quick_budget(settings))
    doc = run_selfcheck(run, settings, plain)
    data = console.data_console(json_out)
    bench_doc = run.path / "launches" / (doc["launch"] or "-") / "bench.json"
    if doc["launch"] and bench_doc.is_file():
        console.draw(delivered_table(json.loads(bench_doc.read_text(encoding="utf-8"))), data)
    for line in render_summary(doc):
        data.print(line, markup=False, highlight=False)
    console.write_json(doc, json_out)
    if not (doc["report"] or {}).get("signed"):
        console.warn("the report is not signed (use --sign KEY)")
    if has_findings(doc):
        raise typer.Exit(ExitCode.FINDINGS)
