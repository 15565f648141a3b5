"""Issue 37's held-out stand-in: a mixture-of-experts target whose engine verifies every running
sequence in one step (sim `decode.step.batched`) and whose consecutive tokens of a sequence reuse
30% of their routed experts (`routing_reuse`), swept end to end through the real launch path:
the decision is the truth's best depth, and every per-depth figure of sweep.json (the launches'
mean where measured, the depth model's prediction everywhere) is within 10% of the truth. The
stand-in replays a drawn acceptance pattern (512 steps), so its truth at a measured depth is the
scripted step cost with the acceptance length its counters gave (1.8 where 1.9 is the scripted
expectation, at seed 13), as the benchmark's truth is each prompt's realized rates."""

from __future__ import annotations

import pytest

from sparktriage.documents.sweep import SweepJson
from sparktriage.roofline import experts
from sparktriage.store.typed import check
from sparktriage.sweep.running.engine import plan_sweep, run_sweep

from simkit import sim_deployment

pytestmark = [pytest.mark.slow]
ACCEPT = (0.9, 0.75, 0.35, 0.2)
ROUTED = 0.5
REUSE = 0.3
RATE = 50.0  # a plain step of 20 ms


def _cost(k: int) -> float:
    """A verify step at depth k over a plain step: the routed part reads the union of the experts
    of 1 + k tokens that reuse 30% of their predecessor's."""
    unit = experts.union(384, 8, 1.0)
    return 1 + ROUTED * (experts.union(384, 8, 1 + k * (1 - REUSE)) / unit - 1)


def _truth(lengths: dict[int, float] | None = None) -> dict[int, float]:
    """One stream's rate at depth k: tokens per step (the realized acceptance length where given,
    else the scripted expectation) over the step's cost."""
    lengths = lengths or {}
    return {k: RATE * (lengths.get(k) or (1 + sum(ACCEPT[:k]))) / _cost(k)
            for k in range(len(ACCEPT) + 1)}


def test_batched_step_with_routing_reuse_decision_and_rates_within_ten_percent(tmp_path):
    scenario = {"seed": 13, "startup_s": {}, "stats_interval_s": 1.0,
                "decode": {"ttft_s": 0.005, "rate_tok_s": RATE, "acceptance": list(ACCEPT),
                           "spread_cv": 0.03, "pattern_length": 512,
                           "step": {"routed_share": ROUTED, "experts": 384, "experts_per_token": 8,
                                    "routing_reuse": REUSE, "batched": True}}}
    deployment = sim_deployment(tmp_path, scenario,
                                roofline={"hardware": "gb10", "model": "kimi-k2"},
                                speculative={"method": "ngram", "num_speculative_tokens": 2})
    plan = plan_sweep(deployment, depths=(0, 1, 2, 3, 4), max_launches=12, requests=5,
                      max_tokens=100)
    doc = run_sweep(plan, tmp_path / "run").document
    check(SweepJson, doc)
    truth = _truth({d["depth"]: d["acceptance_length"] for d in doc["depths"]
                    if d["depth"] and d["acceptance_length"]})
    best = max(truth, key=truth.get)
    assert all(abs(truth[k] / _truth()[k] - 1) < 0.1 for k in truth)  # the pattern is near the script
    decision = doc["decision"]
    good = {k for k, v in truth.items() if v >= (1 - plan.margin) * truth[best]}
    assert decision["state"] in ("best", "tied") and decision["depth"] in good, (decision, truth)
    for entry in doc["depths"]:
        if entry["mean_tok_s"] is not None:
            assert entry["mean_tok_s"] == pytest.approx(truth[entry["depth"]], rel=0.10), \
                (entry["depth"], entry["mean_tok_s"], truth)
    model = doc["model"]
    if model["state"] == "used":
        for p in model["predicted"]:
            assert p["tok_s"] == pytest.approx(truth[p["depth"]], rel=0.10), (p, truth)
