"""`sparktriage report`: render, redact and sign a report folder from a run directory."""

from __future__ import annotations

from pathlib import Path
from typing import Optional

import typer

from sparktriage.cli import console


def _progress(event: str, details: dict) -> None:
    if event == "read":
        console.info(f"read {details['files']} documents of {details['launches']} launches")
    elif event == "redacted":
        line = f"redacted {details['secrets']} secret occurrences ({details['distinct']} distinct)"
        if details["anonymized"]:
            line += f", {details['anonymized']} host/IP/user occurrences anonymized"
        console.info(line)
    elif event == "rendered":
        console.info(f"rendered {details['plots']} plots")


def report(
    run_dir: Path = typer.Argument(..., metavar="RUN_DIR", help="Run directory to report on."),
    out: Optional[Path] = typer.Option(None, "--out", help="Report folder [RUN_DIR/report]."),
    formats: str = typer.Option("md,pdf", "--format", help="Comma list of md, pdf, html (report.json is always written)."),
    sign: Optional[str] = typer.Option(None, "--sign", help="Ed25519 OpenSSH private key file, 'agent', or a KEY.pub held by ssh-agent."),
    identity: Optional[str] = typer.Option(None, "--identity", help="Signer identity for the allowed-signers line [the key's comment]."),
    anonymize: bool = typer.Option(False, "--anonymize", help="Also replace host names, IPs and user names by stable stand-ins."),
    map_path: Optional[Path] = typer.Option(None, "--map", help="Private redaction map, kept outside the report [REPORT_DIR.private-map.json]."),
    json_out: Optional[str] = typer.Option(None, "--json", help="Write the build summary to PATH, or - for stdout."),
) -> None:
    """Render a redacted, signed Markdown and PDF report from a run directory."""
    from sparktriage.report.build import execute, plan_report
    from sparktriage.signing.signing import SignSpec
    spec = SignSpec(sign, identity) if sign else None
    if identity and not sign:
        console.warn("--identity has no effect without --sign")
    plan = plan_report(run_dir, out, formats, spec, anonymize, map_path)
    outcome = execute(plan, _progress)
    console.info(f"report: {outcome.report_dir} ({len(outcome.files)} files in MANIFEST)")
    console.info(f"private redaction map (keep it, never send it): {outcome.map_path}")
    if outcome.signed:
        console.info(f"signed by {outcome.identity}, key {outcome.fingerprint}")
        console.info(f"allowed-signers line: {outcome.allowed_signers_line}")
    else:
        console.warn("the report is not signed (use --sign KEY)")
    console.write_json(outcome.as_dict(), json_out)
