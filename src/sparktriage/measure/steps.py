"""The steps a session (demo, selfcheck) or a sweep runs against one launch; each writes its documents into the launch
folder exactly as the single-purpose command does (docs/formats.md) and returns the document.

probe_step   -> probe.json, probe-requests.jsonl          (as `sparktriage probe`)
bench_step   -> launch.json, requests.jsonl, bench.json,
                metrics/, reconcile.json                   (as `sparktriage bench --metrics --log`)
stalls_step  -> stalls.json                                (as `sparktriage stalls BUNDLE_OR_LOG`)
logs_step    -> logs.json                                  (as `sparktriage logs LOG...`)
"""

from __future__ import annotations

import asyncio
import time
from pathlib import Path
from typing import Callable, Sequence

from sparktriage.bench.client import ClientSettings
from sparktriage.bench.protocol import ProtocolPlan, run_protocol
from sparktriage.bench.workload import Workload
from sparktriage.documents.logs import LogsDocument
from sparktriage.documents.probe import ProbeDocument
from sparktriage.documents.stalls import StallsDocument
from sparktriage.errors import SparktriageError
from sparktriage.bench.metrics_recorder import MetricsRecorder, wait_for_log
from sparktriage.logs.scan import analyze_inputs
from sparktriage.probe.runner import ProbeSettings, run_probe
from sparktriage.progress import Observer, quiet
from sparktriage.reconcile.launch import reconcile_launch
from sparktriage.stalls.analyze import analyze
from sparktriage.store.documents import RecordWriter
from sparktriage.store.rundir import LaunchDir


def probe_step(endpoint: str, launch: LaunchDir, baseline: Path | None = None, *,
               reference: str | None = None, model: str | None = None, api_key: str | None = None,
               seed: int | None = None, observe: Observer = quiet) -> dict:
    """Probe the server for FP4 garbage; write probe.json and the raw replies."""
    settings = ProbeSettings(endpoint=endpoint, model=model, api_key=api_key, seed=seed,
                             baseline=baseline, reference=reference)
    with RecordWriter(launch.path / "probe-requests.jsonl") as writer:
        outcome = asyncio.run(run_probe(settings, observe, writer.append))
    launch.write("probe.json", outcome.document, ProbeDocument)
    return outcome.document


def bench_step(endpoint: str, launch: LaunchDir, workloads: Sequence[Workload], *,
               log: Sequence[str] = (), metrics: str | None = "", log_wait_s: float = 15.0,
               model: str | None = None, api_key: str | None = None, tz=None,
               observe: Observer = quiet, warn: Callable[[str], None] = lambda m: None,
               scrape_every: int | None = None) -> dict:
    """The delivered-token protocol, with Prometheus scraped around each workload (`metrics`:
    its URL; "" for the endpoint's own /metrics; None for none) and, when `log` is given,
    reconciled with the log (`scrape_every`: also scrape after every that many measured
    requests, for windowed acceptance); returns bench.json (+ `reconcile`)."""
    url = endpoint.rstrip("/") + "/metrics" if metrics == "" else metrics
    headers = {"Authorization": f"Bearer {api_key}"} if api_key else None
    recorder = MetricsRecorder(url, launch, warn, headers, scrape_every) if url else None
    watch = recorder.observer(observe) if recorder else observe
    settings = ClientSettings(base_url=endpoint, api_key=api_key)
    document = run_protocol(ProtocolPlan(settings, model, tuple(workloads)), launch, watch)
    if log or recorder:
        if log and not wait_for_log(log, time.time() - 1.0, log_wait_s, tz):
            warn(f"no stats line in the server log within {log_wait_s:g} s after the run")
        document = {**document, "reconcile": reconcile_launch(launch, log, tz=tz)}
    return document


def stalls_step(launch: LaunchDir, source: Path | None = None) -> dict:
    """Classify the launch's startup (its evidence bundle by default); write stalls.json."""
    document, _ = analyze(source or launch.path / "bundle")
    launch.write("stalls.json", document, StallsDocument)
    return document


def logs_step(launch: LaunchDir, inputs: Sequence[str], tz=None) -> dict:
    """Parse server logs given by the user (startup phases, throughput, spec decoding, errors);
    write logs.json."""
    document = analyze_inputs(list(inputs), tz=tz)
    launch.write("logs.json", document, LogsDocument)
    return document


class StepLog:
    """Runs a session's steps, recording each outcome; a failed step never stops the session."""

    def __init__(self, observe: Observer) -> None:
        self.observe = observe
        self.records: list[dict] = []

    def record(self, name: str, label: str | None, reason: str | None) -> None:
        self.records.append({"step": name, "launch": label,
                             "status": "ok" if reason is None else "failed", "reason": reason})

    def run(self, name: str, label: str | None, action: Callable[[], dict | None]) -> dict | None:
        self.observe("step", {"name": name, "launch": label})
        try:
            result = action()
        except SparktriageError as exc:
            self.record(name, label, exc.one_line())
            self.observe("step-failed", {"name": name, "launch": label, "reason": exc.one_line()})
            return None
        self.record(name, label, None)
        return result


def _delivered(workload: dict) -> list[int] | None:
    """[fewest, most] output tokens that arrived in one measured answer (None: no answer)."""
    got = [r["output_tokens"] for r in workload.get("requests") or []
           if not r.get("warmup") and r.get("status") == "ok"]
    return [min(got), max(got)] if got else None


def bench_summary(doc: dict | None) -> dict | None:
    """The protocol's headline per workload, for a session summary."""
    if doc is None:
        return None
    return {
        "model": doc.get("model"),
        "workloads": {w["name"]: {"decode_tok_s": w["summary"]["decode_tok_s"],
                                  "e2e_tok_s": w["summary"]["e2e_tok_s"]["mean"],
                                  "ttft_s": w["summary"]["ttft_s"]["mean"],
                                  "failed": w["summary"]["counts"]["error"]
                                  + w["summary"]["counts"]["incomplete"],
                                  "delivered_tokens": _delivered(w)}
                      for w in doc["workloads"]},
        "reconcile_verdict": (doc.get("reconcile") or {}).get("verdict"),
    }
