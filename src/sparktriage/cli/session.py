"""`sparktriage session run|resume|status`: the consultant's diagnostic as one resumable run."""

from __future__ import annotations

from pathlib import Path
from typing import List, Optional

import typer

from sparktriage.cli import console
from sparktriage.cli.exit_codes import ExitCode
from sparktriage.cli.session_view import LiveView, clock

DONE = "done"  # a step's state in session.json (sparktriage.session.plan)
session_app = typer.Typer(help="The consultant's diagnostic as one declared, resumable run.",
                          no_args_is_help=True, add_completion=False, rich_markup_mode=None)


def plan_lines(steps: list[dict], estimate: float) -> list[str]:
    """The plan as plain lines (dry run, status)."""
    lines = []
    for step in steps:
        inputs = ", ".join(f"{k}={v}" for k, v in step["inputs"].items() if v not in (None, [], ""))
        lines.append(f"  {step['state']:<11} {step['id']:<12} {inputs}"
                     + (f"  [{step['launch']}]" if step.get("launch") else "")
                     + (f"  ({step['reason']})" if step.get("reason") else ""))
    lines.append(f"estimated lab time: {clock(estimate)} (launches at a 2 min 45 s cold start, "
                 "28 tok/s; the deployment's startup deadline bounds each launch)")
    return lines


def result_lines(result: dict) -> list[str]:
    from sparktriage.sweep.policy.words import decision_word
    lines = [f"run directory: {result['run']}"]
    for l in result["launches"]:
        bench = l.get("bench") or {}
        rates = ", ".join(f"{n} {w['decode_tok_s']['mean']:.1f} tok/s" for n, w in
                          (bench.get("workloads") or {}).items()
                          if isinstance(w.get("decode_tok_s"), dict) and w["decode_tok_s"].get("mean"))
        lines.append(f"  {l['label']} ({l['step']}, depth {l['depth']}): {l['state']}"
                     + (f", {rates}" if rates else "")
                     + ("" if l["pooled"] or l["step"] == "sweep" else ", NOT pooled")
                     + "".join(f"\n      flag: {f}" for f in l["flags"])
                     + (f"\n      {l['note']}" + (f"; redone as {l['redone_as']}" if l["redone_as"] else "")
                        if l.get("note") else ""))
    if result.get("probe"):
        lines.append(f"probe: {result['probe']['verdict']}, {result['probe']['tokens_spent']} tokens")
    if result.get("sweep"):
        d = result["sweep"]
        word = decision_word(d.get("state"), d["depth"])
        lines.append(f"sweep decision: depth {d['depth']}" + (f" ({word})" if word else "")
                     + f": {d['reason']}")
    if result.get("report"):
        lines.append(f"report: {result['report']['dir']} (signed: {result['report']['signed']})")
    if result.get("signature"):
        lines.append(f"signature verified: {result['signature']['verified']}")
    for step in result["steps"]:
        if step["state"] != DONE:
            lines.append(f"FAILED {step['id']}: {step['reason']}")
    return lines


def _exit_code(result: dict) -> int:
    if result["launches"] and result["launches"][0]["state"] != DONE and not any(
            l["state"] == DONE for l in result["launches"]):
        return ExitCode.UNREACHABLE
    findings = (any(s["state"] != DONE for s in result["steps"])
                or (result.get("probe") and result["probe"]["verdict"] != "healthy")
                or any(l.get("stall_findings") for l in result["launches"])
                or any(l["flags"] for l in result["launches"]))
    return ExitCode.FINDINGS if findings else ExitCode.OK


def execute(run_dir: Path, options, json_out: str | None, deployment=None) -> None:
    """Open (or reopen) the session, run what is left with the live view, print the result;
    `deployment`: the session's deployment as the checks loaded it (not loaded again)."""
    from sparktriage.session.runner import open_session, run_session
    view = LiveView()
    session = open_session(run_dir, options, ["sparktriage", *console.invoked_argv()], view,
                           deployment=deployment)
    console.info(f"session: {run_dir / 'session.json'}")
    try:
        with view:
            result = run_session(session)
    except KeyboardInterrupt:
        console.info(f"interrupted: the step was torn down; continue with "
                     f"`sparktriage session resume {run_dir}`")
        raise typer.Exit(ExitCode.INTERRUPTED) from None
    data = console.data_console(json_out)
    for line in result_lines(result):
        data.print(line, markup=False, highlight=False)
    console.write_json(result, json_out)
    code = _exit_code(result)
    if code:
        raise typer.Exit(code)


