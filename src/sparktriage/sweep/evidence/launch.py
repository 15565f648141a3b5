"""What one launch of a sweep showed: a frozen record derived from its folder after teardown.

The launch loop (sweep.running.engine) records only what it alone saw (`LaunchFacts`: the depth, why
it was launched, its attempt, wall and ready seconds, the launch's outcome and error, the problems
of its protocol and probe, why the two-stream phase did not run, the launch's metadata) and
writes that record to `sweep-state.json`. Everything measured is derived here, from the launch
folder the launch left (`bench.json`, `logs.json`, `metrics/`, `requests.jsonl`, `pairs.jsonl`,
`gate.json`): the request rates, the delivered rate, the acceptance counts, the step and pair
ratios, whether the launch is ok and why not. A fixed derivation therefore changes every launch
already made when the sweep is rebuilt (`sparktriage sweep --rebuild DIR`), without a launch.

A record written before this split (it holds the derived values itself, `request_decode_tok_s`
...) whose folder has no `bench.json` keeps its stored values (`derived_from` "record").
"""

from __future__ import annotations

import json
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

from sparktriage.store.rundir import LaunchDir
from sparktriage.sweep.evidence import pairtimes, steptimes
from sparktriage.sweep.evidence.acceptance import acceptance
from sparktriage.sweep.plan import SweepPlan

# the keys of a launch record the loop writes (sweep-state.json); every other key is derived
FACT_KEYS = ("label", "depth", "why", "attempt", "wall_s", "ready_s", "outcome", "error",
             "problems", "pair_failure", "metadata", "interrupted", "reason")
MAX_DOCUMENT_BYTES = 256 * 1024 * 1024


@dataclass(frozen=True)
class LaunchEvidence:
    """One launch as the sweep's statistics, gate and rule read it (docs/sweep.md, Evidence)."""

    label: str
    depth: int | None
    status: str  # ok, failed
    reason: str | None = None
    why: str | None = None
    attempt: int | None = None
    interrupted: bool = False
    wall_s: float | None = None
    ready_s: float | None = None
    outcome: str | None = None
    problems: tuple[str, ...] = ()
    gate_collected: bool = False
    request_decode_tok_s: tuple[float, ...] = ()
    request_e2e_tok_s: tuple[float, ...] = ()
    delivered_tok_s: float | None = None
    e2e_tok_s: float | None = None
    metadata: dict[str, Any] = field(default_factory=dict)
    acceptance: dict | None = None
    step_ratio: dict | None = None
    pair_ratio: dict | None = None
    derived_from: str = "folder"  # folder, record (a record written before the split)

    @property
    def ok(self) -> bool:
        return self.status == "ok"

    def as_record(self) -> dict:
        """The launch as the readers of launch records see it (sweep.document, model_inputs)."""
        record = {
            "label": self.label, "depth": self.depth, "status": self.status,
            "reason": self.reason, "why": self.why, "attempt": self.attempt,
            "wall_s": self.wall_s, "ready_s": self.ready_s, "outcome": self.outcome,
            "problems": list(self.problems),
            "request_decode_tok_s": list(self.request_decode_tok_s),
            "request_e2e_tok_s": list(self.request_e2e_tok_s),
            "delivered_tok_s": self.delivered_tok_s, "e2e_tok_s": self.e2e_tok_s,
            "metadata": dict(self.metadata), "acceptance": self.acceptance,
            "step_ratio": self.step_ratio, "pair_ratio": self.pair_ratio}
        if self.interrupted:
            record["interrupted"] = True
        if self.gate_collected:
            record["gate_collected"] = True
        return record


def workload_rate(bench: dict | None, workload: str, metric: str = "decode_tok_s") -> float | None:
    """Mean of `metric` (decode_tok_s, e2e_tok_s) over the measured requests of `workload` in a
    bench document (None when absent): a launch's delivered rate, one observation of its depth."""
    for w in (bench or {}).get("workloads") or []:
        if w.get("name") == workload:
            return ((w.get("summary") or {}).get(metric) or {}).get("mean")
    return None


def facts_of(record: dict) -> dict:
    """The part of a launch record the loop alone knows (what `sweep-state.json` keeps)."""
    return {k: record[k] for k in FACT_KEYS if k in record}


def _read(path: Path) -> dict | None:
    try:
        if path.stat().st_size > MAX_DOCUMENT_BYTES:
            return None
        doc = json.loads(path.read_text(encoding="utf-8"))
    except (OSError, ValueError):
        return None
    return doc if isinstance(doc, dict) else None


def _workload(bench: dict | None, name: str) -> dict | None:
    return next((w for w in (bench or {}).get("workloads") or []
                 if isinstance(w, dict) and w.get("name") == name), None)


def rates(bench: dict | None, name: str, metric: str) -> tuple[float, ...]:
    """The measured, ok requests' `metric` of workload `name` (warm-ups left out)."""
    w = _workload(bench, name) or {}
    return tuple(r[metric] for r in w.get("requests") or []
                 if isinstance(r, dict) and not r.get("warmup") and r.get("status") == "ok"
                 and isinstance(r.get(metric), (int, float)) and not isinstance(r.get(metric), bool))


