"""The depth model in the sweep engine, on the simulator as `vllm serve` with a step cost
(sim/speculation.py): where the model holds it decides with the model and names the scripted
best depth, its acceptance lengths and slope match the scripted ones; a kernel-path jump gets the
model rejected and the black-box rule decides with every launch; short ngram drafts reject it
right after the deepest launch; ngram drafts at 60% of steps give each launch its verify-to-plain
step time ratio, and the slope comes from those; a drafter that drafts at every step gives each
launch its two-stream ratio instead (docs/sweep.md "The depth model")."""

from __future__ import annotations

import math
from pathlib import Path

import pytest

from sparktriage.documents.sweep import SweepDocument
from sparktriage.roofline import experts
from sparktriage.store.typed import check
from sparktriage.sweep.running.engine import plan_sweep, run_sweep

from simkit import sim_deployment

pytestmark = [pytest.mark.slow]
ACCEPT = (0.95, 0.85, 0.2)
ROUTED = 0.4


def _deployment(tmp: Path, scenario: dict) -> Path:
    return sim_deployment(tmp, scenario, roofline={"hardware": "gb10", "model": "kimi-k2"},
                          speculative={"method": "ngram", "num_speculative_tokens": 2})


def _scenario(**step) -> dict:
    return {"seed": 5, "startup_s": {}, "stats_interval_s": 1.0,
            "decode": {"ttft_s": 0.005, "rate_tok_s": 300.0, "acceptance": list(ACCEPT),
                       "spread_cv": 0.03, "pattern_length": 512,
                       "step": {"routed_share": ROUTED, "experts": 384, "experts_per_token": 8,
                                **step.pop("cost", {})},
                       **step}}


def _truth(jump: tuple[int, float] | None = None) -> dict[int, float]:
    out = {}
    for k in range(4):
        h = 1 + ROUTED * (experts.ratio(384, 8, k + 1) - 1)
        if jump and k >= jump[0]:
            h *= jump[1]
        out[k] = 300.0 * (1 + sum(ACCEPT[:k])) / h
    return out


def _sweep(tmp: Path, scenario: dict, max_launches: int) -> dict:
    plan = plan_sweep(_deployment(tmp, scenario), depths=(0, 1, 2, 3), max_launches=max_launches,
                      requests=5, max_tokens=120)
    doc = run_sweep(plan, tmp / "run").document
    check(SweepDocument, doc)  # the typed document, `model` included
    return doc


def _why(doc: dict) -> str:
    """What a failed assertion on the model's state prints: its verdict, the check that decided
    it and every launch's rates (a host hiccup in one launch shows there)."""
    model = doc["model"]
    checks = {c["name"]: (c["passed"], c.get("figures")) for c in model.get("checks") or []}
    launches = [(l["label"], l["depth"], l.get("status"), l.get("delivered_tok_s"),
                 (l.get("acceptance") or {}).get("source")) for l in doc["launches"]]
    return (f"{model['state']} by {model.get('rejected_by')} after {model.get('rejected_after')}: "
            f"{model['reason']}; checks {checks}; launches {launches}")


def test_where_the_model_holds_it_decides_with_fewer_launches_and_matches_the_script(tmp_path):
    truth = _truth()
    best = max(truth, key=truth.get)
    assert best == 2 and truth[2] > 1.08 * max(v for k, v in truth.items() if k != 2)
    # the simulator draws each launch's spread from the scenario's seed, so this test's launch
    # rates are nearly the same in every run: seed 5's sat at the edge of the jump test's first
    # look (F on 1 and 1 df, p 0.0027 against its 0.0061) and timing noise decided the model's
    # state; seed 6's do not (a model rejected in 0 of 40 replays of its rates with 2% noise)
    doc = _sweep(tmp_path, {**_scenario(), "seed": 6}, max_launches=12)
    model, decision = doc["model"], doc["decision"]
    assert model["state"] == "used" and model["decided"] is True, _why(doc)
    assert decision["rule"] == "model" and decision["state"] in ("best", "tied")
    assert decision["depth"] == best
    assert [l["depth"] for l in doc["launches"][:2]] == [0, 3]  # depth 0 and the deepest first
    assert doc["launches_used"] < 12
    predicted = {p["depth"]: p for p in model["predicted"]}
    one = {l["depth"]: l["acceptance"]["drafts"] / l["acceptance"]["repeats"]
           for l in doc["launches"] if l["depth"] and l.get("acceptance")}
    for k in range(1, 4):
        # every launch replays one greedy request's steps: AL(k) is that request's draw of the
        # scripted chain, within 3 binomial sd of its drafts of the scripted 1 + Σ a_i
        s = ACCEPT[:k]
        var = sum(x * (1 - x) for x in s) + 2 * sum(s[j] * (1 - s[i]) for i in range(k) for j in range(i + 1, k))
        sd = (var / one[k]) ** 0.5
        assert abs(predicted[k]["acceptance_length"] - (1 + sum(s))) <= 3 * sd, (k, predicted[k], sd)
        low, high = predicted[k]["acceptance_ci95"]
        assert low <= predicted[k]["acceptance_length"] <= high
        assert predicted[k]["tok_s"] == pytest.approx(truth[k], rel=0.1)
    low, high = model["parameters"]["slope_ci95"]
    assert low - 0.05 <= ROUTED <= high + 0.05  # the fitted slope is the scripted routed share
    assert model["fit_test"]["passed"] is True
    # every launch's two-stream phase: a step of both sequences over one's, the union of two
    # independent routings (sim/speculation.py), measured inside the launch; the slope comes
    # from those (this drafter drafts at every step: no verify ratio)
    pairs = 0
    for launch in doc["launches"]:
        k, pair = launch["depth"], launch["pair_ratio"]
        assert launch["step_ratio"] is None or not launch["step_ratio"]["measured"]
        if not pair["measured"]:  # a starved client read several steps at once
            assert "steps coalesced" in pair["reason"], pair
            continue
        pairs += 1
        scripted = ((1 + ROUTED * (experts.ratio(384, 8, k + 1, 0.0, 2) - 1))
                    / (1 + ROUTED * (experts.ratio(384, 8, k + 1) - 1)))
        assert abs(math.log(pair["ratio"] / scripted)) <= 3 * pair["log_sd"] + 0.02, (k, pair, scripted)
    assert pairs >= 3 and model["parameters"]["slope_from"].startswith("step times inside")
    assert {r["kind"] for r in model["step_ratios"]["ratios"]} == {"pair"}
    assert "verify step" in model["summary"] and "expert weights" in model["summary"]
    assert all(d["gate"]["source"] == "greedy requests" for d in doc["depths"])


