"""The two-stream phase's measurement (sweep.evidence.pairtimes) and what the model reads from it
(sweep.model.ratiofit kind "pair", sweep.model.depth): the ratio of a step with both streams open to
the one-stream step recovered from chunk times with an interval that covers it, only the overlap of
a pair counted, every reason it is not measured, the slope it pins, the expert union over two
sequences, and verify ratios taking precedence where a launch measured one (docs/sweep.md)."""

from __future__ import annotations

import math
import random

import pytest

from sparktriage.roofline import experts
from sparktriage.sweep.evidence import pairtimes
from sparktriage.sweep.model import ratiofit
from sparktriage.sweep.evidence.counts import Counts
from sparktriage.sweep.model.depth import ModelLaunch, build
from sparktriage.sweep.model.ratiofit import RatioPoint
from sparktriage.sweep.model.stepfit import StepShape
from sparktriage.sweep.evidence.steptimes import FLOOR, StepRatio

UNION = StepShape("expert-union", 384, 8, 0.66, "kimi-k2")


def _stream(rng, step_s: float, steps: int, start: float = 1000.0, jitter: float = 0.1,
            first: float = 0.02) -> tuple[float, list[dict]]:
    t, chunks = first, [{"t": first, "text": "x", "ids": [1]}]
    for _ in range(steps):
        t += step_s * (1.0 + jitter * rng.gauss(0.0, 1.0))
        chunks.append({"t": t, "text": "ab", "ids": [2, 3]})
    return start, chunks


def _requests(rng, step_s: float, requests: int = 5, steps: int = 80, **kw) -> list[dict]:
    out = []
    for index in range(requests):
        start, chunks = _stream(rng, step_s, steps, **kw)
        out.append({"type": "request", "workload": "code", "warmup": False, "status": "ok",
                    "index": index, "sent_unix": start + 10 * index, "chunks": chunks})
    return out


def _pairs(rng, step_s: float, pairs: int = 2, steps: int = 80, lead: int = 0, alone: int = 0,
           alone_s: float = 0.010, jitter: float = 0.1) -> list[dict]:
    """Each pair's streams served by the same engine steps: stream 0 runs `lead` steps alone
    (at `alone_s`, a one-stream step) before stream 1 opens, then `steps` steps of both (at
    `step_s`), then `alone` more steps alone after stream 1 ended."""
    out = []
    for index in range(pairs):
        start = 2000.0 + 100 * index
        t, times = 0.02, [0.02]
        for _ in range(lead):
            t += alone_s
            times.append(t)
        joint = [t]
        for _ in range(steps):
            t += step_s * (1.0 + jitter * rng.gauss(0.0, 1.0))
            times.append(t)
            joint.append(t)
        for _ in range(alone):
            t += alone_s
            times.append(t)
        for stream, own in ((0, times), (1, joint)):
            base = own[0]
            out.append({"type": "request", "workload": "code", "warmup": False, "status": "ok",
                        "phase": "pair", "pair": index, "stream": stream,
                        "sent_unix": start + base,
                        "chunks": [{"t": x - base + 0.02, "text": "ab", "ids": [2, 3]} for x in own]})
    return out


def test_the_pair_ratio_is_recovered_and_its_interval_covers_it():
    rng = random.Random(5)
    truth = 1.45
    inside = 0
    for _ in range(200):
        ratio = pairtimes.measure(2, _requests(rng, 0.010), _pairs(rng, 0.010 * truth), "code")
        assert ratio.measured, ratio.reason
        assert ratio.verify_chunks == 160 and ratio.one_token_chunks == 400
        inside += abs(ratio.log_ratio - math.log(truth)) <= 1.96 * ratio.log_sd
    assert 0.93 <= inside / 200 <= 1.0  # the floor makes it a little conservative
    exact = pairtimes.measure(2, _requests(rng, 0.010, jitter=0.0),
                              _pairs(rng, 0.0145, jitter=0.0), "code")
    assert math.exp(exact.log_ratio) == pytest.approx(1.45, rel=1e-6)
    assert exact.log_sd == pytest.approx(FLOOR)
    doc = pairtimes.as_dict(exact)
    assert doc["ratio"] == pytest.approx(1.45) and doc["two_stream_step_ms"] == pytest.approx(14.5)
    assert doc["one_stream_step_ms"] == pytest.approx(10.0) and doc["reason"] is None


