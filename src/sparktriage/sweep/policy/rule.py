"""Which rule decides the sweep: the depth model while it holds, the black-box rule otherwise.

The depth model (sweep.model.depth, sweep.policy.model_rule) allocates and decides while its state
is `used` or, on the way there, `not-enough-data` with its inputs still to come. Once a check
rejects it (a rejection stands: `advance`), or when its inputs cannot come (rates compared
end to end, no acceptance counts), or with `--no-model`, the black-box rule of sweep.policy.allocate
allocates and decides, over every launch already made: a rejected model costs launches, never
correctness. The model's own verdict and why are kept in `sweep.json` (`model`). Both rules are
`sweep.policy.decide.Policy`s; `next_depth` and `decide` ask the one that leads (`policy_for`).
"""

from __future__ import annotations

from dataclasses import dataclass, replace

from sparktriage.sweep.policy import allocate, model_rule
from sparktriage.sweep.policy.allocate import Decision
from sparktriage.sweep.policy.decide import (model_leads,  # noqa: F401 (re-exported)
                                             policy_for)
from sparktriage.sweep.model.depth import CONTENDER_ALPHA, DepthModel, ModelLaunch, build
from sparktriage.sweep.policy.situation import Situation


def _counted(history: list[ModelLaunch]) -> dict[int, int]:
    out: dict[int, int] = {}
    for launch in history:
        out[launch.depth] = out.get(launch.depth, 0) + 1
    return out


def advance(previous: DepthModel | None, history: list[ModelLaunch], situation: Situation) -> DepthModel:
    """The model after one more launch (the last of `history`), given the model before it.

    A rejection stands (a later launch cannot un-reject it). When the model would settle, its
    checks run once more at the gate's level (sweep.model.depth.level): it settles only if they
    pass, and is rejected otherwise."""
    depths, shape, basis = tuple(situation.eligible), situation.shape, situation.basis
    looks = previous.looks if previous is not None else None
    model = build(history, depths, shape, basis, looks)
    last = history[-1].label if history else None
    if previous is not None and previous.state == "rejected":
        return replace(model, state="rejected", reason=previous.reason,
                       rejected_after=previous.rejected_after, rejected_by=previous.rejected_by)
    if model.state == "rejected":
        return replace(model, rejected_after=last)
    counted = _counted(history)
    pending = (model_rule.decide(model, situation.eligible, counted, situation.margin)
               if model.usable else None)
    if pending is not None:
        gated = build(history, depths, shape, basis, looks, gate=True)
        if gated.state == "rejected":
            return replace(gated, rejected_after=last)
        aimed = model_rule.contender_check(gated, pending.depth, CONTENDER_ALPHA,  # type: ignore[arg-type]
                                           situation.margin)
        gated = replace(gated, checks=gated.checks + (aimed,))
        if aimed.passed is False:
            return replace(gated, state="rejected", reason=aimed.reason, rejected_after=last,
                           rejected_by="contender (gate)")
        return gated
    return model


def model_of(situation: Situation) -> DepthModel | None:
    """The model after the situation's launches: `advance` over every prefix of the history."""
    if not situation.use_model or not situation.eligible:
        return None
    model = None
    for n in range(1, len(situation.history) + 1):
        model = advance(model, situation.history[:n], situation)
    if model is None:
        model = build([], tuple(situation.eligible), situation.shape, situation.basis)
    return model


def why(model: DepthModel | None, depth: int, situation: Situation) -> str:
    """Why the depth model asks for a launch at `depth` (the launch record's `why`)."""
    if model is None or model.steps is None:
        return "the depth model's first launches: depth 0 and the deepest depth pin its step cost"
    measured = situation.measured
    if measured.get(depth, 0) < situation.min_per_depth:
        return ("the depth model: every depth is launched once (a depth never launched could "
                "hide a step-cost jump)")
    reason = model_rule.ready(model, measured, situation.eligible)
    return f"the depth model: {reason}" if reason else ("the depth model: most narrows the step "
                                                         "cost's slope where the decision hangs")


def decide(situation: Situation, final: bool = True, model: DepthModel | None = None) -> Decision:
    """The sweep's decision (the model's while it leads and can speak, else the black box's)."""
    model = model if model is not None else model_of(situation)
    return policy_for(model).decide(situation, final, model)


def next_depth(situation: Situation, model: DepthModel | None = None) -> int | None:
    """The depth of the next launch, or None when the decision is settled."""
    model = model if model is not None else model_of(situation)
    return policy_for(model).next(situation, model)
