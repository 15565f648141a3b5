"""The sweep document (`sweep.json`, also what `sweep --json` writes) from the sweep's state.

Built from the launch records of `sweep-state.json` and the launch folders alone, so it can be
rebuilt at any time (after every launch, after a resume). The fields the issue fixes are pinned by
`SweepJson` (a pydantic model; tests/sweep/test_contract.py): the rest is documented in
docs/formats.md. The launch is the unit of replication: per depth the mean of launch means with
a t-interval over launches; the decision comes from sweep.rule (the depth model while it holds,
the black-box rule of sweep.allocate otherwise), and `model` says what the depth model made of
the launches (sweep.model_entry).
"""

from __future__ import annotations

import json
from pathlib import Path
from typing import Literal, Optional

from pydantic import BaseModel, ConfigDict

from sparktriage.roofline.ceiling import deployment_ceiling
from sparktriage.stats.compare import welch
from sparktriage.store.rundir import SCHEMA_VERSION
from sparktriage.sweep.acceptance import combine
from sparktriage.sweep.gate import GreedyOutput, gate
from sparktriage.sweep.model_entry import model_entry
from sparktriage.sweep.model_inputs import situation, step_shape
from sparktriage.sweep.outlook import outlook, sentence
from sparktriage.sweep.plan import SweepPlan
from sparktriage.sweep.rule import decide, model_of
from sparktriage.sweep.stats import DepthStats, LaunchObservation, depth_stats
from sparktriage.sweep.stepfit import StepShape
from sparktriage.sweep.stream_gate import protocol_outputs
from sparktriage.sweep.stream_gate import unit as stream_unit


# ---- the JSON contract (issue 11): other fields are allowed --------------------------------
class _Open(BaseModel):
    model_config = ConfigDict(extra="allow")


class LaunchEntry(_Open):
    label: str
    depth: Optional[int]
    status: Literal["ok", "failed"]
    delivered_tok_s: Optional[float]
    acceptance_length: Optional[float]


class GateEntry(_Open):
    state: Literal["pass", "fail", "unchecked"]
    reason: str


class DepthEntry(_Open):
    depth: int
    launches: list[dict]
    mean_tok_s: Optional[float]
    ci95_low: Optional[float]
    ci95_high: Optional[float]
    acceptance_length: Optional[float]
    gate: GateEntry
    roofline_pct: Optional[float]


class DecisionEntry(_Open):
    state: Literal["best", "tied", "insufficient"]
    depth: Optional[int]
    candidates: list[int]
    reason: str


class SweepJson(_Open):
    schema_version: int
    method: str
    depths_requested: list[int]
    launches_used: int
    launches: list[LaunchEntry]
    depths: list[DepthEntry]
    decision: DecisionEntry


# ---- building -------------------------------------------------------------------------------
def _mean(values) -> float | None:
    return sum(values) / len(values) if values else None


def basis(records: list[dict]) -> str:
    """`decode` when every ok launch has delivered decode rates, else `e2e` when they all have
    end-to-end rates (responses delivered in bursts have no decode interval)."""
    ok = [r for r in records if r.get("status") == "ok"]
    if all(r.get("request_decode_tok_s") for r in ok):
        return "decode"
    return "e2e" if all(r.get("request_e2e_tok_s") for r in ok) else "decode"


def observations(records: list[dict], which: str) -> list[LaunchObservation]:
    key = "request_decode_tok_s" if which == "decode" else "request_e2e_tok_s"
    return [LaunchObservation(r["label"], r.get("depth"), r.get("status") == "ok",
                              tuple(r.get(key) or ()), dict(r.get("metadata") or {}))
            for r in records if r.get("depth") is not None]


def _reference(obs: list[LaunchObservation]) -> dict | None:
    ok = [o for o in obs if o.ok and o.mean is not None]
    zero = [o for o in ok if o.depth == 0]
    return (zero or ok)[0].metadata if ok else None


