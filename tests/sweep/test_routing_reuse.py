"""Routing reuse in the depth model (issue 38; docs/sweep.md "Routing reuse"): fitted from the
two-stream ratios and the launches' step times where they can tell it, its prior range kept
where they cannot, its range in every prediction's interval, and the sentence that says which
term did not fit when the model is rejected (sweep.model.rejection, `model.rejection` in
sweep.json)."""

from __future__ import annotations

import math
import random
from dataclasses import replace

import pytest

from sparktriage.roofline import experts
from sparktriage.sweep.evidence.counts import Counts
from sparktriage.sweep.model.depth import ModelLaunch, build
from sparktriage.sweep.model.entry import model_entry
from sparktriage.sweep.model.stepfit import REUSE_MAX, StepShape
from sparktriage.sweep.evidence.steptimes import StepRatio

KIMI = StepShape("expert-union", 384, 8, 0.0, "kimi-k2")  # the profile: independent routing
DEPTHS = (0, 1, 2, 3, 4)
PLAN = (0, 4, 2, 0, 3, 1, 2, 4)
RATES = (0.8, 0.6, 0.4, 0.25)


def _union(k: int, reuse: float, streams: int = 1) -> float:
    return experts.ratio(384, 8, k + 1, reuse, streams) - 1.0


def _counts(depth: int, q: float = 1.0) -> Counts:
    per = RATES[:depth]
    drafts = 1000.0
    accepted = sum(per) * drafts
    return Counts(depth, drafts, drafts * depth, accepted, tuple(x * drafts for x in per),
                  drafts / q + accepted, "metrics", 1.0)


def _launches(reuse: float, slope: float = 0.6, seed: int = 3, sd: float = 0.02,
              q: float = 1.0, jump: tuple[int, float] | None = None) -> list[ModelLaunch]:
    """Launches of a target whose consecutive tokens share `reuse` of their experts: q = 1
    (every-step drafter) gives each launch its two-stream ratio, q < 1 (ngram) its verify
    ratio; launch spread `sd`, each ratio off by 1%."""
    rng = random.Random(seed)
    out = []
    for n, k in enumerate(PLAN):
        verify = 1.0 + slope * _union(k, reuse)
        if jump and k >= jump[0]:
            verify *= jump[1]
        counts = _counts(k, q) if k else None
        share = counts.drafted_share if counts else 1.0
        step = 0.02 * ((1.0 - share) + share * verify) * math.exp(rng.gauss(0.0, sd))
        tps = counts.tokens_per_step if counts else 1.0
        pair = verify_ratio = None
        if q >= 1.0:
            two = 1.0 + slope * _union(k, reuse, 2)
            pair = StepRatio(k, math.log(two / verify) + rng.gauss(0.0, 0.01), 0.012)
        elif k:
            verify_ratio = StepRatio(k, math.log(verify) + rng.gauss(0.0, 0.01), 0.012)
        out.append(ModelLaunch(f"L{n + 1:03d}", k, tps / step, counts, verify_ratio, pair))
    return out


@pytest.mark.parametrize("reuse", [0.15, 0.3, 0.5])
def test_reuse_is_fitted_from_the_pairs_and_the_launches_and_the_model_holds(reuse):
    model = build(_launches(reuse), DEPTHS, KIMI)
    assert model.state == "used", model.reason
    assert all(c.passed is not False for c in model.checks)
    fitted = model.as_dict()["routing_reuse"]
    low, high = fitted["ci95"]
    assert fitted["fitted"] is True and low <= reuse <= high, fitted
    assert abs(fitted["value"] - reuse) <= 0.1 and high - low < 0.4
    assert model.steps.slope == pytest.approx(0.6, rel=0.15)
    assert model.as_dict()["parameters"]["routing_reuse"] == fitted["value"]
    assert model.as_dict()["step_ratios"]["routing_reuse_fitted"] is True
    # the expert weights a verify step reads, as the summary says them: at the fitted reuse
    assert model.prediction(3)["expert_ratio"] == pytest.approx(
        experts.ratio(384, 8, 4, fitted["value"]))


def test_verify_ratios_alone_cannot_tell_reuse_and_keep_its_prior_range():
    model = build(_launches(0.3, q=0.7), DEPTHS, KIMI)
    assert model.state == "used", model.reason
    assert {p.kind for p in model.ratios.points} == {"verify"}
    fitted = model.reuse
    assert fitted["fitted"] is False and "prior range" in fitted["from"]
    assert fitted["ci95"] == [0.0, pytest.approx(REUSE_MAX)]
    assert fitted["value"] == KIMI.correlation  # not pinned to a fit it cannot make
    # the verify cost the launches measured is what the model predicts, whatever ρ
    for k in (1, 2, 3, 4):
        assert model.prediction(k)["verify_step_ratio"] == pytest.approx(
            1 + 0.6 * _union(k, 0.3), rel=0.05)


