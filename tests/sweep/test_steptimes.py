"""Step times inside one launch (sweep.evidence.steptimes) and the slope they give
(sweep.model.ratiofit): the verify-to-plain ratio recovered from chunk gaps with an interval that
covers it, every reason it is not measured, the slope's set, and the `step_ratios` check passing a
smooth curve and rejecting a verify-step jump and launches that disagree with the slope
(docs/sweep.md)."""

from __future__ import annotations

import json
import math
import random

import pytest
from scipy import stats

from sparktriage.sweep.model import ratiofit
from sparktriage.sweep.evidence import steptimes
from sparktriage.sweep.model.ratiofit import RatioPoint
from sparktriage.sweep.model.stepfit import StepPoint, StepShape, fit

UNION = StepShape("expert-union", 384, 8, 0.0, "kimi-k2")


def _launch(rng: random.Random, depth: int, q: float, a1: float, plain_s: float, verify_s: float,
            requests: int = 6, steps: int = 120, jitter: float = 0.1, workload: str = "chat"):
    """Raw records of one launch (one chunk per step) and its counted q and a₁."""
    records, drafted, accepted_1, total = [], 0, 0, 0
    for index in range(requests):
        t, chunks = 0.02, [{"t": 0.02, "text": "x", "ids": [1]}]
        for _ in range(steps):
            drafts = rng.random() < q
            hit = drafts and rng.random() < a1
            drafted += drafts
            accepted_1 += hit
            total += 1
            t += (verify_s if drafts else plain_s) * (1.0 + jitter * rng.gauss(0.0, 1.0))
            chunks.append({"t": t, "text": "ab" if hit else "a", "ids": [2, 3] if hit else [2]})
        records.append({"type": "request", "workload": workload, "warmup": False, "status": "ok",
                        "index": index, "chunks": chunks})
    return records, drafted / total, accepted_1 / drafted


def test_the_ratio_is_recovered_from_chunk_gaps_and_its_interval_covers_it():
    rng = random.Random(3)
    truth = 2.4
    inside = 0
    for _ in range(200):
        records, q, a1 = _launch(rng, 3, 0.6, 0.7, 0.010, 0.010 * truth)
        ratio = steptimes.measure(3, records, "chat", q, a1)
        assert ratio.measured, ratio.reason
        assert ratio.verify_chunks > 200 and ratio.one_token_chunks > 200
        inside += abs(ratio.log_ratio - math.log(truth)) <= 1.96 * ratio.log_sd
    assert 0.9 <= inside / 200 <= 1.0  # the floor makes it a little conservative
    records, q, a1 = _launch(rng, 3, 0.6, 0.7, 0.010, 0.024, jitter=0.0)
    exact = steptimes.measure(3, records, "chat", q, a1)
    assert math.exp(exact.log_ratio) == pytest.approx(2.4, rel=0.01)
    assert exact.plain_s == pytest.approx(0.010, rel=0.01) and exact.verify_s == pytest.approx(0.024)
    # no jitter: what is left is the floor and the one-token chunks' mix of plain and empty
    # verify steps, whose composition the counts give only on average
    assert steptimes.FLOOR < exact.log_sd < 0.06


def test_only_measured_ok_requests_of_the_deciding_workload_count():
    rng = random.Random(4)
    records, q, a1 = _launch(rng, 2, 0.5, 0.6, 0.01, 0.02, jitter=0.0)
    noise = [dict(r, workload="prose") for r in records] + [dict(r, warmup=True) for r in records]
    noise += [dict(r, status="error") for r in records]
    alone = steptimes.measure(2, records, "chat", q, a1)
    mixed = steptimes.measure(2, records + noise, "chat", q, a1)
    assert mixed.log_ratio == pytest.approx(alone.log_ratio)
    assert mixed.verify_chunks == alone.verify_chunks