def per_depth(plan: SweepPlan, records: list[dict]) -> tuple[str, dict[int, DepthStats]]:
    which = basis(records)
    obs = observations(records, which)
    ref = _reference(obs)
    return which, {d: depth_stats(d, [o for o in obs if o.depth == d], ref) for d in plan.depths}


def _outputs(run_path: Path, label: str) -> list[GreedyOutput] | None:
    try:
        doc = json.loads((run_path / "launches" / label / "gate.json").read_text(encoding="utf-8"))
        return [GreedyOutput.from_dict(o) for o in doc.get("outputs") or []]
    except (OSError, ValueError, KeyError, TypeError):
        return None


def _probe(run_path: Path, label: str) -> dict | None:
    try:
        return json.loads((run_path / "launches" / label / "probe.json").read_text(encoding="utf-8"))
    except (OSError, ValueError):
        return None


def _first_ok(records: list[dict], depth: int) -> str | None:
    return next((r["label"] for r in records if r.get("depth") == depth and r.get("status") == "ok"),
                None)


def _streamed(run_path: Path, records: list[dict], plan: SweepPlan, d: int, probe: dict | None) -> dict | None:
    """The gate of depth d from the protocol's greedy streams (sweep.stream_gate), or None."""
    zero, here = _first_ok(records, 0), _first_ok(records, d)
    if zero is None or here is None:
        return None
    workloads = plan.load_workloads()
    reference = protocol_outputs(run_path / "launches" / zero, workloads, plan.gate_tokens)
    outputs = protocol_outputs(run_path / "launches" / here, workloads, plan.gate_tokens)
    if not reference or not outputs:
        return None
    result = gate(reference, outputs, probe, near_ties=False)
    if result["state"] == "unchecked":
        return None
    what = stream_unit(run_path / "launches" / here, workloads)
    result["reason"] = (f"from the protocol's greedy streams ({what}, the first "
                        f"{plan.gate_tokens} tokens; the gate's own requests gave no output): "
                        + result["reason"])
    return {**result, "launch": here, "source": "protocol streams"}


def gate_by_depth(run_path: Path, records: list[dict], plan: SweepPlan) -> dict[int, dict]:
    """The gate of every depth: the greedy outputs kept in the launch folders, else (when the
    gate's requests gave none) the protocol's greedy streams; `source` says which."""
    collected = {}
    for r in records:
        if r.get("gate_collected") and r.get("status") == "ok" and r.get("depth") not in collected:
            collected[r["depth"]] = r["label"]
    reference = _outputs(run_path, collected[0]) if 0 in collected else None
    out = {}
    for d in plan.depths:
        label = collected.get(d)
        probe = _probe(run_path, label) if label and plan.baseline else None
        if d == 0:
            out[0] = gate(reference, reference, probe) if reference else {
                "state": "unchecked", "reason": "depth 0 has no greedy outputs", "prompts": [],
                "probe": None}
            if reference:
                out[0]["reason"] = "depth 0 is the gate's reference"
            out[0].update(launch=label, source="greedy requests" if reference else None)
            continue
        if label is None:
            entry = {"state": "unchecked", "reason": "no launch at this depth measured its greedy "
                     "outputs", "prompts": [], "probe": None, "launch": None, "source": None}
        else:
            entry = {**gate(reference, _outputs(run_path, label), probe), "launch": label,
                     "source": "greedy requests"}
        if entry["state"] == "unchecked":
            entry = _streamed(run_path, records, plan, d, probe) or {**entry, "source": None}
        out[d] = entry
    return out


def _ceiling(deployment):
    """The deployment's roofline (None and why when it has none or its profile is bad)."""
    if deployment is None:
        return None, None
    try:
        return deployment_ceiling(deployment), None
    except Exception as exc:  # a bad profile must not lose the sweep  # noqa: BLE001
        return None, str(exc).splitlines()[0][:200]


