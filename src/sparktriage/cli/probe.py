"""`sparktriage probe`: is this server producing FP4 garbage? (healthy / suspect / garbage)."""

from __future__ import annotations

import os
from pathlib import Path
from typing import Optional

import typer

from sparktriage.cli import console
from sparktriage.cli.progress import probe_progress
from sparktriage.cli.exit_codes import ExitCode
from sparktriage.errors import UsageError




def probe(
    endpoint: str = typer.Option(..., "--endpoint", help="Server base URL, e.g. http://host:8000."),
    baseline: Optional[Path] = typer.Option(None, "--baseline", help="Fingerprint of a known-good launch to compare with."),
    reference: Optional[str] = typer.Option(None, "--reference", help="Base URL of a known-good server to compare with live."),
    save_baseline: Optional[Path] = typer.Option(None, "--save-baseline", help="Write this launch's fingerprint to FILE."),
    model: Optional[str] = typer.Option(None, "--model", help="Model id [the first one /v1/models lists]."),
    api_key: Optional[str] = typer.Option(None, "--api-key", help="Bearer token [env OPENAI_API_KEY]."),
    seed: Optional[int] = typer.Option(None, "--seed", help="Seed of the fresh copy strings and operands [random]."),
    concurrency: int = typer.Option(32, "--concurrency", min=1, help="Requests in flight at once."),
    timeout: float = typer.Option(120.0, "--timeout", min=1.0, help="Seconds one request may take."),
    out: Optional[Path] = typer.Option(None, "--out", help="Run directory for raw replies [./runs/<timestamp>]."),
    launch_label: Optional[str] = typer.Option(None, "--launch", help="Record into this existing launch of --out (e.g. L001, made by an earlier bench, probe or launch) instead of a new one."),
    json_out: Optional[str] = typer.Option(None, "--json", help="Write the probe document to PATH, or - for stdout."),
) -> None:
    """Probe a server for FP4 garbage (healthy / suspect / garbage, with the evidence)."""
    import asyncio
    from sparktriage.documents.probe import ProbeDocument
    from sparktriage.probe import baseline as baseline_io
    from sparktriage.probe.render import render
    from sparktriage.probe.runner import ProbeSettings, run_probe
    from sparktriage.store.documents import RecordWriter
    from sparktriage.store.rundir import claim_launch, default_run_path, provisional_run
    if baseline is not None and reference is not None:
        raise UsageError("give --baseline or --reference, not both")
    if baseline is not None:
        baseline_io.load(baseline)  # fail on a bad file before touching the server
    settings = ProbeSettings(endpoint=endpoint, model=model,
                             api_key=api_key or os.environ.get("OPENAI_API_KEY") or None, seed=seed,
                             baseline=baseline, reference=reference, concurrency=concurrency, timeout_s=timeout)
    if launch_label is not None and out is None:
        raise UsageError("--launch names a launch of an existing run: give --out RUN_DIR too")
    with provisional_run(out or default_run_path(), ["sparktriage", *console.invoked_argv()]) as run:
        launch = claim_launch(run, launch_label, ("probe-requests.jsonl", "probe.json"))
        console.info(f"run directory: {run.path}")
        with RecordWriter(launch.path / "probe-requests.jsonl") as writer:
            outcome = asyncio.run(run_probe(settings, probe_progress, writer.append))
    document = outcome.document
    launch.write("probe.json", document, ProbeDocument)
    if save_baseline is not None:
        if outcome.fingerprint is None:
            raise UsageError("no baseline written: the server returned no prompt logprobs to fingerprint")
        baseline_io.save(outcome.fingerprint, save_baseline, document["endpoint"], outcome.server_version)
        console.info(f"baseline fingerprint written to {save_baseline}")
    console.draw(render(document), console.data_console(json_out))
    console.write_json(document, json_out)
    if document["verdict"] in ("garbage", "suspect"):
        raise typer.Exit(ExitCode.FINDINGS)
