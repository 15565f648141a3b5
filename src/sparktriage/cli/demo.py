"""`sparktriage demo`: a whole session on the embedded default (local CPU vLLM, bundled tiny MoE)."""

from __future__ import annotations

import json
from pathlib import Path
from typing import Optional

import typer

from sparktriage.logs import startup_time
from sparktriage.cli import console
from sparktriage.cli.exit_codes import ExitCode
from sparktriage.cli.progress import protocol_lines
from sparktriage.cli.session_view import plain
from sparktriage.bench.render import delivered_table
from sparktriage.errors import LaunchError, UsageError




def render_summary(doc: dict) -> list[str]:
    """The demo's outcome as plain lines (stdout)."""
    from sparktriage.sweep.policy.words import decision_word
    lines = [f"run directory: {doc['run']}"]
    for launch in doc["launches"]:
        rate = launch["delivered_tok_s"]
        lines.append(f"  {launch['label']} depth {launch['depth']}: {launch['outcome']}"
                     + (f", {startup_time.words(launch['startup_s'])}"
                        if launch.get("startup_s") is not None else "")
                     + (f", code {rate:.1f} tok/s delivered decode" if rate is not None else "")
                     + (f", {launch['e2e_tok_s']:.1f} tok/s end to end" if launch["e2e_tok_s"] else "")
                     + (f", acceptance length {launch['acceptance_length']:.2f}"
                        if launch["acceptance_length"] else "")
                     + f", {launch['stall_findings']} stall finding(s)")
    probe = doc["probe"]
    if probe:
        lines.append(f"probe: {probe['verdict']}"
                     + (" (against the model's committed fingerprint)" if probe["baseline"] else "")
                     + f", {probe['tokens_spent']} tokens")
    lines += protocol_lines(doc["bench"])
    if doc["sweep"]:
        decision = doc["sweep"]
        word = decision_word(decision.get("state"), decision["depth"])
        lines.append(f"sweep decision: depth {decision['depth']}" + (f" ({word})" if word else "")
                     + f": {decision['reason']}")
    report = doc["report"]
    if report:
        lines.append(f"report: {report['dir']} (signed: {report['signed']}, "
                     f"verified: {report['verified']})")
        lines.append(f"verify it yourself: sparktriage verify {report['dir']} --key {report['public_key']}")
    failed = [s for s in doc["steps"] if s["status"] != "ok"]
    for step in failed:
        lines.append(f"FAILED {step['step']}" + (f" ({step['launch']})" if step["launch"] else "")
                     + f": {step['reason']}")
    return lines


def demo(
    out: Optional[Path] = typer.Option(None, "--out", help="Run directory [./runs/<timestamp>]."),
    requests: int = typer.Option(15, "--requests", min=1, help="Measured requests per workload."),
    max_tokens: int = typer.Option(256, "--max-tokens", min=1, help="Output tokens per request."),
    depths: str = typer.Option("0,2", "--depths", help="Speculative (ngram) depths to sweep, comma list; 0 = none."),
    launches: int = typer.Option(1, "--launches", min=1, help="Launches per depth (the unit of replication)."),
    no_probe: bool = typer.Option(False, "--no-probe", help="Skip the garbage probe."),
    formats: str = typer.Option("md,pdf", "--format", help="Report formats, comma list of md, pdf, html."),
    ready_timeout: float = typer.Option(600.0, "--ready-timeout", min=1, help="Seconds each launch may take to become ready."),
    json_out: Optional[str] = typer.Option(None, "--json", help="Write the demo summary to PATH, or - for stdout."),
    model: Optional[Path] = typer.Option(None, "--model", help="Model folder to serve [the test bed's models/tiny-moe, else the checkout's provision/garbage/model]."),
    dry_run: bool = typer.Option(False, "--dry-run", help="Print the plan (vLLM, model, fingerprint, launches) and start nothing."),
) -> None:
    """Run a whole session on the local CPU vLLM with the bundled tiny MoE: launch, stall watch,
    probe, protocol, speculative sweep, signed report."""
    from sparktriage.report.build import parse_formats
    from sparktriage.session.demo import DemoSettings, plan_demo, run_demo
    from sparktriage.session.plan import parse_depths
    from sparktriage.store.rundir import RunDir, default_run_path
    from sparktriage.testbed.paths import locate
    parse_formats(formats)  # a wrong --format fails now, not after the session
    settings = DemoSettings(depths=parse_depths(depths), launches=launches, requests=requests,
                            max_tokens=max_tokens, startup_timeout_s=ready_timeout,
                            probe=not no_probe, formats=formats)
    bed = locate().check()
    if dry_run:
        plan = plan_demo(bed, settings, model)
        plan_console = console.data_console(json_out)
        console.draw(plan.view(), plan_console)
        console.write_json(plan.to_json(), json_out)
        return
    run = RunDir.create(out or default_run_path(), ["sparktriage", *console.invoked_argv()])
    console.info(f"run directory: {run.path}")
    doc = run_demo(run, bed, settings, plain, model)
    out_console = console.data_console(json_out)
    first = run.path / "launches" / "L001" / "bench.json"
    if first.is_file():
        console.draw(delivered_table(json.loads(first.read_text(encoding="utf-8"))), out_console)
    for line in render_summary(doc):
        out_console.print(line, markup=False, highlight=False)
    console.write_json(doc, json_out)
    if not doc["launches"] or doc["launches"][0]["outcome"] != "completed":
        raise LaunchError("the demo server did not start; its bundle and logs are in "
                          f"{run.path / 'launches'}")
    findings = (any(s["status"] != "ok" for s in doc["steps"])
                or (doc["probe"] and doc["probe"]["verdict"] != "healthy")
                or any(l["stall_findings"] for l in doc["launches"]))
    if findings:
        raise typer.Exit(ExitCode.FINDINGS)
