"""`sparktriage logs`: parse vLLM logs into a startup timeline, throughput series and findings."""

from __future__ import annotations

from pathlib import Path
from typing import List, Optional

import typer

from sparktriage.cli import console
from sparktriage.cli.exit_codes import ExitCode
from sparktriage.errors import UsageError


def _s(value: float | None, digits: int = 1) -> str:
    return "-" if value is None else f"{value:.{digits}f}"


def _clock(text: str | None) -> str:
    return "-" if not text else text[11:23] if len(text) > 19 else text


def _phase_table(doc: dict) -> Table:
    from rich.table import Table
    table = Table(title="Startup phases (wall clock)", title_justify="left")
    for column in ("phase", "start", "end", "seconds", "first line"):
        table.add_column(column, justify="right" if column == "seconds" else "left",
                         overflow="fold")
    for p in doc["phases"]:
        name = p["name"] + (" (open)" if p["open"] else "")
        table.add_row(name, _clock(p["start"]), _clock(p["end"]), _s(p["duration_s"]),
                      (p["anchor"] or "")[:70])
    return table


def _gap_table(doc: dict) -> Table:
    from rich.table import Table
    table = Table(title="Reported by vLLM vs wall clock", title_justify="left")
    for column in ("what", "reported s", "wall s", "gap s", ""):
        table.add_column(column, justify="left" if column in ("what", "") else "right")
    for g in doc["gaps"]:
        table.add_row(g["name"], _s(g["reported_s"], 2), _s(g["wall_s"]), _s(g["gap_s"]),
                      "unaccounted time" if g["significant"] else "")
    return table


def render(doc: dict) -> Group:
    """The human-readable view of a `logs` document."""
    from rich.console import Group
    from rich.text import Text
    parts: list = []
    st = doc["startup"]
    state = ("complete" if st["complete"] else "FAILED" if st["failed"] else
             f"incomplete (in {st['current_phase']})")
    if not st["seen"]:
        state = "not in this log (it starts while serving)" if st["complete"] else "not found"
    head = (f"vLLM {doc['version'] or 'version unknown'}, model {doc['model'] or 'unknown'}: "
            f"startup {state}")
    if st["startup_s"] is not None:
        head += f" in {st['startup_s']:.1f} s"
    if st["attempts"] > 1:
        head += f" (attempt {st['attempts']})"
    parts.append(Text(head, style="bold"))
    if doc["phases"]:
        parts.append(_phase_table(doc))
    if doc["gaps"]:
        parts.append(_gap_table(doc))
    for silence in sorted(doc["silences"], key=lambda x: -x["duration_s"])[:3]:
        if silence["duration_s"] >= 10:
            parts.append(Text(f"silent {silence['duration_s']:.0f} s during {silence['phase']} "
                              f"after: {silence['before'][:120]}"))
    reported = ", ".join(f"{k} {v:g}" for k, v in doc["reported"].items())
    if reported:
        parts.append(Text(f"reported: {reported}"))
    thr = doc["throughput"]
    gen, prompt = thr["generation"], thr["prompt"]
    if gen["windows"]:
        parts.append(Text(
            f"generation throughput over {gen['windows']} windows of ~{thr['interval_s']:g} s: "
            f"mean {_s(gen['mean'])}, active mean {_s(gen['mean_active'])}, peak "
            f"{_s(gen['peak'])} tok/s; prompt: mean {_s(prompt['mean'])}, peak {_s(prompt['peak'])}"))
    spec = doc["spec_decode"]
    if spec:
        per_pos = ", ".join(f"{v:.3f}" for v in spec["per_position"])
        parts.append(Text(
            f"speculative decoding over {spec['windows']} windows: mean acceptance length "
            f"{_s(spec['mean_acceptance_length'], 2)}, accepted {spec['accepted']} of "
            f"{spec['drafted']} drafted, per position [{per_pos}]"))
    if doc["kernels"]:
        parts.append(Text("kernels: " + "; ".join(doc["kernels"])))
    if doc["warnings_total"]:
        parts.append(Text(f"{doc['warnings_total']} warnings ({len(doc['warnings'])} distinct; "
                          "see --json)"))
    for e in doc["errors"][:10]:
        parts.append(Text(f"error {_clock(e['time'])}: {e['text'][:300]}", style="red"))
    if doc["errors_total"] > 10:
        parts.append(Text(f"... {doc['errors_total'] - 10} more errors (see --json)"))
    for f in doc["findings"]:
        style = {"error": "red", "warning": "yellow"}.get(f["severity"], "")
        parts.append(Text(f"{f['severity']}: {f['text']}", style=style))
    return Group(*parts)




def logs(
    log: List[str] = typer.Argument(..., help="Log files, NODE=FILE, bundles (folder or .tar.gz), or - for stdin."),
    json_out: Optional[str] = typer.Option(None, "--json", help="Write the logs document to PATH, or - for stdout."),
    tz: Optional[str] = typer.Option(None, "--tz", help="Time zone of the log's stamps: UTC, +02:00, Europe/Paris [local]."),
    year: Optional[int] = typer.Option(None, "--year", min=1970, max=9999, help="Year of the first stamp [inferred from file time]."),
) -> None:
    """Parse vLLM logs: startup phases, throughput and speculative-decoding series, kernels, errors."""
    from sparktriage.logs.clock import parse_tz
    from sparktriage.logs.scan import analyze_inputs
    zone = parse_tz(tz)
    if json_out is not None and json_out != "-" and Path(json_out).is_dir():
        raise UsageError(f"--json {json_out}: is a folder")
    document = analyze_inputs(log, tz=zone, year=year)
    console.data_console(json_out).print(render(document))
    console.write_json({"schema_version": 1, **document}, json_out)
    if any(f["severity"] == "error" for f in document["findings"]):
        raise typer.Exit(ExitCode.FINDINGS)
