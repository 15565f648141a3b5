"""`sparktriage collect`: an evidence bundle around a server sparktriage did not start."""

from __future__ import annotations

import datetime as _dt
import re
import shlex
from pathlib import Path
from typing import Optional

import typer

from sparktriage.cli import console
from sparktriage.cli.exit_codes import ExitCode
from sparktriage.errors import UsageError


def _progress(event: str, details: dict) -> None:
    if event == "started":
        console.info(f"collecting into {details['bundle']} ({details['transport']})")
    elif event == "attached":
        if details.get("error"):
            console.warn(details["error"])
        else:
            console.info(f"attached to pid {details['pid']}: {details.get('cmdline', '')[:120]}")
    elif event == "marker":
        console.info(f"[{details['node']}] {details['marker']}")
    elif event == "ready":
        console.info(f"server ready after {details['after_s']:.1f} s")
    elif event == "exited":
        what = details.get("error") or f"status {details.get('rc')}"
        console.info(f"target {details.get('name')} ended ({what})")


def collect(
    pid: Optional[int] = typer.Option(None, "--pid", min=1, help="Attach to this server process."),
    match: Optional[str] = typer.Option(None, "--match", help="Attach to the first process whose command line matches this regular expression (waits for it)."),
    cmd: Optional[str] = typer.Option(None, "--cmd", help="Run this command (split like a shell would, never run by one) and collect around it; it is stopped at the end."),
    out: Optional[Path] = typer.Option(None, "--out", help="Bundle folder [./bundle-<timestamp>]."),
    duration: Optional[float] = typer.Option(None, "--duration", min=0.1, help="Stop after this many seconds [until Ctrl-C or the target exits]."),
    until_ready: bool = typer.Option(False, "--until-ready", help="Stop once GET /health answers 200."),
    endpoint: Optional[str] = typer.Option(None, "--endpoint", help="Server URL for --until-ready [http://127.0.0.1:<its --port, or 8000>]."),
    interval: float = typer.Option(1.0, "--interval", min=0.05, help="Seconds between samples."),
    stacks: float = typer.Option(15.0, "--stacks", min=0.0, help="Seconds between py-spy dumps of every rank; 0: only a last dump at the end."),
    log: list[Path] = typer.Option([], "--log", help="Also follow this log file (repeatable)."),
    export: Optional[Path] = typer.Option(None, "--export", help="Also write the bundle as one .tar.gz here."),
    ssh: Optional[str] = typer.Option(None, "--ssh", help="Collect on this node over SSH ([user@]host or ssh_config alias)."),
    ssh_config: Optional[Path] = typer.Option(None, "--ssh-config", help="ssh_config file to use [~/.ssh/config]."),
    python: Optional[str] = typer.Option(None, "--python", help="Interpreter that runs the agent on the node [python3 over SSH]."),
    pyspy: Optional[str] = typer.Option(None, "--pyspy", help="py-spy executable on the node [looked up there]."),
    node: str = typer.Option("local", "--node", help="Node name in the bundle."),
    dry_run: bool = typer.Option(False, "--dry-run", help="Print the collector plan and stop."),
    json_out: Optional[str] = typer.Option(None, "--json", help="Write the result summary to PATH, or - for stdout."),
) -> None:
    """Collect an evidence bundle around a running server (by PID, by command-line match, or by running a command)."""
    from sparktriage.launch.attach_collect import CollectRequest, endpoint_from_argv, run_collect
    from sparktriage.launch.render import render_collect_plan
    from sparktriage.launch.transport import Transport
    if sum(x is not None for x in (pid, match, cmd)) != 1:
        raise UsageError("give exactly one of --pid, --match or --cmd")
    if match is not None:
        try:
            re.compile(match)
        except re.error as exc:
            raise UsageError(f"--match: not a regular expression ({exc})") from None
    argv = None
    if cmd is not None:
        try:
            argv = tuple(shlex.split(cmd))
        except ValueError as exc:
            raise UsageError(f"--cmd: {exc}") from None
        if not argv:
            raise UsageError("--cmd is empty")
    if until_ready and endpoint is None and argv is not None:
        endpoint = endpoint_from_argv(argv)  # the command's own --host/--port, not a default
        if endpoint is None:
            raise UsageError("--until-ready: cannot tell which address the --cmd command serves "
                             "on (no --port in it); give --endpoint URL")
    stamp = _dt.datetime.now().strftime("%Y%m%d-%H%M%S")
    request = CollectRequest(
        out=out or Path(f"bundle-{stamp}"), node=node, pid=pid, match=match, cmd=argv,
        duration_s=duration, until_ready=until_ready, endpoint=endpoint, interval_s=interval,
        stacks_interval_s=stacks or None, logs=tuple(str(p) for p in log),
        transport=Transport(destination=ssh, ssh_config=str(ssh_config) if ssh_config else None),
        python=python, pyspy=pyspy, export=export,
    )
    if dry_run:
        console.draw(render_collect_plan(request), console.data_console(json_out))
        return
    result = run_collect(request, _progress)
    console.data_console(json_out).print(
        f"outcome: {result['outcome']}\nbundle: {result['bundle']}"
        + (f"\narchive: {result['archive']}" if result["archive"] else ""), markup=False)
    console.write_json({"schema_version": 1, "kind": "collect-result", **result}, json_out)
    if result["outcome"] == "interrupted":
        raise typer.Exit(ExitCode.INTERRUPTED)
