"""What the sweep's rule reads from its launch records: the model's launches and the step shape.

The rule (sweep.policy.rule) sees the ok launches that pool with the reference launch
(sweep.evidence.stats), of the depths still eligible (gate not failed, not failed twice), in launch
order: each with its launch mean (the same number the black-box rule uses) and its acceptance counts
(sweep.evidence.counts, from the record's `acceptance`). The step shape comes from the deployment's
roofline model profile: the expert union of an MoE profile (roofline.experts), a linear cost
otherwise.
"""

from __future__ import annotations

from dataclasses import dataclass

from sparktriage.sweep.evidence import steptimes
from sparktriage.sweep.evidence.counts import from_acceptance
from sparktriage.sweep.model.depth import ModelLaunch
from sparktriage.sweep.plan import SweepPlan
from sparktriage.sweep.policy import allocate
from sparktriage.sweep.evidence.stats import DepthStats
from sparktriage.sweep.model.stepfit import StepShape


@dataclass(frozen=True)
class Situation:
    """What the rule looks at after some launches."""

    history: list[ModelLaunch]  # ok, pooled launches of eligible depths, in launch order
    means: dict[int, list[float]]  # eligible depth -> its launch means (the black-box view)
    eligible: list[int]
    shape: StepShape
    basis: str = "decode"
    use_model: bool = True
    margin: float = allocate.MARGIN
    min_per_depth: int = 1

    @property
    def measured(self) -> dict[int, int]:
        return {d: len(v) for d, v in self.means.items()}


def step_shape(deployment) -> StepShape:
    """The step shape of a loaded Deployment (linear without an MoE roofline profile)."""
    spec = getattr(deployment, "roofline", None)
    if spec is None:
        return StepShape()
    from sparktriage.errors import SparktriageError
    from sparktriage.roofline.profiles import ModelProfile, load_profile
    try:
        profile = load_profile(ModelProfile, spec.model)
    except SparktriageError:
        return StepShape()
    if not profile.is_moe:
        return StepShape("linear", profile=profile.name)
    return StepShape("expert-union", profile.experts, profile.experts_per_token,
                     profile.routing_correlation, profile.name)


def history(records: list[dict], stats: dict[int, DepthStats], eligible: list[int]) -> list[ModelLaunch]:
    """The pooled ok launches of eligible depths, in launch order."""
    means = {label: mean for s in stats.values() for label, mean in zip(s.labels, s.launch_means)}
    out = []
    for r in records:
        depth, label = r.get("depth"), r.get("label")
        if depth not in eligible or label not in means:
            continue
        out.append(ModelLaunch(label, depth, means[label], from_acceptance(depth, r.get("acceptance")),
                               steptimes.from_dict(r.get("step_ratio")),
                               steptimes.from_dict(r.get("pair_ratio"))))
    return out


def situation(plan: SweepPlan, records: list[dict], stats: dict[int, DepthStats],
              eligible: list[int], shape: StepShape, basis: str) -> Situation:
    """The rule's view of the sweep so far."""
    means = {d: list(stats[d].launch_means) for d in eligible if stats[d].launch_means}
    return Situation(history(records, stats, eligible), means, list(eligible), shape, basis,
                     plan.model, plan.margin, plan.min_launches_per_depth)
