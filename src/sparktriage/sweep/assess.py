"""One assessment per launch: statistics, gates, the depth model and the decision, once.

`assess(plan, evidence, previous)` reads the launches so far (sweep.evidence.launch, in launch
order) and computes, once, everything the sweep decides with: the basis of its rates (decode, else
end to end), each depth's statistics over its pooled launches (sweep.evidence.stats), each depth's
gate (sweep.evidence.depth_gates), the depths failed twice, the eligible depths, the rule's view
(`policy.situation.Situation`), the depth model and the decision of the rule that leads
(sweep.policy.decide). The engine loop asks the `Assessment` for the next launch (`next_launch`);
`sweep.json` is written from it (sweep.document), so both read the same numbers.

The depth model is advanced, not replayed: when the new launches extend the previous
assessment's history (same eligible depths, step shape, basis and margin), only they are fed to
`rule.advance`; when a launch changes an earlier one's standing (a gate that fails later, a
depth failed twice, a new pooling reference, the basis turning end to end), the model is
rebuilt over the history as it now stands, as a fresh sweep over these launches would be.
"""

from __future__ import annotations

from dataclasses import dataclass, replace
from pathlib import Path

from sparktriage.sweep.policy import rule
from sparktriage.sweep.policy.allocate import Decision
from sparktriage.sweep.evidence.depth_gates import gate_by_depth
from sparktriage.sweep.evidence.launch import LaunchEvidence
from sparktriage.sweep.model.depth import DepthModel, build
from sparktriage.sweep.policy.situation import Situation, situation as situation_of
from sparktriage.sweep.plan import SweepPlan
from sparktriage.sweep.policy.decide import model_leads, policy_for
from sparktriage.sweep.evidence.stats import DepthStats, LaunchObservation, depth_stats
from sparktriage.sweep.model.stepfit import StepShape


@dataclass(frozen=True)
class Assessment:
    """The sweep after its launches so far (module doc)."""

    plan: SweepPlan
    evidence: tuple[LaunchEvidence, ...]
    records: tuple[dict, ...]  # the evidence as launch records (readers of records)
    basis: str
    stats: dict[int, DepthStats]
    gates: dict[int, dict]
    failed: frozenset[int]
    eligible: tuple[int, ...]
    situation: Situation
    model: DepthModel | None
    rule: str  # the policy that leads: model, black-box
    decision: Decision
    final: bool = False
    replayed: bool = True  # False when the model was advanced from the previous assessment

    def concluded(self) -> "Assessment":
        """The same assessment with the decision of a sweep that has stopped (no model rebuilt)."""
        if self.final:
            return self
        return replace(self, decision=policy_for(self.model).decide(self.situation, True,
                                                                     self.model), final=True)

    # ---- the next launch ------------------------------------------------------------------
    def consecutive_failures(self, depth: int) -> int:
        return consecutive_failures(self.records, depth)

    def next_launch(self) -> tuple[int | None, str]:
        """The next depth and why (None and the stop reason when the sweep is done)."""
        plan = self.plan
        if len(self.evidence) >= plan.max_launches:
            return None, "launch budget spent"
        if plan.budget_minutes is not None:
            walls = [e.wall_s for e in self.evidence if e.wall_s]
            estimate = sum(walls) / len(walls) if walls else 0.0
            elapsed = sum(e.wall_s or 0.0 for e in self.evidence)
            if elapsed + estimate > plan.budget_minutes * 60.0:
                return None, "time budget spent"
        for d in self.eligible:  # a failed launch is retried once, before anything else
            if 0 < self.consecutive_failures(d) <= plan.retries:
                return d, "retry of a failed launch"
        where, model = self.situation, self.model
        depth = policy_for(model).next(where, model)
        if depth is None:
            return None, ("settled" if [d for d in self.eligible if where.means.get(d)]
                          else "no eligible depth")
        minimum = len(where.means.get(depth) or []) < plan.min_launches_per_depth
        leads = model_leads(model)
        return depth, ("minimum launches per depth" if minimum and not leads
                       else rule.why(model, depth, where) if leads
                       else "most reduces the uncertainty about the best depth")


