"""The two rules that allocate launches and decide a sweep, behind one interface.

A `Policy` answers two questions about the sweep so far (a `Situation`, sweep.policy.situation,
and the depth model after its launches): `next` (the depth of the next launch, None when the
decision is settled) and `decide` (the decision, `final` once the sweep has stopped).
`BlackBoxRule` is the rule of sweep.policy.allocate over launch means alone; `ModelRule` is the
depth model's (sweep.policy.model_rule), which hands the decision to the black-box rule while the
model cannot speak yet. `policy_for` picks the one that leads: the model's while it is available
and not rejected (docs/sweep.md).
"""

from __future__ import annotations

from typing import Protocol

from sparktriage.sweep.policy import allocate, model_rule
from sparktriage.sweep.policy.allocate import Decision
from sparktriage.sweep.model.depth import DepthModel
from sparktriage.sweep.policy.situation import Situation


class Policy(Protocol):
    """A rule that allocates launches and decides, over a typed situation."""

    name: str

    def next(self, situation: Situation, model: DepthModel | None) -> int | None:
        """The depth of the next launch; None when the decision is settled."""

    def decide(self, situation: Situation, final: bool, model: DepthModel | None) -> Decision:
        """The decision after these launches (`final`: the sweep has stopped)."""


class BlackBoxRule:
    """sweep.policy.allocate: the 95% rule over launch means, no model."""

    name = "black-box"

    def next(self, situation: Situation, model: DepthModel | None = None) -> int | None:
        return allocate.next_depth(situation.means, situation.eligible, situation.min_per_depth,
                                   situation.margin)

    def decide(self, situation: Situation, final: bool = True,
               model: DepthModel | None = None) -> Decision:
        return allocate.decide(situation.means, margin=situation.margin, final=final)


class ModelRule:
    """sweep.policy.model_rule: the depth model allocates; it decides once usable (else the
    black box)."""

    name = "model"

    def next(self, situation: Situation, model: DepthModel) -> int | None:
        return model_rule.next_depth(model, situation.eligible, situation.measured,
                                     situation.min_per_depth, situation.margin)

    def decide(self, situation: Situation, final: bool, model: DepthModel) -> Decision:
        if not model.usable:
            return BlackBoxRule().decide(situation, final)
        settled = (model_rule.decide(model, situation.eligible, situation.measured, situation.margin)
                   if model.gated else None)
        if settled is not None:
            return settled
        open_ = (model_rule.ready(model, situation.measured, situation.eligible)
                 or "the slope's confidence set still leaves more than one depth possibly best")
        return model_rule.provisional(model, situation.eligible, final, open_)


def model_leads(model: DepthModel | None) -> bool:
    """Whether the depth model allocates and decides (not rejected, its inputs can come)."""
    return model is not None and model.available and model.state != "rejected"


def policy_for(model: DepthModel | None) -> Policy:
    """The rule that leads after these launches."""
    return ModelRule() if model_leads(model) else BlackBoxRule()