def test_every_reason_the_ratio_is_not_measured():
    rng = random.Random(5)
    records, q, a1 = _launch(rng, 2, 1.0, 0.6, 0.01, 0.02)
    found = steptimes.measure(2, records, "chat", q, a1)
    assert not found.measured and "too few plain steps" in found.reason  # MTP, EAGLE: always drafts
    records, q, a1 = _launch(rng, 2, 0.5, 0.6, 0.01, 0.02, requests=1, steps=40)
    assert "too few steps" in steptimes.measure(2, records, "chat", q, a1).reason
    records, q, a1 = _launch(rng, 2, 0.5, 0.6, 0.01, 0.02)
    for r in records:  # every other chunk read together with the one before it
        for i in range(2, len(r["chunks"]), 2):
            r["chunks"][i]["t"] = r["chunks"][i - 1]["t"]
    assert "coalesced" in steptimes.measure(2, records, "chat", q, a1).reason
    records, q, a1 = _launch(rng, 2, 0.5, 0.6, 0.01, 0.02)
    off = steptimes.measure(2, records, "chat", q, a1 / 2)  # counts from another window
    assert not off.measured and "not one per step" in off.reason
    assert steptimes.measure(2, [], "chat", 0.5, 0.5).reason == "no gaps before chunks of both kinds"
    for r in records:  # text only: a chunk's tokens are not known
        for c in r["chunks"]:
            c.pop("ids")
    assert "no exact per-chunk token count" in steptimes.measure(2, records, "chat", q, a1).reason


def test_a_launch_folder_gives_its_ratio_and_the_record_round_trips(tmp_path):
    rng = random.Random(6)
    records, q, a1 = _launch(rng, 2, 0.5, 0.6, 0.01, 0.02, jitter=0.05)
    (tmp_path / "requests.jsonl").write_text("".join(json.dumps(r) + "\n" for r in records))
    steps = sum(len(r["chunks"]) - 1 for r in records)
    drafts = round(q * steps)
    acceptance = {"drafts": drafts, "draft_tokens": 2 * drafts, "accepted_tokens": round(a1 * drafts),
                  "accepted_per_position": [round(a1 * drafts), 0],
                  "generation_tokens": steps + round(a1 * drafts), "source": "metrics"}
    found = steptimes.from_launch(tmp_path, 2, "chat", acceptance)
    assert found.measured and math.exp(found.log_ratio) == pytest.approx(2.0, rel=0.05)
    again = steptimes.from_dict(json.loads(json.dumps(found.as_dict())))
    assert again.log_ratio == found.log_ratio and again.log_sd == pytest.approx(found.log_sd)
    assert steptimes.from_launch(tmp_path, 0, "chat", None) is None
    no_g = steptimes.from_launch(tmp_path, 2, "chat", {**acceptance, "generation_tokens": None})
    assert "share of drafting steps is not known" in no_g.reason
    missing = steptimes.from_launch(tmp_path / "gone", 2, "chat", acceptance)
    assert not missing.measured and "requests.jsonl" in missing.reason
    assert steptimes.from_dict({"depth": 2, "log_ratio": None, "log_sd": None,
                                "reason": "x"}).measured is False
    assert steptimes.from_dict("junk") is None


def _points(slope: float, depths=(1, 2, 3, 4), sd=0.02, jump=None, rng=None):
    out = []
    for i, k in enumerate(depths):
        y = math.log1p(slope * UNION.g(k)) + (rng.gauss(0.0, sd) if rng else 0.0)
        if jump and k >= jump[0]:
            y += math.log(jump[1])
        out.append(RatioPoint(f"L{i}", k, y, sd))
    return out


def test_the_ratios_slope_set_covers_the_truth():
    rng = random.Random(7)
    covered = 0
    for _ in range(300):
        found = ratiofit.fit(_points(0.4, rng=rng), UNION)
        covered += found.low <= 0.4 <= found.high
    assert 0.9 <= covered / 300 <= 0.99
    found = ratiofit.fit(_points(0.4), UNION)
    assert found.slope == pytest.approx(0.4, rel=1e-3) and found.chi2 == pytest.approx(0, abs=1e-6)
    assert ratiofit.fit([], UNION) is None


def test_chi2_tail_matches_scipy():
    for x, k in [(3.841459, 1), (0.5, 1), (7.814728, 3), (30.0, 3), (18.307, 10), (2.0, 6), (60, 4)]:
        assert ratiofit.chi2_sf(x, k) == pytest.approx(stats.chi2.sf(x, k), rel=1e-6, abs=1e-12)


def _launch_steps(slope: float, overhead: float = 1.0, n=2, rng=None, shares=None):
    pts = []
    for k in (0, 1, 2, 3, 4):
        for j in range(n):
            step = 0.01 * (1 + slope * UNION.g(k)) * (overhead if k else 1.0)
            step *= 1.0 + (rng.gauss(0.0, 0.03) if rng else 0.0)
            pts.append(StepPoint(f"L{k}{j}", k, step))
    return fit(pts, UNION)