def test_only_steps_with_both_streams_open_count():
    rng = random.Random(6)
    # stream 0 runs 20 steps alone before stream 1 opens and 60 after it ended, at the
    # one-stream step: counted, those would pull the ratio toward 1
    pairs = _pairs(rng, 0.015, lead=20, alone=60, jitter=0.0)
    ratio = pairtimes.measure(0, _requests(rng, 0.010, jitter=0.0), pairs, "code")
    assert math.exp(ratio.log_ratio) == pytest.approx(1.5, rel=1e-6)
    assert ratio.verify_chunks == 2 * 80


@pytest.mark.parametrize("change, words", [
    (lambda req, pairs: (req, [p for p in pairs if p["stream"] == 0]), "too few steps"),
    (lambda req, pairs: (req[:0], pairs), "no exact per-chunk token count"),
    (lambda req, pairs: (req, [{**p, "chunks": [{**c, "t": c["t"] // 0.05 * 0.05} for c in p["chunks"]]}
                               for p in pairs]), "coalesced"),
    (lambda req, pairs: ([{**r, "chunks": [{"t": c["t"], "text": c["text"]} for c in r["chunks"]]}
                          for r in req], pairs), "no exact per-chunk token count"),
])
def test_every_reason_it_is_not_measured(change, words):
    rng = random.Random(7)
    requests, pairs = change(_requests(rng, 0.010), _pairs(rng, 0.014))
    ratio = pairtimes.measure(1, requests, pairs, "code")
    assert not ratio.measured and words in ratio.reason, ratio.reason


def test_a_drafter_that_leaves_plain_steps_is_left_to_its_verify_ratio(tmp_path):
    (tmp_path / "pairs.jsonl").write_text("")
    (tmp_path / "requests.jsonl").write_text("")
    ngram = {"source": "metrics", "drafts": 60.0, "draft_tokens": 120.0, "accepted_tokens": 40.0,
             "per_position": [0.5, 0.17], "accepted_per_position": [30.0, 10.0],
             "generation_tokens": 140.0}
    ratio = pairtimes.from_launch(tmp_path, 2, "code", ngram)
    assert not ratio.measured and "verify ratio measures this launch" in ratio.reason
    assert "60%" in ratio.reason  # 60 drafts over 140 − 40 = 100 steps
    assert pairtimes.from_launch(tmp_path / "none", 2, "code", ngram) is None  # no phase ran


def test_two_sequences_read_the_union_of_independent_routings():
    # one token each of two sequences: 8 + 8 − 64/384 experts; the curve's g for two streams
    assert experts.union(384, 8, 1, 0.66, 2) == pytest.approx(384 * (1 - (1 - 8 / 384) ** 2))
    assert experts.union(384, 8, 3, 0.66, 2) == pytest.approx(experts.union(384, 8, 1 + 2 * 2 * 0.34 + 1, 0.0))
    assert UNION.g(0, 2) == pytest.approx(experts.ratio(384, 8, 1, 0.66, 2) - 1) == pytest.approx(0.979, abs=1e-3)
    assert StepShape().g(3, 2) == 7.0 and StepShape().g(3) == 3.0


def test_pair_ratios_pin_the_slope():
    slope = 0.4
    points = [RatioPoint(f"L{k}", k, math.log((1 + slope * UNION.g(k, 2)) / (1 + slope * UNION.g(k))),
                         0.012, "pair") for k in (0, 4, 2)]
    fitted = ratiofit.fit(points, UNION)
    assert fitted.slope == pytest.approx(slope, rel=1e-3)
    assert fitted.low < slope < fitted.high and fitted.high - fitted.low < 0.05
    assert fitted.as_dict()["ratios"][0]["kind"] == "pair"
    # a pair ratio at depth 0 counts (it moves with the slope); a verify ratio there would not
    assert [p.depth for p in fitted.points] == [0, 4, 2]
    assert ratiofit.fit([RatioPoint("L0", 0, 0.0, 0.01)], UNION) is None


def _counts(depth: int) -> Counts:
    per = [0.6, 0.4, 0.3, 0.2][:depth]
    drafts = 1000.0
    accepted = sum(per) * drafts
    return Counts(depth, drafts, drafts * depth, accepted, tuple(x * drafts for x in per),
                  drafts + accepted, "metrics", 1.0)


def _ratio(depth: int, value: float) -> StepRatio:
    return StepRatio(depth, math.log(value), 0.012)


def test_verify_ratios_take_precedence_over_pair_ratios():
    slope, t0 = 0.4, 0.02
    def launch(label, depth, pair=True, verify=None):
        c = _counts(depth) if depth else None
        step = t0 * (1 + slope * UNION.g(depth))
        tps = 1.0 if not depth else c.tokens_per_step
        pr = _ratio(depth, (1 + slope * UNION.g(depth, 2)) / (1 + slope * UNION.g(depth))) if pair else None
        return ModelLaunch(label, depth, tps / step, c, verify, pr)
    launches = [launch("L1", 0), launch("L2", 4), launch("L3", 2), launch("L4", 0)]
    model = build(launches, (0, 1, 2, 3, 4), UNION)
    assert {p.kind for p in model.ratios.points} == {"pair"} and len(model.ratios.points) == 4
    assert model.ratio_covered and model.steps.pinned
    assert model.steps.slope == pytest.approx(slope, rel=0.01)
    assert model.as_dict()["inputs"]["step_ratios"].startswith("two-stream")
    with_verify = launches[:2] + [launch("L3", 2, verify=_ratio(2, 1 + slope * UNION.g(2)))] + launches[3:]
    model = build(with_verify, (0, 1, 2, 3, 4), UNION)
    assert [(p.kind, p.depth) for p in model.ratios.points] == [("verify", 2)]


def test_pair_ratios_stand_in_for_the_launch_guards_only_while_the_launches_fit_the_curve():
    """A cost keyed on each sequence's draft length (here 1.5x from depth 3) is not in the pair
    ratios; the launches' spread around the pinned curve then exceeds PAIR_SPREAD_MAX and the
    launch-level guards stay (sweep.policy.model_rule.surprises)."""
    from sparktriage.sweep.model.depth import PAIR_SPREAD_MAX
    slope, t0 = 0.4, 0.02

    def launch(label, depth, factor=1.0, noise=0.0):
        c = _counts(depth) if depth else None
        step = t0 * (1 + slope * UNION.g(depth)) * factor * (1 + noise)
        tps = 1.0 if not depth else c.tokens_per_step
        pr = _ratio(depth, (1 + slope * UNION.g(depth, 2)) / (1 + slope * UNION.g(depth)))
        return ModelLaunch(label, depth, tps / step, c, None, pr)
    order = [(0, 0.03), (4, -0.02), (2, 0.01), (1, -0.03), (3, 0.02), (0, -0.01)]
    smooth = build([launch(f"L{i}", d, 1.0, n) for i, (d, n) in enumerate(order)], (0, 1, 2, 3, 4),
                   UNION)
    assert smooth.steps.sigma < PAIR_SPREAD_MAX and smooth.ratio_covered
    jumped = build([launch(f"L{i}", d, 1.5 if d >= 3 else 1.0, n) for i, (d, n) in enumerate(order)],
                   (0, 1, 2, 3, 4), UNION)
    assert {p.kind for p in jumped.ratios.points} == {"pair"}
    assert jumped.steps.sigma > PAIR_SPREAD_MAX and not jumped.ratio_covered
