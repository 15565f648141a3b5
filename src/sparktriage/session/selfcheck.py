"""`sparktriage selfcheck`: the customer's check of a running server (docs/selfcheck.md), a
preset of the session engine (sparktriage.session.runner) on an endpoint the tool did not start.

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
import json
from dataclasses import dataclass
from pathlib import Path

from sparktriage.logs import startup_time
from sparktriage.bench.client import ClientSettings, make_http_client
from sparktriage.bench.endpoint import discover
from sparktriage.bench.workload import load_workloads
from sparktriage.signing.signing import SignSpec
from sparktriage.measure.steps import bench_summary
from sparktriage.store.documents import write_document
from sparktriage.store.rundir import SCHEMA_VERSION, RunDir
from sparktriage.progress import Observer
from sparktriage.session.findings import judge
from sparktriage.session.preflight import (PreflightSettings, metrics_snapshot, metrics_url,
                                           run_preflight)
from sparktriage.session.recount import recount
from sparktriage.session.windows import acceptance_windows

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
    tz_name: str | None = None  # --log-tz as given (remembered in session.json)
    answer_deadline_s: float = 120.0  # the readiness request must be answered within this
    max_pause_s: float = 5.0  # a longer silence between two chunks of an answer is a finding


def check_endpoint(settings: SelfcheckSettings) -> None:
    """EndpointError (exit 3) for a server that cannot be reached or is not OpenAI-compatible."""
    async def ask() -> None:
        target = ClientSettings(settings.endpoint, api_key=settings.api_key)
        async with make_http_client(target) as client:
            await discover(client, target)

    asyncio.run(ask())


def quick_budget(settings: SelfcheckSettings, tok_s: float = 30.0) -> str:
    """What the protocol will send, in tokens and in seconds at `tok_s` (stated in the output)."""
    workloads = load_workloads(list(settings.workloads))
    overrides = QUICK if settings.quick else {}
    tokens = sum((w.warmup + overrides.get("requests", w.requests)) * overrides.get("max_tokens", w.max_tokens)
                 for w in workloads)
    return (f"protocol budget: {len(workloads)} workload(s) x (warm-up + "
            f"{overrides.get('requests', workloads[0].requests)} requests) x "
            f"{overrides.get('max_tokens', workloads[0].max_tokens)} tokens = {tokens} tokens, "
            f"about {tokens / tok_s:.0f} s at {tok_s:g} tok/s; the probe's spend is reported after it")


def run_selfcheck(run: RunDir, settings: SelfcheckSettings, observe: Observer) -> dict:
    """Run the check as a preset of the session engine (session.json in `run`; resumable with
    `sparktriage session resume DIR`, the API key given again through OPENAI_API_KEY); return
    `selfcheck.json` (also written into its launch folder). Call `check_endpoint` first: an
    unreachable server should stop the check before `run` exists."""
    from sparktriage.session.plan import SessionOptions
    from sparktriage.session.runner import open_session, run_session
    overrides = QUICK if settings.quick else {}
    options = SessionOptions(
        deployment=None, endpoint=settings.endpoint, preset="selfcheck", launches=1, depths=(),
        requests=overrides.get("requests", 15), max_tokens=overrides.get("max_tokens", 256),
        workloads=settings.workloads, baseline=str(settings.baseline) if settings.baseline else None,
        sign=settings.sign.key if settings.sign else None,
        sign_identity=settings.sign.identity if settings.sign else None,
        formats=settings.formats, probe=settings.probe, logs=settings.logs,
        extra={"model": settings.model, "reference": settings.reference, "metrics": settings.metrics,
               "tz": settings.tz_name, "quick": settings.quick,
               # three acceptance windows per workload at least (session/windows.py)
               "scrape_every": max(2, overrides.get("requests", 15) // 3)})
    preflight = run_preflight(PreflightSettings(
        settings.endpoint, settings.model, settings.api_key, settings.metrics, settings.answer_deadline_s))
    write_document(run.path / "preflight.json", preflight)
    ready = preflight.get("readiness") or {}
    observe("session-note", {"text": f"readiness request ({ready.get('api', '-')}): "
                                     f"{ready.get('outcome', 'not sent: no model listed')}"
                                     + (f" in {ready['elapsed_s']:.2f} s" if ready.get("elapsed_s") is not None else "")})
    if ready.get("outcome") == "no_answer":
        # Every measured request would wait out its own timeout: say so once and stop here.
        summary = unanswered_summary(run, preflight, settings)
        write_document(run.path / "selfcheck.json", summary)
        return summary
    session = open_session(run.path, options, ["sparktriage", "selfcheck"], observe, settings.api_key)
    # The findings are judged once, before the report is built, so that the report and
    # selfcheck.json say the same thing.
    session.before_report = lambda: _judge_once(run, session.state.doc, settings, preflight)
    run_session(session)
    return selfcheck_summary(run, session.state.doc, settings, preflight)


def has_findings(doc: dict) -> bool:
    """Whether `selfcheck.json` holds anything that exits 1 (docs/exit-codes.md): a failed step,
    output that is not healthy, a lost request, a stall, or a finding a client would feel."""
    failed = any(s["status"] != "ok" for s in doc["steps"])
    bad_output = doc["probe"] is not None and doc["probe"]["verdict"] != "healthy"
    lost = doc["bench"] is not None and any(w["failed"] for w in doc["bench"]["workloads"].values())
    felt = any(f["severity"] == "finding" for f in doc["findings"])
    return failed or bad_output or lost or bool(doc["stalls"]) or felt


def _read(path: Path) -> dict | None:
    try:
        return json.loads(path.read_text(encoding="utf-8"))
    except (OSError, ValueError):
        return None


def _base(run: RunDir, label: str | None, settings: SelfcheckSettings, preflight: dict,
          findings: list[dict]) -> dict:
    return {"schema_version": SCHEMA_VERSION, "kind": "selfcheck", "run": str(run.path),
            "launch": label, "endpoint": settings.endpoint, "quick": settings.quick,
            "server": preflight.get("server"), "readiness": preflight.get("readiness"),
            "fields": preflight.get("fields"), "findings": findings}


def unanswered_summary(run: RunDir, preflight: dict, settings: SelfcheckSettings) -> dict:
    """`selfcheck.json` of a server that never answered the readiness request: nothing measured."""
    findings = judge(preflight, None, [], None, None, settings.max_pause_s)
    return {**_base(run, None, settings, preflight, findings), "probe": None, "bench": None,
            "startup": None, "stalls": None, "report": None, "steps": []}


FINDINGS = "selfcheck-findings.json"  # in the protocol's launch folder (the report reads it)


def _judge_once(run: RunDir, state: dict, settings: SelfcheckSettings, preflight: dict) -> list[dict]:
    """The findings of the protocol's launch, judged and written there on the first call and
    read back after (`selfcheck-findings.json`)."""
    protocol = next((s for s in state["steps"] if s["kind"] == "protocol"), None) or {}
    folder = run.path / "launches" / protocol["launch"] if protocol.get("launch") else None
    if folder is not None and (kept := _read(folder / FINDINGS)) is not None:
        return kept.get("findings") or []
    bench = _read(folder / "bench.json") if folder is not None and protocol.get("state") == "done" else None
    return _client_findings(folder, bench, settings, preflight)


def _client_findings(folder: Path | None, bench: dict | None, settings: SelfcheckSettings,
                     preflight: dict) -> list[dict]:
    """Findings a client would feel, from the preflight, the protocol's records and /metrics."""
    headers = {"Authorization": f"Bearer {settings.api_key}"} if settings.api_key else None
    after = metrics_snapshot(metrics_url(PreflightSettings(settings.endpoint, metrics=settings.metrics)),
                             headers)
    windows = acceptance_windows(folder / "metrics") if folder else []
    counts = (recount(settings.endpoint, (bench or {}).get("model"), folder / "requests.jsonl",
                      settings.api_key) if folder else [])
    findings = judge(preflight, bench, windows, after, counts, settings.max_pause_s)
    if folder is not None:
        write_document(folder / FINDINGS, {"kind": "selfcheck-findings", "findings": findings,
                                           "windows": windows, "recount": counts,
                                           "metrics_after": after})
    return findings


