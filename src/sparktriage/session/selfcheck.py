"""`sparktriage selfcheck`: the customer's check of a running server (docs/selfcheck.md).

Against an endpoint the customer runs, and optionally its logs: the delivered-token protocol
with `/metrics` and log reconciliation, the FP4 garbage probe, the startup timeline and stall
classification of the log, and a report (signed when a key is given). Everything goes into one
launch folder of a run directory, each file as its single-purpose command writes it. A step
that fails is recorded and the check goes on; an endpoint that cannot be reached stops it
before anything else runs.
"""

from __future__ import annotations

import asyncio
import datetime as _dt
from dataclasses import dataclass
from pathlib import Path

from sparktriage.bench.client import ClientSettings, make_http_client
from sparktriage.bench.endpoint import discover
from sparktriage.bench.workload import load_workloads
from sparktriage.documents.session import SelfcheckDocument
from sparktriage.progress import Observer, prefixed
from sparktriage.report.build import execute, plan_report
from sparktriage.report.signing import SignSpec
from sparktriage.measure.steps import (StepLog, bench_step, bench_summary, logs_step, probe_step,
                                       stalls_step)
from sparktriage.store.documents import write_document
from sparktriage.store.rundir import SCHEMA_VERSION, RunDir
from sparktriage.store.typed import check

QUICK = {"requests": 5, "max_tokens": 128}


@dataclass(frozen=True)
class SelfcheckSettings:
    """What the check runs (the CLI's options)."""

    endpoint: str
    logs: tuple[str, ...] = ()
    metrics: str | None = ""  # "" = the endpoint's /metrics; None = no scrapes
    model: str | None = None
    api_key: str | None = None
    baseline: Path | None = None
    reference: str | None = None
    quick: bool = False
    workloads: tuple[str, ...] = ("code,prose",)
    sign: SignSpec | None = None
    formats: str = "md,pdf"
    tz: _dt.tzinfo | None = None
    probe: bool = True


def check_endpoint(settings: SelfcheckSettings) -> None:
    """EndpointError (exit 3) for a server that cannot be reached or is not OpenAI-compatible."""
    async def ask() -> None:
        target = ClientSettings(settings.endpoint, api_key=settings.api_key)
        async with make_http_client(target) as client:
            await discover(client, target)

    asyncio.run(ask())


def run_selfcheck(run: RunDir, settings: SelfcheckSettings, observe: Observer) -> dict:
    """Run the check into a new launch of `run`; return `selfcheck.json` (also written there).
    Call `check_endpoint` first: an unreachable server should stop the check before `run` exists."""
    launch = run.next_launch()
    steps = StepLog(observe)
    overrides = QUICK if settings.quick else {}
    workloads = tuple(w.model_copy(update=overrides) for w in load_workloads(list(settings.workloads)))
    bench = steps.run("bench", launch.label, lambda: bench_step(
        settings.endpoint, launch, workloads, log=settings.logs, metrics=settings.metrics,
        model=settings.model, api_key=settings.api_key, tz=settings.tz, observe=observe,
        warn=lambda m: observe("warning", {"text": m})))
    probe = None
    if settings.probe:
        probe = steps.run("probe", launch.label, lambda: probe_step(
            settings.endpoint, launch, settings.baseline, reference=settings.reference,
            model=settings.model, api_key=settings.api_key,
            observe=prefixed(observe, "probe-")))
    logs = stalls = None
    if settings.logs:
        logs = steps.run("logs", launch.label, lambda: logs_step(launch, settings.logs, settings.tz))
        stalls = steps.run("stalls", launch.label, lambda: stalls_step(launch, Path(settings.logs[0])))
    report = steps.run("report", None, lambda: _report(run, settings))
    summary = {
        "schema_version": SCHEMA_VERSION, "kind": "selfcheck", "run": str(run.path),
        "launch": launch.label, "endpoint": settings.endpoint, "quick": settings.quick,
        "probe": None if probe is None else {
            "verdict": probe.get("verdict"), "pattern": probe.get("pattern"),
            "tokens_spent": probe.get("tokens_spent"), "baseline": probe.get("baseline") is not None,
            "advice": probe.get("advice")},
        "bench": bench_summary(bench),
        "startup": None if logs is None else {
            "complete": (logs.get("startup") or {}).get("complete"),
            "startup_s": (logs.get("startup") or {}).get("startup_s"),
            "phases": [{"name": p.get("name"), "duration_s": p.get("duration_s")}
                       for p in logs.get("phases") or []]},
        "stalls": None if stalls is None else [
            {"cause": f["verdict"]["id"], "kind": f["kind"], "phase": f["phase"],
             "duration_s": f["duration_s"], "confidence": f["verdict"].get("confidence")}
            for f in stalls.get("findings") or []],
        "report": report, "steps": steps.records,
    }
    write_document(launch.path / "selfcheck.json", check(SelfcheckDocument, summary))
    return summary


def _report(run: RunDir, settings: SelfcheckSettings) -> dict:
    outcome = execute(plan_report(run.path, None, settings.formats, settings.sign))
    return {"dir": outcome.report_dir, "signed": outcome.signed, "fingerprint": outcome.fingerprint,
            "allowed_signers_line": outcome.allowed_signers_line, "map": outcome.map_path,
            "secrets_replaced": outcome.secrets_replaced}
