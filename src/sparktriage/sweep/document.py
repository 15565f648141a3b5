"""The sweep document (`sweep.json`, also what `sweep --json` writes) from an assessment.

`record(assessment, stop_reason, deployment)` is the typed record (documents/sweep.py
`SweepJson`: the file's contract, so what the sweep writes is checked by being made) of what
sweep.assess computed once for the launches so far (statistics, gates, model, decision): nothing
here decides. `document()` is its JSON object, the bytes of sweep.json (`record.to_dict()` gives
the same). It can be rebuilt at any time from the launch folders (`sparktriage sweep --rebuild
DIR`, after every launch, after a resume); the fields are documented in docs/formats.md.
The launch is the unit of replication: per depth the mean of launch means with a t-interval over
launches; `comparisons` holds the chosen depth's Welch tests against depth 0 and the runner-up
(the report restates them), and `model` says what the depth model made of the launches
(sweep.model.entry).
"""

from __future__ import annotations

from pathlib import Path

from sparktriage.documents.sweep import SweepJson
from sparktriage.roofline.ceiling import deployment_ceiling
from sparktriage.stats.compare import welch
from sparktriage.store.rundir import SCHEMA_VERSION
from sparktriage.store.typed import parse
from sparktriage.sweep.evidence.acceptance import combine
from sparktriage.sweep.assess import Assessment, assess
from sparktriage.sweep.evidence.launch import derive_all
from sparktriage.sweep.model.depth import UNKNOWN_SHARE
from sparktriage.sweep.model.entry import model_entry
from sparktriage.sweep.policy.situation import step_shape
from sparktriage.sweep.policy.outlook import outlook, sentence
from sparktriage.sweep.plan import SweepPlan
from sparktriage.sweep.evidence.stats import DepthStats
from sparktriage.sweep.model.stepfit import StepShape


# ---- building -------------------------------------------------------------------------------
def _mean(values) -> float | None:
    return sum(values) / len(values) if values else None


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


def _comparisons(stats: dict[int, DepthStats], chosen: int | None) -> list[dict]:
    """The chosen depth's Welch tests (over launch means) against depth 0 and against the
    runner-up (the highest other mean): what the report states (docs/report.md)."""
    if chosen is None or chosen not in stats or not stats[chosen].launch_means:
        return []
    ranked = sorted((d for d in stats if d != chosen and stats[d].launch_means),
                    key=lambda d: -(stats[d].across.mean or 0.0))
    against = [0] if 0 in ranked else []
    if ranked and ranked[0] not in against:
        against.append(ranked[0])
    out = []
    for other in against:
        test = welch(list(stats[other].launch_means), list(stats[chosen].launch_means))
        out.append({"depth": chosen, "versus": other, "test": test.as_dict()})
    return out


def document(assessment: Assessment, stop_reason: str, deployment=None) -> dict:
    """`sweep.json` of an assessment (see module doc); `stop_reason` "running" while the sweep
    goes on (its decision then not final)."""
    a = assessment if stop_reason == "running" else assessment.concluded()
    plan, records, stats, gates, failed = a.plan, list(a.records), a.stats, a.gates, set(a.failed)
    ceiling, roof_error = _ceiling(deployment)
    decision = _decision(plan, a.decision, stats, gates, failed, list(a.eligible),
                         a.situation.means, a.basis, stop_reason)
    if plan.model and a.model is not None and a.model.reason == UNKNOWN_SHARE \
            and decision["rule"] == "black-box":
        # nothing is assumed for the no-match share: the decision says why the model stood aside
        decision["reason"] += "; the depth model was not used: " + UNKNOWN_SHARE
    accept = {d: (combine([r.get("acceptance") for r in records if r.get("depth") == d and
                           r.get("status") == "ok" and r["label"] in stats[d].labels
                           and r.get("acceptance")]) if d else None) for d in plan.depths}
    launches = _launch_entries(records, a.basis, ceiling)
    depths = [_depth_entry(d, stats[d], records, failed, gates[d], accept[d], ceiling,
                           _versus(stats, decision["depth"], d), launches) for d in plan.depths]
    return {
        "schema_version": SCHEMA_VERSION, "kind": "sweep", "method": plan.method,
        "workload": plan.deciding_workload, "depths_requested": list(plan.depths_requested),
        "depths_swept": list(plan.depths), "launches_used": len(records),
        "max_launches": plan.max_launches, "budget_minutes": plan.budget_minutes,
        "wall_s": round(sum(r.get("wall_s") or 0.0 for r in records), 3),
        "margin": plan.margin, "launches": launches, "depths": depths, "decision": decision,
        "comparisons": _comparisons(stats, decision["depth"]),
        "model": model_entry(a.model, decision, plan.model),
        "speculative": {"source": plan.speculative_source,
                        "left_out": dict(plan.speculative_left_out)},
        "roofline": ({**ceiling.as_dict(), "status": "present",
                      "per_depth": [ceiling.verify(d, accept[d] and accept[d].get(
                          "mean_acceptance_length")).as_dict() for d in plan.depths]}
                     if ceiling else
                     {"status": "missing", "reason": roof_error or "the deployment has no "
                      "roofline: block (docs/roofline.md)"}),
    }


def record(assessment: Assessment, stop_reason: str, deployment=None) -> SweepJson:
    """The typed sweep record of an assessment (a document that breaks the contract is a bug of
    this module, stopped here with the field named)."""
    return parse(SweepJson, document(assessment, stop_reason, deployment), SweepJson.FILE)


def build_record(plan: SweepPlan, state, run_path: Path, stop_reason: str,
                 deployment=None) -> SweepJson:
    """The sweep record of a sweep's state (its launch records) and launch folders, assessed
    afresh."""
    shape = step_shape(deployment) if deployment is not None else StepShape()
    found = assess(plan, derive_all(run_path, state.launches, plan), None, run_path=run_path,
                   shape=shape, final=stop_reason != "running")
    return record(found, stop_reason, deployment)


def build_document(plan: SweepPlan, state, run_path: Path, stop_reason: str,
                   deployment=None) -> dict:
    """`sweep.json` of a sweep's state and launch folders (build_record's JSON object)."""
    return build_record(plan, state, run_path, stop_reason, deployment).to_dict()