def _gate_note(decision: dict, gates: dict[int, dict], eligible: list[int]) -> str | None:
    """Said on page one when the recommended depth's greedy output was never checked while another
    depth's was."""
    depth = decision.get("depth")
    if depth is None or gates.get(depth, {}).get("state") != "unchecked":
        return None
    checked = [d for d in eligible if d != depth and d != 0 and gates[d]["state"] == "pass"]
    if not checked and depth == 0:
        return None
    return (f"depth {depth} is recommended with its greedy output unchecked against depth 0 "
            f"({gates[depth]['reason']})" + (f"; depth(s) {', '.join(map(str, checked))} passed the "
                                             "gate" if checked else ""))


def _decision(plan: SweepPlan, verdict, stats, gates, failed, eligible, means, which,
              stop_reason: str) -> dict:
    final = stop_reason not in ("running",)
    decision = verdict.as_dict()
    decision["basis"] = which
    decision["stop_reason"] = stop_reason
    decision["excluded"] = {str(d): ("failed twice" if d in failed else "gate failed: "
                                     + gates[d]["reason"])
                            for d in plan.depths if d not in eligible}
    view = None
    if decision["state"] == "insufficient" and final and decision["rule"] == "black-box":
        view = outlook(means, decision["pooled_cv"], decision["pooled_df"], plan.margin,
                       plan.max_launches)
        if view is not None:
            decision["reason"] += "; " + sentence(view, plan.max_launches)
    decision["outlook"] = view
    if which == "e2e" and decision["depth"] is not None:
        decision["reason"] += ("; rates are end-to-end tok/s because some launch delivered its "
                               "responses in bursts, with no decode interval")
    decision["gate_note"] = _gate_note(decision, gates, eligible)
    return decision


def _launch_entries(records: list[dict], which: str, ceiling) -> list[dict]:
    key = "request_decode_tok_s" if which == "decode" else "request_e2e_tok_s"
    launches = []
    for r in records:
        rate = r.get("delivered_tok_s", _mean(r.get("request_decode_tok_s")))
        acc = (r.get("acceptance") or {}).get("mean_acceptance_length")
        launches.append({
            "label": r["label"], "depth": r.get("depth"), "status": r["status"],
            "delivered_tok_s": rate,
            "e2e_tok_s": r.get("e2e_tok_s", _mean(r.get("request_e2e_tok_s"))),
            "acceptance_length": acc, "reason": r.get("reason"), "why": r.get("why"),
            "attempt": r.get("attempt"), "interrupted": bool(r.get("interrupted")),
            "ready_s": r.get("ready_s"), "wall_s": r.get("wall_s"),
            "requests": len(r.get(key) or []),
            "acceptance": r.get("acceptance"),
            "step_ratio": r.get("step_ratio"),
            "pair_ratio": r.get("pair_ratio"),
            "roofline_pct": (ceiling.percent(rate, acc, r.get("depth"))
                             if ceiling and rate is not None else None)})
    return launches


def _versus(stats, best_depth, d):
    s = stats[d]
    if best_depth is None or d == best_depth or not stats[best_depth].launch_means or not s.launch_means:
        return None
    test = welch(list(stats[best_depth].launch_means), list(s.launch_means))
    return {"depth": best_depth, "difference": test.difference, "ci95_low": test.ci95_low,
            "ci95_high": test.ci95_high, "p_value": test.p_value,
            "significant": test.significant, "verdict": test.verdict}