def test_reuse_range_widens_the_prediction_intervals():
    """The same fit without ρ's rows (the interval at the fitted ρ alone) is never wider, and
    narrower where the curve predicts (pairs: no depth has its own verify ratio)."""
    for launches in (_launches(0.3, sd=0.04), _launches(0.3, q=0.7)):
        model = build(launches, DEPTHS, KIMI)
        assert model.state == "used", model.reason
        narrow = replace(model, steps=replace(model.steps, region=()))
        for k in DEPTHS:
            wide, thin = model.prediction(k), narrow.prediction(k)
            assert wide["tok_s"] == thin["tok_s"]
            assert (wide["ci95_high"] - wide["ci95_low"]
                    >= thin["ci95_high"] - thin["ci95_low"] - 1e-9)
    model = build(_launches(0.3, sd=0.04), DEPTHS, KIMI)
    narrow = replace(model, steps=replace(model.steps, region=()))
    wide, thin = model.prediction(4), narrow.prediction(4)
    assert wide["step_source"] == "the fitted curve"
    assert wide["ci95_high"] - wide["ci95_low"] > 1.05 * (thin["ci95_high"] - thin["ci95_low"])


def test_without_ratios_the_launches_keep_the_prior_range_too():
    launches = [replace(l, ratio=None, pair=None) for l in _launches(0.3)]
    model = build(launches, DEPTHS, KIMI)
    assert model.ratios is None and not model.steps.pinned
    assert model.reuse["fitted"] is False and model.reuse["ci95"] == [0.0, REUSE_MAX]
    assert "launch step times" in model.reuse["from"]


def _said(sentence: str) -> tuple[int, float, float, str]:
    import re
    depth = int(re.search(r"at depth (\d+)", sentence).group(1))
    measured, allowed = (float(x) for x in re.findall(r"(\d+\.\d+)x", sentence)[:2])
    bound = "at most" if "at most" in sentence else "at least"
    assert bound in sentence and (measured > allowed if bound == "at most" else measured < allowed)
    return depth, measured, allowed, bound


def test_a_rejected_model_says_which_term_did_not_fit_and_what_the_launches_measured():
    model = build(_launches(0.0, q=0.7, sd=0.01, jump=(3, 1.3)), DEPTHS, KIMI, gate=True)
    assert model.state == "rejected", model.reason
    said = model.as_dict()["rejection"]
    assert said.startswith("The step-cost curve did not fit: launches measured ")
    assert "where the model allowed" in said
    depth, measured, _, _ = _said(said)  # the depth furthest off the curve, either side
    logs = {k: [math.log(l.counts.tokens_per_step / l.rate if k else 1.0 / l.rate)
                for l in model.launches if l.depth == k] for k in (0, depth)}
    mean = {k: sum(v) / len(v) for k, v in logs.items()}
    assert measured == pytest.approx(math.exp(mean[depth] - mean[0]), abs=0.006)
    assert f"the mean of {len(logs[depth])} launches over depth 0's" in said
    entry = model_entry(model, {"rule": "black-box"}, True)
    assert entry["rejection"] == said  # sweep.json's model.rejection
    # the ratios measured inside the launches, when they are what rejected it
    by_ratios = replace(model, rejected_by="step_ratios (gate)").rejection
    assert by_ratios.startswith("The step-cost curve did not fit: launches measured verify "
                                "steps ")
    depth, measured, _, _ = _said(by_ratios)
    ratio = next(p for p in model.ratios.points if p.depth == depth)
    assert measured == pytest.approx(math.exp(ratio.y), abs=0.006)
    assert build(_launches(0.3), DEPTHS, KIMI).as_dict()["rejection"] is None


def test_a_rejected_acceptance_term_is_said_in_its_own_words():
    launches = _launches(0.0)
    short = Counts(2, 1000.0, 1600.0, 700.0, (500.0, 200.0), 1700.0, "metrics", 1.0)
    launches = [replace(l, counts=short) if l.depth == 2 else l for l in launches]
    model = build(launches, DEPTHS, KIMI)
    assert model.state == "rejected" and model.rejected_by == "short_drafts"
    replaced = replace(model, rejected_by="short_drafts")
    assert replaced.rejection == ("The acceptance term (drafts as long as the depth) did not fit: "
                                  "drafts at depth 2 proposed 1.60 tokens on average where the "
                                  "model assumes 2.")
