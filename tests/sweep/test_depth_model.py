"""The depth model on launches with known physics (no server): counts, AL(k), the step fit, the
checks that reject it, and the rule that decides with it (sweep.evidence.counts, acceptance_model,
stepfit, fitchecks, model, model_rule, rule; docs/sweep.md "The depth model")."""

from __future__ import annotations

import math
import random
import statistics

import pytest

from sparktriage.roofline import experts
from sparktriage.sweep.model import acceptance_model, fitchecks, stepfit
from sparktriage.sweep.policy import model_rule, rule
from sparktriage.sweep.evidence.counts import Counts, from_acceptance, pooled
from sparktriage.sweep.model.depth import ModelLaunch, build
from sparktriage.sweep.model.stepfit import StepPoint, StepShape

KIMI = StepShape("expert-union", 384, 8, 0.0, "kimi-k2")
RATES = (0.8, 0.6, 0.2, 0.1)  # unconditional per-position acceptance at depth 4


def counts(depth: int, drafts: int = 4000, rates=RATES, length: int | None = None) -> Counts:
    """Exact counts of `drafts` drafts at `depth` (every step drafts)."""
    per_pos = tuple(round(drafts * r) for r in rates[:depth])
    accepted = sum(per_pos)
    return Counts(depth, float(drafts), float(drafts * (length or depth)), float(accepted),
                  tuple(float(x) for x in per_pos), float(drafts + accepted))


def tps(depth: int) -> float:
    return 1.0 + sum(RATES[:depth])


def rate(depth: int, slope: float, base: float = 30.0, jump: tuple[int, float] | None = None,
         noise: float = 0.0) -> float:
    h = 1.0 + slope * KIMI.g(depth)
    if jump and depth >= jump[0]:
        h *= jump[1]
    return base * tps(depth) / h * math.exp(noise)


def launches(plan: list[int], slope: float, seed: int = 1, sd: float = 0.0, jump=None,
             counts_of=counts) -> list[ModelLaunch]:
    rng = random.Random(seed)
    return [ModelLaunch(f"L{i + 1:03d}", d, rate(d, slope, jump=jump, noise=rng.gauss(0, sd)),
                        counts_of(d) if d else None) for i, d in enumerate(plan)]


def test_counts_give_steps_tokens_per_step_drafted_share_and_rates():
    c = Counts(3, drafts=800, draft_tokens=2400, accepted=1200, per_position=(600, 400, 200),
               generation_tokens=2200)
    assert c.steps == 1000 and c.tokens_per_step == pytest.approx(2.2)
    assert c.drafted_share == pytest.approx(0.8) and c.mean_draft_length == pytest.approx(3.0)
    assert [c.rate(i) for i in (1, 2, 3, 4)] == [0.75, 0.5, 0.25, 0.0]
    record = {"drafts": 800, "draft_tokens": 2400, "accepted_tokens": 1200,
              "per_position": [0.75, 0.5, 0.25], "generation_tokens": 2200, "source": "metrics"}
    assert from_acceptance(3, record) == c  # rates weighted back into counts when exact ones are absent
    assert pooled([c, c]).per_position == (1200, 800, 400) and pooled([]) is None


def test_al_of_every_shallower_depth_from_the_deepest_launch_with_counting_intervals():
    model = acceptance_model.build({4: counts(4, 4000)})
    for k in range(5):
        assert model.acceptance_length(k) == pytest.approx(1 + sum(RATES[:k]))
        low, high = model.acceptance_interval(k)
        assert low <= model.acceptance_length(k) <= high
    # nested binomials: Var(Σ rate_i) = (Σ s(1 − s) + 2 Σ_{i<j} s_j (1 − s_i)) / D
    s = RATES[:2]
    var = (s[0] * (1 - s[0]) + s[1] * (1 - s[1]) + 2 * s[1] * (1 - s[0])) / 4000
    low, high = model.acceptance_interval(2)
    assert (high - low) / 2 == pytest.approx(1.959964 * math.sqrt(var))
    assert model.source(2) == "depth 4's counts" and model.source(0).startswith("none")


def test_the_drafter_check_passes_equal_rates_and_rejects_rates_that_depend_on_k():
    same = acceptance_model.build({4: counts(4), 2: counts(2)})
    check = acceptance_model.drafter_check(same)
    assert check.passed is True and check.figures["acceptance_length"]["2"] == {
        "measured": 2.4, "from_reference": 2.4}
    lower = acceptance_model.build({4: counts(4), 2: counts(2, rates=(0.74, 0.55))})
    check = acceptance_model.drafter_check(lower)
    assert check.passed is False and "depends on k" in check.reason
    assert check.figures["acceptance_length"]["2"] == {"measured": 2.29, "from_reference": 2.4}
    assert acceptance_model.drafter_check(acceptance_model.build({4: counts(4)})).passed is None