# ---- statistics -----------------------------------------------------------------------------
def basis(records) -> str:
    """`decode` when every ok launch has delivered decode rates, else `e2e` when they all have
    end-to-end rates (responses delivered in bursts have no decode interval)."""
    ok = [r for r in records if r.get("status") == "ok"]
    if all(r.get("request_decode_tok_s") for r in ok):
        return "decode"
    return "e2e" if all(r.get("request_e2e_tok_s") for r in ok) else "decode"


def observations(records, which: str) -> list[LaunchObservation]:
    key = "request_decode_tok_s" if which == "decode" else "request_e2e_tok_s"
    return [LaunchObservation(r["label"], r.get("depth"), r.get("status") == "ok",
                              tuple(r.get(key) or ()), dict(r.get("metadata") or {}))
            for r in records if r.get("depth") is not None]


def _reference(obs: list[LaunchObservation]) -> dict | None:
    ok = [o for o in obs if o.ok and o.mean is not None]
    zero = [o for o in ok if o.depth == 0]
    return (zero or ok)[0].metadata if ok else None


def per_depth(plan: SweepPlan, records) -> tuple[str, dict[int, DepthStats]]:
    which = basis(records)
    obs = observations(records, which)
    ref = _reference(obs)
    return which, {d: depth_stats(d, [o for o in obs if o.depth == d], ref) for d in plan.depths}


def consecutive_failures(records, depth: int) -> int:
    count = 0
    for r in reversed([r for r in records if r.get("depth") == depth and not r.get("interrupted")]):
        if r["status"] == "ok":
            break
        count += 1
    return count


# ---- the model ------------------------------------------------------------------------------
def _same_ground(a: Situation, b: Situation) -> bool:
    return (a.eligible == b.eligible and a.shape == b.shape and a.basis == b.basis
            and a.margin == b.margin and a.use_model == b.use_model)


def _model(where: Situation, previous: "Assessment | None") -> tuple[DepthModel | None, bool]:
    """The depth model after `where`'s history, and whether it was replayed (module doc)."""
    if not where.use_model or not where.eligible:
        return None, True
    model, start, replayed = None, 0, True
    if previous is not None and previous.model is not None:
        before = previous.situation.history
        if (before and _same_ground(previous.situation, where)
                and list(where.history[:len(before)]) == list(before)):
            model, start, replayed = previous.model, len(before), False
    for n in range(start + 1, len(where.history) + 1):
        model = rule.advance(model, where.history[:n], where)
    if model is None:
        model = build([], tuple(where.eligible), where.shape, where.basis)
    return model, replayed


def assess(plan: SweepPlan, evidence: tuple[LaunchEvidence, ...] | list[LaunchEvidence],
           previous: Assessment | None, *, run_path: Path, shape: StepShape,
           final: bool = False) -> Assessment:
    """The sweep after `evidence` (module doc); `previous`: the assessment before the last
    launches (None: build from scratch); `final`: the sweep has stopped."""
    evidence = tuple(evidence)
    records = tuple(e.as_record() for e in evidence)
    which, stats = per_depth(plan, records)
    gates = gate_by_depth(run_path, list(records), plan)
    failed = frozenset(d for d in plan.depths if consecutive_failures(records, d) > plan.retries)
    eligible = tuple(d for d in plan.depths if d not in failed and gates[d]["state"] != "fail")
    where = situation_of(plan, list(records), stats, list(eligible), shape, which)
    model, replayed = _model(where, previous)
    policy = policy_for(model)
    decision = policy.decide(where, final, model)
    return Assessment(plan, evidence, records, which, stats, gates, failed, eligible, where,
                      model, policy.name, decision, final, replayed)