def protocol_failure(bench: dict | None, name: str) -> str | None:
    """Why the protocol's measurement is unusable (None when it is fine)."""
    w = _workload(bench, name)
    if w is None:
        return "the protocol did not measure the deciding workload"
    measured = [r for r in w.get("requests") or [] if isinstance(r, dict) and not r.get("warmup")]
    bad = [r for r in measured if r.get("status") != "ok"]
    if bad:
        return (f"crash mid-protocol: {len(bad)} of {len(measured)} measured requests failed "
                f"({bad[0].get('reason') or bad[0].get('status')})")
    return None


def _failure(facts: dict, bench: dict | None, workload: str, decode, e2e) -> str | None:
    outcome = facts.get("outcome")
    if outcome != "completed":
        return f"launch {outcome}: {facts.get('error') or 'see its bundle'}"
    problems = facts.get("problems") or []
    if problems and str(problems[0]).startswith("protocol"):
        return str(problems[0])
    failure = protocol_failure(bench, workload)
    if failure is None and not decode and not e2e:
        failure = "no measured request delivered a rate"
    return failure


def _legacy(record: dict) -> LaunchEvidence:
    return LaunchEvidence(
        label=record["label"], depth=record.get("depth"), status=record.get("status") or "failed",
        reason=record.get("reason"), why=record.get("why"), attempt=record.get("attempt"),
        interrupted=bool(record.get("interrupted")), wall_s=record.get("wall_s"),
        ready_s=record.get("ready_s"), outcome=record.get("outcome"),
        problems=tuple(record.get("problems") or ()),
        gate_collected=bool(record.get("gate_collected")),
        request_decode_tok_s=tuple(record.get("request_decode_tok_s") or ()),
        request_e2e_tok_s=tuple(record.get("request_e2e_tok_s") or ()),
        delivered_tok_s=record.get("delivered_tok_s"), e2e_tok_s=record.get("e2e_tok_s"),
        metadata=dict(record.get("metadata") or {}), acceptance=record.get("acceptance"),
        step_ratio=record.get("step_ratio"), pair_ratio=record.get("pair_ratio"),
        derived_from="record")


def derive(run_path: Path, record: dict, plan: SweepPlan) -> LaunchEvidence:
    """The evidence of one launch: its facts (`record`) and what its folder holds."""
    folder = run_path / "launches" / record["label"]
    if "request_decode_tok_s" in record and not (folder / "bench.json").is_file():
        return _legacy(record)
    facts = facts_of(record)
    depth = facts.get("depth")
    base = dict(label=facts["label"], depth=depth, why=facts.get("why"),
                attempt=facts.get("attempt"), wall_s=facts.get("wall_s"),
                ready_s=facts.get("ready_s"), outcome=facts.get("outcome"),
                problems=tuple(facts.get("problems") or ()),
                metadata=dict(facts.get("metadata") or {}))
    if facts.get("interrupted"):
        return LaunchEvidence(status="failed", reason=facts.get("reason"), interrupted=True,
                              **base)
    workload = plan.deciding_workload
    bench = _read(folder / "bench.json")
    decode = rates(bench, workload, "decode_tok_s")
    e2e = rates(bench, workload, "e2e_tok_s")
    failure = _failure(facts, bench, workload, decode, e2e)
    greedy = plan.load_workloads()[0].temperature == 0
    accepted = (acceptance(LaunchDir(folder), _read(folder / "logs.json"), bench, workload,
                           {workload}, greedy, plan.method) if depth else None)
    ratio = steptimes.from_launch(folder, depth, workload, accepted) if depth is not None else None
    pair = pairtimes.from_launch(folder, depth, workload, accepted) if depth is not None else None
    if pair is None and facts.get("pair_failure"):
        pair = steptimes.StepRatio(depth, None, None, reason="the two-stream phase did not run: "
                                   + str(facts["pair_failure"]))
    metadata = {"model": (bench or {}).get("model"),
                "server_version": (bench or {}).get("server_version"), **base.pop("metadata")}
    return LaunchEvidence(
        status="ok" if failure is None else "failed", reason=failure,
        gate_collected=failure is None and (folder / "gate.json").is_file(),
        request_decode_tok_s=decode, request_e2e_tok_s=e2e,
        delivered_tok_s=workload_rate(bench, workload),
        e2e_tok_s=workload_rate(bench, workload, "e2e_tok_s"), metadata=metadata,
        acceptance=accepted, step_ratio=None if ratio is None else ratio.as_dict(),
        pair_ratio=None if pair is None else pairtimes.as_dict(pair), **base)


def derive_all(run_path: Path, records: list[dict], plan: SweepPlan) -> tuple[LaunchEvidence, ...]:
    return tuple(derive(run_path, r, plan) for r in records)