def test_short_drafts_reject_the_model():
    short = acceptance_model.build({4: counts(4, length=3)})
    check = acceptance_model.short_draft_check(short)
    assert check.passed is False and "3.00 tokens per draft at depth 4" in check.reason
    assert acceptance_model.short_draft_check(acceptance_model.build({4: counts(4)})).passed is True


def test_the_step_fit_recovers_the_slope_and_its_confidence_set_holds_it():
    exact = [StepPoint(l.label, l.depth, tps(l.depth) / l.rate if l.depth else 1 / l.rate)
             for l in launches([0, 4, 2, 0, 4, 1], 0.3)]
    fit = stepfit.fit(exact, KIMI)
    assert fit.slope == pytest.approx(0.3, abs=1e-4) and fit.rss == pytest.approx(0, abs=1e-12)
    hits = 0
    for seed in range(200):  # with a 6.5% launch spread the 95% set holds the slope ~95% of the time
        pts = [StepPoint(l.label, l.depth, tps(l.depth) / l.rate if l.depth else 1 / l.rate)
               for l in launches([0, 4, 2, 3, 1, 0, 4, 2], 0.3, seed, sd=0.065)]
        f = stepfit.fit(pts, KIMI)
        hits += f.slope_low <= 0.3 <= f.slope_high
    assert 0.90 <= hits / 200 <= 0.99


def test_the_union_shape_is_the_expert_ratio_and_linear_without_a_profile():
    assert KIMI.g(3) == pytest.approx(experts.ratio(384, 8, 4) - 1) == pytest.approx(31.0 / 8 - 1, abs=0.01)
    assert StepShape().g(3) == 3.0


def _points(ls):
    return [StepPoint(l.label, l.depth, (tps(l.depth) if l.depth else 1.0) / l.rate) for l in ls]


def test_lack_of_fit_and_the_jump_test_reject_a_kernel_path_jump_and_pass_a_smooth_curve():
    plan = [0, 4, 2, 3, 1, 0, 4, 2, 3, 1]
    smooth = stepfit.fit(_points(launches(plan, 0.2, sd=0.03)), KIMI)
    jumped = stepfit.fit(_points(launches(plan, 0.2, sd=0.03, jump=(3, 1.5))), KIMI)
    assert fitchecks.lack_of_fit(smooth).passed is True and fitchecks.jump_test(smooth).passed is True
    assert fitchecks.lack_of_fit(jumped).passed is False
    check = fitchecks.jump_test(jumped)
    assert check.passed is False and check.figures["best"] == "jump from depth 3"
    assert check.figures["factor"] == pytest.approx(1.5, rel=0.1)


def test_a_step_time_that_falls_with_depth_is_not_monotone():
    ls = launches([0, 1, 2, 0, 1, 2], 0.0, sd=0.0)
    falling = [StepPoint(l.label, l.depth, 0.03 * (1.0 if l.depth == 1 else 0.8 if l.depth == 2 else 0.7)
                         * (1 + 0.01 * i)) for i, l in enumerate(ls)]
    check = fitchecks.monotone_check(stepfit.fit(falling, StepShape()))
    assert check.passed is False and "falls from" in check.reason


def test_model_states_not_enough_data_used_and_rejected():
    depths = (0, 1, 2, 3, 4)
    assert build(launches([0], 0.2), depths, KIMI).state == "not-enough-data"
    two = build(launches([0, 4], 0.2), depths, KIMI)
    assert two.state == "not-enough-data" and "third launch" in two.reason
    used = build(launches([0, 4, 2, 1, 3, 0], 0.2, sd=0.02), depths, KIMI)
    assert used.state == "used"
    assert used.prediction(2)["acceptance_length"] == pytest.approx(2.4)
    assert used.prediction(3)["tokens_per_step"] == pytest.approx(tps(3))
    no_counts = build([ModelLaunch("L001", 0, 30.0), ModelLaunch("L002", 4, 40.0)], depths, KIMI)
    assert no_counts.state == "not-enough-data" and not no_counts.available
    e2e = build(launches([0, 4, 2], 0.2), depths, KIMI, basis="e2e")
    assert not e2e.available and "end-to-end" in e2e.reason
    short = build(launches([0, 4, 2], 0.2, counts_of=lambda d: counts(d, length=max(1, d - 1))),
                  depths, KIMI)
    assert short.state == "rejected" and "drafts come short" in short.reason