def test_with_plain_steps_inside_launches_the_slope_is_measured_there(tmp_path):
    """ngram that finds a match at 60% of steps: every speculative launch also runs plain steps,
    so its verify-to-plain step time ratio is measured from its chunk gaps
    (sweep.evidence.steptimes) and the slope comes from those ratios, free of the launch spread."""
    q = 0.6
    h = {k: 1 + ROUTED * (experts.ratio(384, 8, k + 1) - 1) for k in range(4)}
    truth = {k: (1 + q * sum(ACCEPT[:k])) / ((1 - q) + q * h[k]) if k else 1.0 for k in range(4)}
    assert max(truth, key=truth.get) == 2 and truth[2] > 1.05 * max(truth[1], truth[3])
    scenario = _scenario(drafts={"match": q})
    scenario["decode"]["rate_tok_s"] = 60.0  # 17 ms plain steps: gaps well above timer noise
    doc = _sweep(tmp_path, scenario, max_launches=12)
    model, decision = doc["model"], doc["decision"]
    assert model["state"] == "used" and model["decided"] is True, _why(doc)
    assert decision["rule"] == "model" and decision["depth"] == 2
    assert "inside launches" in model["parameters"]["slope_from"]
    spec = [l for l in doc["launches"] if l["depth"]]
    measured = []
    for launch in spec:
        ratio = launch["step_ratio"]
        if not ratio["measured"]:  # a starved client read several steps at once (a fresh-clone
            # run of stop 29): the launch says so and measures no ratio; no other reason may come
            assert "steps coalesced" in ratio["reason"], ratio
            continue
        measured.append(launch)
        k = launch["depth"]
        # the scripted verify step over a plain step; the server's timer adds a little to both
        assert abs(math.log(ratio["ratio"]) - math.log(h[k])) <= 3 * ratio["log_sd"] + 0.04, (k, ratio, h[k])
    assert len(model["step_ratios"]["ratios"]) == len(measured) >= 2
    low, high = model["parameters"]["slope_ci95"]
    assert low - 0.03 <= ROUTED <= high + 0.03
    assert high - low < 0.25  # a few ratios pin the slope
    steps = {c["name"]: c for c in model["checks"]}["step_ratios"]
    assert steps["passed"] is True


def test_a_kernel_path_jump_rejects_the_model_and_the_black_box_rule_decides(tmp_path):
    truth = _truth(jump=(2, 1.7))
    doc = _sweep(tmp_path, _scenario(cost={"jump": {"depth": 2, "factor": 1.7}}), max_launches=16)
    model, decision = doc["model"], doc["decision"]
    assert model["state"] == "rejected" and model["rejected_after"] is not None
    assert model["decided"] is False and decision["rule"] == "black-box"
    assert "rejected" in model["summary"]
    failed = [c["name"] for c in model["checks"] if c["passed"] is False]
    assert set(failed) & {"lack_of_fit", "jump", "monotone", "contender"} or "jump" in model["reason"]
    if decision["state"] != "insufficient":
        assert truth[decision["depth"]] >= 0.98 * max(truth.values())


def test_short_ngram_drafts_reject_the_model_after_the_deepest_launch(tmp_path):
    doc = _sweep(tmp_path, _scenario(drafts={"short_share": 0.5, "short_length": 1}), max_launches=4)
    model = doc["model"]
    assert model["state"] == "rejected" and model["rejected_after"] == "L002"
    assert "drafts come short" in model["reason"]
    lengths = {c["name"]: c for c in model["checks"]}["short_drafts"]["figures"]["mean_draft_length"]
    # half the drafts propose one token (drawn: the share of 42 drafts per request, sd 0.08)
    assert lengths["3"] == pytest.approx(0.5 * 3 + 0.5 * 1, abs=0.35)
    assert doc["decision"]["rule"] == "black-box"
