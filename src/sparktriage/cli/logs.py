"""`sparktriage logs`: parse vLLM logs into a startup timeline, throughput series and findings."""

from __future__ import annotations

from pathlib import Path
from typing import List, Optional

import typer

from sparktriage.cli import console
from sparktriage.cli.exit_codes import ExitCode
from sparktriage.errors import UsageError


def logs(
    log: List[str] = typer.Argument(..., help="Log files, NODE=FILE, bundles (folder or .tar.gz), or - for stdin."),
    json_out: Optional[str] = typer.Option(None, "--json", help="Write the logs document to PATH, or - for stdout."),
    tz: Optional[str] = typer.Option(None, "--tz", help="Time zone of the log's stamps: UTC, +02:00, Europe/Paris [local]."),
    year: Optional[int] = typer.Option(None, "--year", min=1970, max=9999, help="Year of the first stamp [inferred from file time]."),
) -> None:
    """Parse vLLM logs: startup phases, throughput and speculative-decoding series, kernels, errors."""
    from sparktriage.documents.logs import LogsDocument
    from sparktriage.logs.clock import parse_tz
    from sparktriage.logs.render import render
    from sparktriage.logs.scan import analyze_inputs
    from sparktriage.logs.untimed import require_log
    from sparktriage.store.typed import check
    zone = parse_tz(tz)
    if json_out is not None and json_out != "-" and Path(json_out).is_dir():
        raise UsageError(f"--json {json_out}: is a folder")
    document = analyze_inputs(log, tz=zone, year=year)
    require_log(", ".join(log), document)
    console.draw(render(document), console.data_console(json_out))
    console.write_json(check(LogsDocument, {"schema_version": 1, **document}), json_out)
    if any(f["severity"] == "error" for f in document["findings"]):
        raise typer.Exit(ExitCode.FINDINGS)