def _depth_entry(d: int, s: DepthStats, records: list[dict], failed: set[int], gate_entry: dict,
                 acc: dict | None, ceiling, versus: dict | None, launches: list[dict]) -> dict:
    by_label = {l["label"]: l for l in launches}
    length = (acc or {}).get("mean_acceptance_length")
    status = ("failed" if d in failed else "measured" if s.launch_means
              else "not run" if not any(r.get("depth") == d for r in records) else "no rate")
    return {
        "depth": d, "status": status,
        "launches": [{"label": l, "delivered_tok_s": by_label[l]["delivered_tok_s"],
                      "e2e_tok_s": by_label[l]["e2e_tok_s"],
                      "acceptance_length": by_label[l]["acceptance_length"]} for l in s.labels],
        "n": s.across.n, "mean_tok_s": s.across.mean, "ci95_low": s.across.ci95_low,
        "ci95_high": s.across.ci95_high, "stdev_launches": s.across.stdev,
        "within_variance": s.within_variance, "between_variance": s.between_variance,
        "stable": s.stable, "stability_reasons": list(s.reasons), "notes": list(s.notes),
        "excluded": list(s.excluded),
        "failures": sum(1 for r in records if r.get("depth") == d and r["status"] == "failed"
                        and not r.get("interrupted")),
        "acceptance_length": length if d else None,
        "per_position": (acc or {}).get("per_position") or [] if d else [],
        "acceptance_source": (acc or {}).get("source") if d else None,
        "gate": dict(gate_entry),
        "ceiling_tok_s": ceiling.at_depth(d, length) if ceiling else None,
        "roofline_pct": ceiling.percent(s.across.mean, length, d) if ceiling and s.across.mean else None,
        "versus_decision": versus,
    }


def build_document(plan: SweepPlan, state, run_path: Path, stop_reason: str,
                   deployment=None) -> dict:
    """`sweep.json` (see module doc)."""
    records = state.launches
    which, stats = per_depth(plan, records)
    gates = gate_by_depth(run_path, records, plan)
    failed = {d for d in plan.depths if _consecutive_failures(records, d) > plan.retries}
    ceiling, roof_error = _ceiling(deployment)
    eligible = [d for d in plan.depths if d not in failed and gates[d]["state"] != "fail"]
    shape = step_shape(deployment) if deployment is not None else StepShape()
    where = situation(plan, records, stats, eligible, shape, which)
    model = model_of(where)
    verdict = decide(where, final=stop_reason not in ("running",), model=model)
    decision = _decision(plan, verdict, stats, gates, failed, eligible, where.means, which,
                         stop_reason)
    accept = {d: (combine([r.get("acceptance") for r in records if r.get("depth") == d and
                           r.get("status") == "ok" and r["label"] in stats[d].labels
                           and r.get("acceptance")]) if d else None) for d in plan.depths}
    launches = _launch_entries(records, which, ceiling)
    depths = [_depth_entry(d, stats[d], records, failed, gates[d], accept[d], ceiling,
                           _versus(stats, decision["depth"], d), launches) for d in plan.depths]
    return {
        "schema_version": SCHEMA_VERSION, "kind": "sweep", "method": plan.method,
        "workload": plan.deciding_workload, "depths_requested": list(plan.depths_requested),
        "depths_swept": list(plan.depths), "launches_used": len(records),
        "max_launches": plan.max_launches, "budget_minutes": plan.budget_minutes,
        "wall_s": round(sum(r.get("wall_s") or 0.0 for r in records), 3),
        "margin": plan.margin, "launches": launches, "depths": depths, "decision": decision,
        "model": model_entry(model, decision, plan.model),
        "speculative": {"source": plan.speculative_source,
                        "left_out": dict(plan.speculative_left_out)},
        "roofline": ({**ceiling.as_dict(), "status": "present",
                      "per_depth": [ceiling.verify(d, accept[d] and accept[d].get(
                          "mean_acceptance_length")).as_dict() for d in plan.depths]}
                     if ceiling else
                     {"status": "missing", "reason": roof_error or "the deployment has no "
                      "roofline: block (docs/roofline.md)"}),
    }


def _consecutive_failures(records: list[dict], depth: int) -> int:
    count = 0
    for r in reversed([r for r in records if r.get("depth") == depth and not r.get("interrupted")]):
        if r["status"] == "ok":
            break
        count += 1
    return count
