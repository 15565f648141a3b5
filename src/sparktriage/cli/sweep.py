"""`sparktriage sweep`: speculative depth on any deployment, adaptive relaunches, a gate."""

from __future__ import annotations

from pathlib import Path
from typing import List, Optional

import typer

from sparktriage.cli import console
from sparktriage.cli.exit_codes import ExitCode
from sparktriage.cli.progress import sweep_progress
from sparktriage.errors import LaunchError, UsageError


def sweep(
    deploy: Optional[Path] = typer.Argument(None, metavar="DEPLOY", help="Deployment YAML to sweep (not with --resume)."),
    lab: Optional[Path] = typer.Option(None, "--lab", help="Lab file, instead of the deployment's."),
    depths: str = typer.Option("0,1,2,3,4", "--depths", help="Speculative depths, comma list; 0 = no speculative config (always swept)."),
    method: Optional[str] = typer.Option(None, "--method", help="Speculative method [the deployment's, else ngram]."),
    max_launches: Optional[int] = typer.Option(None, "--max-launches", min=1, help="Launches in all, failed ones included [3 per depth]."),
    min_launches: int = typer.Option(1, "--min-launches-per-depth", min=1, help="Launches on every depth before the adaptive allocation."),
    budget: Optional[float] = typer.Option(None, "--budget", min=0.1, help="Lab time budget, minutes."),
    requests: int = typer.Option(15, "--requests", min=1, help="Measured requests per workload per launch."),
    max_tokens: int = typer.Option(256, "--max-tokens", min=1, help="Output tokens per request."),
    workload: str = typer.Option("code", "--workload", help="Workloads, comma list (the first decides)."),
    out: Optional[Path] = typer.Option(None, "--out", metavar="DIR", help="Run directory of the sweep."),
    resume: Optional[Path] = typer.Option(None, "--resume", metavar="DIR", help="Continue the sweep in this run directory."),
    rebuild: Optional[Path] = typer.Option(None, "--rebuild", metavar="DIR", help="Recompute every decision of the sweep in DIR from its launch folders and rewrite its sweep.json; launches nothing."),
    baseline: Optional[Path] = typer.Option(None, "--baseline", help="Probe baseline: the probe's differential verdict joins the gate."),
    no_model: bool = typer.Option(False, "--no-model", help="Decide with the black-box rule alone, without the depth model (docs/sweep.md)."),
    pairs: int = typer.Option(2, "--pairs", min=0, max=64, help="Pairs of concurrent requests after each launch's protocol, for the step cost with two streams; 0: none (docs/sweep.md)."),
    json_out: Optional[str] = typer.Option(None, "--json", metavar="PATH|-", help="Write the sweep document to PATH, or - for stdout."),
    accept: Optional[List[str]] = typer.Option(None, "--accept-client-code", help="Client code the deployment runs that you accept, by name, comma list (repeatable; docs/security.md)."),
    accept_from: Optional[List[Path]] = typer.Option(None, "--accept-client-code-from", help="File of accepted client-code names, one a line."),
) -> None:
    """Relaunch a deployment per speculative depth, measure delivered tokens with intervals over
    launches, gate every depth's greedy output against depth 0, and recommend a depth."""
    from sparktriage.sweep.running.engine import plan_sweep, run_sweep
    from sparktriage.sweep.plan import parse_depths
    if rebuild is not None:
        if deploy is not None or out is not None or resume is not None:
            raise UsageError("--rebuild DIR recomputes a finished sweep: give neither DEPLOY.yaml, "
                             "--out nor --resume")
        from sparktriage.sweep.running.rebuild import rebuild as rebuild_sweep
        done = rebuild_sweep(rebuild)
        console.info(f"rebuilt {done.path / 'sweep.json'} from "
                     f"{done.document['launches_used']} launch folder(s): "
                     + ("changed" if done.changed else "unchanged")
                     + "".join(f"; copied to {p}" for p in done.copies))
        _finish(done.document, json_out, done.path)
        return
    if resume is not None:
        if deploy is not None or out is not None:
            raise UsageError("--resume DIR continues a sweep: give neither DEPLOY.yaml nor --out")
        plan = None
        where = resume
        if not (resume / "sweep-state.json").is_file():
            raise UsageError(f"--resume {resume}: no sweep-state.json there")
        from sparktriage.sweep.running.state import open_state
        # the deployment is read again: what it runs now must be accepted (the names given
        # when the sweep started count)
        stored = open_state(resume, None).plan
        accepted = _accepted(stored.load_deployment(), accept, accept_from,
                             _recorded_names(resume))
    else:
        if deploy is None:
            raise UsageError("missing DEPLOY.yaml (or --resume DIR)")
        if out is None:
            raise UsageError("missing option --out DIR")
        plan = plan_sweep(deploy, lab=lab, depths=parse_depths(depths), method=method,
                          max_launches=max_launches, min_launches_per_depth=min_launches,
                          budget_minutes=budget, requests=requests, max_tokens=max_tokens,
                          workloads=tuple(w for w in workload.split(",") if w.strip()),
                          baseline=baseline, model=not no_model, pairs=pairs)
        accepted = _accepted(plan.load_deployment(), accept, accept_from, ())
        where = out
    record_acceptance(where, accepted)
    console.info(f"run directory: {where}")
    result = run_sweep(plan, where, sweep_progress, command=["sparktriage", *console.invoked_argv()])
    _finish(result.document, json_out, where)


def _accepted(deployment, accept, accept_from, recorded: tuple[str, ...]):
    """The acceptance of the deployment's client code (ClientCodeRefused, exit 2, when an item
    is not named)."""
    from sparktriage.config.client_code import client_code
    from sparktriage.launch.acceptance import parse_accepted, require
    return require(client_code(deployment), recorded + parse_accepted(accept, accept_from))


def _recorded_names(folder: Path) -> tuple[str, ...]:
    """The names accepted when the sweep in `folder` started (its client-code.json)."""
    from sparktriage.launch.acceptance import DOCUMENT
    from sparktriage.store.documents import read_document_bounded
    if not (folder / DOCUMENT).is_file():
        return ()
    doc = read_document_bounded(folder / DOCUMENT, follow_symlinks=False)
    names = doc.get("accepted") if isinstance(doc, dict) else None
    return tuple(str(n) for n in names) if isinstance(names, list) else ()


def record_acceptance(where: Path, accepted) -> None:
    from sparktriage.launch.acceptance import record
    record(where, accepted)


def _finish(doc: dict, json_out: str | None, where: Path) -> None:
    """Print the sweep document; its exit status (docs/exit-codes.md)."""
    from sparktriage.sweep.render import render_lines
    console.draw(render_lines(doc), console.data_console(json_out))
    console.write_json(doc, json_out)
    if not any(l["status"] == "ok" for l in doc["launches"]):
        raise LaunchError(f"no launch of the sweep completed; their bundles are in {where / 'launches'}")
    findings = any(d["gate"]["state"] == "fail" or d["status"] == "failed" for d in doc["depths"])
    if findings:
        raise typer.Exit(ExitCode.FINDINGS)