def selfcheck_summary(run: RunDir, state: dict, settings: SelfcheckSettings,
                      preflight: dict | None = None) -> dict:
    """`selfcheck.json` (docs/selfcheck.md) from the session's state."""
    label = state.get("attached_launch")
    folder = run.path / "launches" / (label or "L001")
    steps = {s["kind"]: s for s in state["steps"]}

    def done(kind: str) -> dict | None:
        step = steps.get(kind)
        if not step or step["state"] != "done":
            return None
        name = {"protocol": "bench.json", "probe": "probe.json", "logs": "logs.json",
                "stalls": "stalls.json"}[kind]
        return _read(run.path / "launches" / step["launch"] / name)

    bench, probe, logs, stalls = done("protocol"), done("probe"), done("logs"), done("stalls")
    if bench is not None and steps["protocol"]["launch"]:
        reconcile = _read(run.path / "launches" / steps["protocol"]["launch"] / "reconcile.json")
        if reconcile is not None:
            bench = {**bench, "reconcile": reconcile}
    report_step = steps.get("report")
    outputs = (report_step or {}).get("outputs") or {}
    report = None if not report_step or report_step["state"] != "done" else {
        "dir": outputs.get("dir"), "signed": outputs.get("signed"),
        "fingerprint": outputs.get("fingerprint"),
        "allowed_signers_line": outputs.get("allowed_signers_line"), "map": outputs.get("map"),
        "secrets_replaced": outputs.get("secrets_replaced")}
    names = {"protocol": "bench"}
    findings = _judge_once(run, state, settings, preflight or {})
    summary = {
        **_base(run, label, settings, preflight or {}, findings),
        "probe": None if probe is None else {
            "verdict": probe.get("verdict"), "pattern": probe.get("pattern"),
            "tokens_spent": probe.get("tokens_spent"), "baseline": probe.get("baseline") is not None,
            "advice": probe.get("advice")},
        "bench": bench_summary(bench),
        "startup": None if logs is None else {
            "complete": (logs.get("startup") or {}).get("complete"),
            "startup_s": startup_time.of_logs(logs),
            "phases": [{"name": p.get("name"), "duration_s": p.get("duration_s")}
                       for p in logs.get("phases") or []]},
        "stalls": None if stalls is None else [
            {"cause": f["verdict"]["id"], "kind": f["kind"], "phase": f["phase"],
             "duration_s": f["duration_s"], "confidence": f["verdict"].get("confidence")}
            for f in stalls.get("findings") or []],
        "report": report,
        "steps": [{"step": names.get(s["kind"], s["kind"]), "launch": s["launch"],
                   "status": "ok" if s["state"] == "done" else "failed", "reason": s["reason"]}
                  for s in state["steps"] if s["kind"] != "signature"],
    }
    write_document(folder / "selfcheck.json", summary)
    return summary