def _sweep(slope: float, seed: int, jump=None, sd: float = 0.065, cap: int = 40):
    """A simulated sweep driven by the rule itself (sweep.policy.rule), as the engine drives it."""
    rng = random.Random(seed)
    depths = [0, 1, 2, 3, 4]
    history: list[ModelLaunch] = []
    means: dict[int, list[float]] = {}
    model = None
    while len(history) < cap:
        where = rule.Situation(history, means, depths, KIMI)
        depth = rule.next_depth(where, model if history else None)
        if depth is None:
            break
        value = rate(depth, slope, jump=jump, noise=rng.gauss(0, sd))
        history.append(ModelLaunch(f"L{len(history) + 1:03d}", depth, value,
                                   counts(depth) if depth else None))
        means.setdefault(depth, []).append(value)
        model = rule.advance(model, history, rule.Situation(history, means, depths, KIMI))
    return rule.decide(rule.Situation(history, means, depths, KIMI), True, model), history, model


def test_the_rule_decides_with_the_model_after_the_ends_and_every_depth_is_measured():
    """Twenty noisy sweeps (6.5% launch spread) of one smooth curve: each starts at depth 0 and
    the deepest, measures every depth before it decides and recommends a measured depth within
    the margin; most are decided by the model, in far fewer launches than the 3-per-depth grid
    (a surprising depth is launched again, and the fastest and its closest rival get two
    launches each, so a few sweeps run longer)."""
    truth = {d: rate(d, 0.2) for d in range(5)}
    best = max(truth, key=truth.get)
    lengths, by_model = [], 0
    for seed in range(20):
        decision, history, model = _sweep(0.2, seed=seed)
        assert [l.depth for l in history[:2]] == [0, 4]  # depth 0 and the deepest first
        assert {l.depth for l in history} == {0, 1, 2, 3, 4}  # every depth before it decides
        assert decision.state in ("best", "tied")
        assert truth[decision.depth] >= 0.98 * truth[best]
        assert any(l.depth == decision.depth for l in history)  # the recommendation was measured
        by_model += decision.rule == "model" and model.usable
        lengths.append(len(history))
    assert by_model >= 17
    assert statistics.median(lengths) <= 9  # the grid: 15 (the contest's two launches each: 8 -> 9)


def test_a_jump_rejects_the_model_and_the_black_box_rule_decides_with_every_launch():
    decision, history, model = _sweep(0.13, seed=5, jump=(3, 1.5), sd=0.03)
    assert model.state == "rejected" and model.rejected_after is not None
    assert decision.rule == "black-box"
    truth = {d: rate(d, 0.13, jump=(3, 1.5)) for d in range(5)}
    if decision.state != "insufficient":
        assert truth[decision.depth] >= 0.98 * max(truth.values())


@pytest.mark.slow  # 60 simulated sweeps: about 8 s
def test_a_moderate_jump_the_curve_smooths_over_is_named_wrong_in_few_sweeps():
    """A 1.3x step-cost jump from depth 2 at a 6.5% launch spread: one launch a depth reads as a
    steeper smooth curve, and depth 2 (7.7% below depth 1) looks best to it. Depths that compare
    with the fastest better than the curve says are launched again (model_rule.CHALLENGER_Z,
    0.5), and the fastest and its closest rival get two launches each (CONTEST_LAUNCHES),
    until the curve is rejected or the launches agree with it: 5 wrong of 60 sweeps; with
    neither (CHALLENGER_Z 1.0), 12 of 60."""
    jump = (2, 1.3)
    truth = {d: rate(d, 0.13, jump=jump) for d in range(5)}
    wrong = 0
    for seed in range(60):
        decision, _, _ = _sweep(0.13, seed=seed, jump=jump)
        wrong += decision.state != "insufficient" and truth[decision.depth] < 0.98 * max(truth.values())
    assert wrong <= 7


def test_model_rule_needs_the_lack_of_fit_test_and_every_depth_before_it_settles():
    depths = (0, 1, 2, 3, 4)
    model = build(launches([0, 4, 2, 0, 4, 0], 0.2, sd=0.01), depths, KIMI)
    measured = {0: 3, 4: 2, 2: 1}
    why = model_rule.ready(model, measured, list(depths))
    assert why is not None and "not measured yet" in why
    assert model_rule.decide(model, list(depths), measured) is None