def test_the_check_passes_a_smooth_curve_and_rejects_a_jump_or_disagreeing_launches():
    rng = random.Random(8)
    smooth = ratiofit.check(ratiofit.fit(_points(0.4, rng=rng), UNION), _launch_steps(0.4, rng=rng), 0.01)
    assert smooth.passed is True and smooth.figures["p_value"] > 0.01
    jumped = ratiofit.check(ratiofit.fit(_points(0.4, jump=(3, 1.3)), UNION), None, 0.01)
    assert jumped.passed is False and "do not follow one step-cost curve" in jumped.reason
    assert "furthest: depth" in jumped.reason and jumped.figures["p_value"] < 1e-6
    # every speculative launch 25% slower than its own verify-to-plain ratios say
    apart = ratiofit.check(ratiofit.fit(_points(0.4), UNION), _launch_steps(0.4, 1.25, rng=rng), 0.01)
    assert apart.passed is False and "disagree with the slope measured inside them" in apart.reason


def _sweep_with(ratios: bool, jump: float = 1.0, seed: int = 11):
    """The sweep's rule (sweep.policy.rule) on launches of an ngram deployment (q = 0.7, Kimi K2
    union slope 0.5 per verify step, per-draft rates 0.9/0.8/0.3/0.1: depth 2 best by 7%),
    each launch 5% spread, its ratio measured with a 2% error when `ratios`; `jump` multiplies the verify
    step from depth 3 on."""
    from sparktriage.sweep.policy import rule
    from sparktriage.sweep.evidence.counts import Counts
    from sparktriage.sweep.model.depth import ModelLaunch

    rng = random.Random(seed)
    q, rates, depths = 0.7, (0.9, 0.8, 0.3, 0.1), [0, 1, 2, 3, 4]
    verify = {k: (1 + 0.5 * UNION.g(k)) * (jump if k >= 3 else 1.0) for k in depths}

    def counts(k):
        per = tuple(1000.0 * r for r in rates[:k])
        return Counts(k, 1000.0, 1000.0 * k, sum(per), per, 1000.0 / q + sum(per), "metrics", 1.0)

    history, means, model = [], {}, None
    while len(history) < 30:
        where = rule.Situation(history, means, depths, UNION)
        k = rule.next_depth(where, model if history else None)
        if k is None:
            break
        tps = 1 + q * sum(rates[:k])
        rate = 30.0 * tps / ((1 - q) + q * verify[k] if k else 1.0) * (1 + rng.gauss(0, 0.05))
        ratio = (steptimes.StepRatio(k, math.log(verify[k]) + rng.gauss(0, 0.02), 0.02)
                 if ratios and k else None)
        history.append(ModelLaunch(f"L{len(history) + 1:03d}", k, rate, counts(k) if k else None, ratio))
        means.setdefault(k, []).append(rate)
        model = rule.advance(model, history, rule.Situation(history, means, depths, UNION))
    truth = {k: (1 + q * sum(rates[:k])) / ((1 - q) + q * verify[k] if k else 1.0) for k in depths}
    return rule.decide(rule.Situation(history, means, depths, UNION), True, model), model, len(history), truth


def test_with_ratios_the_rule_settles_sooner_and_a_verify_step_jump_rejects_the_model():
    spent = {True: [], False: []}
    for seed in range(12):
        for ratios in (True, False):
            decision, model, launches, truth = _sweep_with(ratios, seed=seed)
            if decision.state != "insufficient":
                assert truth[decision.depth] >= 0.98 * max(truth.values()), (seed, ratios)
            if ratios and model.state == "used":
                assert model.steps.pinned and model.ratio_covered
                assert model.steps.slope_low <= 0.5 <= model.steps.slope_high
            spent[ratios].append(launches)
    assert sum(spent[True]) < 0.85 * sum(spent[False]), spent
    rejected = 0
    for seed in range(6):
        decision, model, _, truth = _sweep_with(True, jump=1.3, seed=seed)
        rejected += model.rejected_by is not None and model.rejected_by.startswith("step_ratios")
        if decision.state != "insufficient":
            assert truth[decision.depth] >= 0.98 * max(truth.values()), seed
    assert rejected >= 5