@session_app.command("run")
def run(
    deployment: Path = typer.Argument(..., help="Deployment YAML (docs/launch.md)."),
    lab: Optional[Path] = typer.Option(None, "--lab", help="Lab YAML to use instead of the deployment's."),
    out: Path = typer.Option(..., "--out", help="Session directory (created; an existing one is resumed with the same options)."),
    launches: int = typer.Option(3, "--launches", min=1, help="Launches of the deployment as given (the protocol's replicates)."),
    depths: str = typer.Option("0,1,2,3,4", "--depths", help="Speculative depths to sweep, comma list; 0 = none."),
    method: Optional[str] = typer.Option(None, "--method", help="Speculative method for the sweep (ngram, eagle, mtp, ...). [default: the deployment's, else ngram]"),
    requests: int = typer.Option(15, "--requests", min=1, help="Measured requests per workload."),
    max_tokens: int = typer.Option(256, "--max-tokens", min=1, help="Output tokens per request."),
    workload: List[str] = typer.Option(["code,prose"], "--workload", help="Built-in workload names or YAML files (comma lists)."),
    baseline: Optional[Path] = typer.Option(None, "--baseline", help="Fingerprint of a known-good launch (probe)."),
    no_probe: bool = typer.Option(False, "--no-probe", help="Skip the garbage probe."),
    sign: Optional[str] = typer.Option(None, "--sign", help="Sign the report: Ed25519 OpenSSH key file (its .pub beside it checks the signature)."),
    budget: Optional[float] = typer.Option(None, "--budget", min=1, help="Lab minutes: no launch is started once fewer than a cold start's worth are left."),
    formats: str = typer.Option("md,pdf", "--format", help="Report formats, comma list of md, pdf, html."),
    json_out: Optional[str] = typer.Option(None, "--json", help="Write the session result to PATH, or - for stdout."),
    dry_run: bool = typer.Option(False, "--dry-run", help="Print the plan and its estimated lab time; run nothing."),
    accept: Optional[List[str]] = typer.Option(None, "--accept-client-code", help="Client code the deployment runs that you accept, by name, comma list (repeatable; docs/security.md)."),
    accept_from: Optional[List[Path]] = typer.Option(None, "--accept-client-code-from", help="File of accepted client-code names, one a line."),
) -> None:
    """Run the whole diagnostic as a declared, resumable plan: launches with live stall watch,
    probe, protocol over launches, depth sweep, environment diff, signed report."""
    from sparktriage.config.deployment import load_deployment
    from sparktriage.probe import baseline as baseline_io
    from sparktriage.report.build import parse_formats
    from sparktriage.signing.signing import SignSpec
    from sparktriage.signing.signing import resolve as resolve_signer
    from sparktriage.session.plan import SessionOptions, parse_depths
    from sparktriage.session.runner import plan_steps
    from sparktriage.config import speculative as spec_source
    from sparktriage.config.client_code import client_code
    from sparktriage.launch import acceptance
    from sparktriage.launch.render import client_code_lines
    dep = load_deployment(deployment, lab)  # a bad file fails before anything runs
    found = spec_source.find(dep)
    method = found.method_for(method)
    parse_formats(formats)
    if baseline is not None:
        baseline_io.load(baseline)
    if sign:
        resolve_signer(SignSpec(sign))
    chosen = parse_depths(depths)
    items = client_code(dep)
    accepted = acceptance.parse_accepted(accept, accept_from)
    extra = {"base_depth": found.depth}
    if accepted:
        extra[acceptance.OPTION] = list(accepted)
    options = SessionOptions(
        deployment=str(deployment.resolve()), lab=str(lab.resolve()) if lab else None,
        launches=launches, depths=chosen, method=method,
        requests=requests, max_tokens=max_tokens,
        workloads=tuple(workload), baseline=str(baseline.resolve()) if baseline else None,
        sign=str(Path(sign).resolve()) if sign and sign != "agent" else sign, budget_min=budget,
        formats=formats, probe=not no_probe,
        extra=extra)
    if dry_run:
        steps, estimate = plan_steps(options)
        worst = sum(dep.timeouts.startup_s + dep.timeouts.teardown_grace_s for s in steps
                    if s["kind"] == "launch") + (len([d for d in chosen if d != options.extra["base_depth"]])
                                                  * (dep.timeouts.startup_s + dep.timeouts.teardown_grace_s))
        data = console.data_console(json_out)
        data.print(f"plan of the session in {out} ({len(steps)} steps):", markup=False)
        for line in plan_lines(steps, estimate):
            data.print(line, markup=False, highlight=False)
        data.print(f"at most {clock(worst + estimate)} if every launch runs to its startup deadline "
                   f"({dep.timeouts.startup_s:g} s)", markup=False)
        for line in client_code_lines(items) if items else []:
            data.print(line, markup=False, highlight=False)
        console.write_json({"schema_version": 1, "kind": "session-plan", "options": options.to_json(),
                            "steps": steps, "estimate_s": estimate,
                            "worst_case_s": round(worst + estimate, 1),
                            "client_code": [i.model_dump() for i in items]}, json_out)
        return
    acceptance.require(items, accepted)  # before the session folder is made
    execute(out, options, json_out, dep)


@session_app.command("resume")
def resume(
    run_dir: Path = typer.Argument(..., help="Session directory."),
    json_out: Optional[str] = typer.Option(None, "--json", help="Write the session result to PATH, or - for stdout."),
) -> None:
    """Continue a session from its first step that is not done (the options it was started with)."""
    execute(run_dir, None, json_out)


@session_app.command("status")
def status(
    run_dir: Path = typer.Argument(..., help="Session directory."),
    json_out: Optional[str] = typer.Option(None, "--json", help="Write session.json's state to PATH, or - for stdout."),
) -> None:
    """What is done and what is left, in one screen."""
    from sparktriage.session.plan import LabAssumptions, estimate_s
    from sparktriage.session.state import SessionState
    state = SessionState.load(run_dir)
    steps = state.steps
    done = sum(1 for s in steps if s["state"] == DONE)
    data = console.data_console(json_out)
    data.print(f"session {run_dir}: {done}/{len(steps)} steps done"
               + (", finished" if state.doc.get("finished") else ""), markup=False)
    for line in plan_lines(steps, estimate_s(steps, LabAssumptions())):
        data.print(line, markup=False, highlight=False)
    for launch in state.doc["launches"]:
        data.print(f"  launch {launch['label']} ({launch['step']}, depth {launch['depth']}): {launch['state']}"
                   + (f" - {launch['note']}" if launch.get("note") else "")
                   + "".join(f"; flag: {f}" for f in launch.get("flags") or []), markup=False)
    for event in state.doc["events"]:
        data.print(f"  {event['t']} {event['text']}", markup=False)
    console.write_json({"steps": steps, "launches": state.doc["launches"],
                        "events": state.doc["events"]}, json_out)
