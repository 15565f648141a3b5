"""ngram's no-match steps in the depth model: a step where the lookup found no match drafts
nothing and costs a plain step. The share q of steps that drafted comes from the generated-token
count, else from the stream's chunks (S = A / (tokens per chunk − 1)); without either a lookup
drafter's launches are not priced and the model says why (sweep.evidence.counts,
sweep.evidence.acceptance, sweep.model.depth; docs/sweep.md "The depth model")."""

from __future__ import annotations

import json
import math
import shutil
from pathlib import Path

import pytest

from sparktriage.roofline import experts
from sparktriage.store.rundir import LaunchDir
from sparktriage.sweep.evidence import acceptance, launch as evidence
from sparktriage.sweep.evidence.counts import Counts, from_acceptance, pooled
from sparktriage.sweep.model.depth import UNKNOWN_SHARE, ModelLaunch, build
from sparktriage.sweep.plan import SweepPlan
from sparktriage.sweep.running.rebuild import rebuild
from sparktriage.sweep.model.stepfit import StepShape

KIMI = StepShape("expert-union", 384, 8, 0.0, "kimi-k2")
LOG = {"spec_decode": {"windows_detail": [
    # the log line of vLLM 0.32: mean acceptance length 1.75, 450 accepted, 1800 drafted at k = 3
    {"drafts_estimated": 600.0, "drafted": 1800, "accepted": 450, "per_position": [0.45, 0.2, 0.1]}]}}


def _bench(tokens: int, chunks: int, measured: int = 4) -> dict:
    rows = [{"warmup": True, "status": "ok", "chunks": chunks, "output_tokens": tokens}]
    rows += [{"warmup": False, "status": "ok", "chunks": chunks, "output_tokens": tokens}] * measured
    return {"workloads": [{"name": "code", "requests": rows}]}


def test_without_a_generated_token_count_the_steps_come_from_the_streams_chunks(tmp_path):
    # 145 tokens in 100 chunks: 1.45 tokens per step, so S = 450 / 0.45 = 1000 steps, of which
    # the log's 600 drafted: 40% of steps found no match
    found = acceptance.acceptance(LaunchDir(tmp_path), LOG, _bench(145, 100), "code", {"code"},
                                  True, "ngram")
    assert found["source"] == "log" and found["generation_tokens"] is None
    assert found["check"] == {"state": "consistent", "tokens_per_chunk": 1.45,
                              "reason": "1.45 tokens per chunk against an acceptance length of 1.75"}
    assert found["chunk_steps"] == 1000.0 and found["share_known"] is True
    c = from_acceptance(3, found)
    assert c.steps == 1000.0 and c.drafted_share == 0.6 and c.tokens_per_step == 1.45
    assert c.steps_from == "stream chunks" and c.rate(1) == 0.45 and c.repeats == 5
    assert c.as_dict()["drafted_share"] == 0.6 and c.as_dict()["steps_from"] == "stream chunks"


def test_a_lookup_drafter_without_steps_has_an_unknown_share_and_an_every_step_drafter_has_one():
    found = acceptance.from_log(LOG)
    coalesced = acceptance.cross_check(found, 2.1)  # more tokens per chunk than per step: proxy
    unchecked = acceptance.cross_check(found, None)
    for check in (coalesced, unchecked):
        assert acceptance.chunk_steps(found, check) is None
        assert acceptance.steps_without_g(found, check, "ngram") == {"chunk_steps": None,
                                                                     "share_known": False}
        assert acceptance.steps_without_g(found, check, "suffix")["share_known"] is False
        assert acceptance.steps_without_g(found, check, "mtp")["share_known"] is True
    # fewer steps than drafts beyond the check's tolerance: not a step count
    fewer = {**found, "drafts": 1200.0}
    assert acceptance.chunk_steps(fewer, acceptance.cross_check(fewer, 1.45)) is None
    # within it, every step drafted
    close = {**found, "drafts": 1050.0}
    assert acceptance.chunk_steps(close, acceptance.cross_check(close, 1.45)) == 1050.0
    # a generated-token count wins: nothing is taken from the stream
    assert acceptance.steps_without_g({**found, "generation_tokens": 1450.0},
                                      acceptance.cross_check(found, 1.45), "ngram") == {}
    unknown = from_acceptance(3, {**found, "share_known": False})
    assert unknown.steps is None and unknown.drafted_share == 1.0
    assert unknown.share_known is False and unknown.steps_from == "not measured"
    assert from_acceptance(3, found).steps_from == "every step drafts (the method)"


def test_counts_with_steps_from_chunks_pool_with_counted_ones_by_their_steps():
    chunks = Counts(2, 600.0, 1200.0, 450.0, (270.0, 180.0), None, "log", 5.0, 1000.0)
    counted = Counts(2, 300.0, 600.0, 150.0, (100.0, 50.0), 650.0, "metrics", 5.0)
    both = pooled([chunks, counted])
    # 1000 + (650 − 150) steps, 900 of which drafted; 600 + 150 accepted
    assert both.generation_tokens is None and both.steps == 1500.0
    assert both.drafted_share == 0.6 and both.tokens_per_step == 2100.0 / 1500.0
    assert both.source == "log+metrics" and both.share_known is True
    unknown = Counts(2, 600.0, 1200.0, 450.0, (270.0, 180.0), None, "log", share_known=False)
    assert pooled([unknown, counted]).steps is None
    assert pooled([unknown, counted]).share_known is False


Q, SLOPE, BASE = 0.6, 0.3, 30.0
RATES = (0.8, 0.6, 0.2, 0.1)  # per draft, unconditional, at depth 4


def _truth(k: int) -> float:
    """tok/s at depth k: TPS(k) = 1 + q·Σ rate_i over the mean step t0·(1 + s·q·g(k)), a plain
    step at a no-match step and a verify step of k + 1 tokens at the others."""
    if not k:
        return BASE
    return BASE * (1.0 + Q * sum(RATES[:k])) / (1.0 + SLOPE * Q * KIMI.g(k))


def _counts(k: int, known: bool = True) -> Counts:
    drafts = 6000.0
    per_pos = tuple(drafts * r for r in RATES[:k])
    steps = drafts / Q
    return Counts(k, drafts, drafts * k, sum(per_pos), per_pos, None, "log",
                  chunk_steps=steps if known else None, share_known=known)


def _launches(known: bool = True) -> list[ModelLaunch]:
    return [ModelLaunch(f"L{i + 1:03d}", d, _truth(d), _counts(d, known) if d else None)
            for i, d in enumerate((0, 4, 2, 0, 4, 2, 1, 3))]


def test_the_model_prices_a_no_match_step_as_a_plain_step():
    model = build(_launches(), (0, 1, 2, 3, 4), KIMI)
    assert model.state == "used", model.reason
    assert model.steps.slope == pytest.approx(SLOPE, abs=1e-6)
    for k in range(1, 5):
        p = model.prediction(k)
        assert p["drafted_share"] == pytest.approx(Q)
        assert p["tokens_per_step"] == pytest.approx(1.0 + Q * sum(RATES[:k]))
        assert p["verify_step_ratio"] == pytest.approx(1.0 + SLOPE * KIMI.g(k), rel=1e-6)
        # the mean step: 40% plain steps (1), 60% verify steps
        assert p["step_ratio"] == pytest.approx(0.4 + 0.6 * (1.0 + SLOPE * KIMI.g(k)), rel=1e-6)
        assert p["tok_s"] == pytest.approx(_truth(k), rel=1e-6)
    # depth 2 spelled out: three tokens read 384·(1 − (376/384)³) = 23.5 of Kimi K2's experts
    # against 8, g(2) = 1.9379; TPS = 1 + 0.6·(0.8 + 0.6) = 1.84; the mean step 0.4 + 0.6·(1 +
    # 0.3·1.9379) = 1.3488 plain steps: 30 · 1.84 / 1.3488 = 40.92 tok/s, where pricing every
    # step as a verify step (1 + 0.3·1.9379 = 1.5814) would say 34.91
    assert KIMI.g(2) == pytest.approx(1.937934, abs=1e-6)
    depth2 = model.prediction(2)
    assert depth2["step_ratio"] == pytest.approx(1.348828, abs=1e-6)
    assert depth2["tok_s"] == pytest.approx(40.924414, abs=1e-5)
    assert not math.isclose(depth2["tok_s"], 34.906217, rel_tol=0.1)


def test_without_the_share_a_lookup_drafters_launches_are_not_priced_and_the_model_says_why():
    model = build(_launches(known=False), (0, 1, 2, 3, 4), KIMI)
    assert model.state == "not-enough-data" and model.available is False
    assert model.reason == UNKNOWN_SHARE
    assert "no match is not measured" in model.reason and "plain step" in model.reason
    assert [l.label for l in model.launches] == ["L001", "L004"]
    assert {e["label"]: e["reason"] for e in model.excluded} == {
        f"L{i:03d}": UNKNOWN_SHARE for i in (2, 3, 5, 6, 7, 8)}
    # one launch whose share is known prices the model's launches; the others stay out
    mixed = _launches(known=False)
    mixed[1] = ModelLaunch("L002", 4, _truth(4), _counts(4))
    partial = build(mixed, (0, 1, 2, 3, 4), KIMI)
    assert partial.available is True and "L002" in [l.label for l in partial.launches]
    assert "L003" in [e["label"] for e in partial.excluded]


FIXTURE = Path(__file__).resolve().parents[1] / "fixtures" / "sweep" / "ngram-log-only"


def test_a_stand_in_launch_whose_metrics_lack_the_counters_prices_its_no_match_steps(tmp_path):
    """A launch folder of the simulator as `vllm serve` (ngram at depth 2, a match at 70% of
    steps, `metrics_omit: [spec_decode, generation_tokens]`: its counts come from the log's
    SpecDecoding lines): the evidence takes its steps from the stream's chunks, so q is measured
    and the launch's verify-to-plain ratio too (the scripted verify step: 1 + 0.4·(r(3) − 1))."""
    shutil.copytree(FIXTURE, tmp_path / "run")
    state = json.loads((FIXTURE / "sweep-state.json").read_text())
    plan = SweepPlan.model_validate(state["plan"])
    record = next(r for r in state["launches"] if r["label"] == "L003")
    found = evidence.derive(tmp_path / "run", record, plan)
    acc = found.acceptance
    assert acc["source"] == "log" and acc["generation_tokens"] is None and acc["share_known"]
    # recomputed from the raw files: the log's windows and the measured requests' chunks
    logs = json.loads((FIXTURE / "launches" / "L003" / "logs.json").read_text())
    windows = [w for w in logs["spec_decode"]["windows_detail"] if w.get("drafts_estimated")]
    drafts = sum(w["drafts_estimated"] for w in windows)
    accepted = sum(w["accepted"] for w in windows)
    rows = [json.loads(line) for line in
            (FIXTURE / "launches" / "L003" / "requests.jsonl").read_text().splitlines()]
    measured = [r for r in rows if not r["warmup"]]
    chunks = [c for r in measured for c in r["chunks"] if c["ids"]]
    per_chunk = round(sum(len(c["ids"]) for c in chunks) / len(chunks), 4)
    assert acc["drafts"] == pytest.approx(drafts) and acc["accepted_tokens"] == accepted
    assert acc["check"]["tokens_per_chunk"] == per_chunk
    assert acc["chunk_steps"] == round(accepted / (per_chunk - 1.0), 3)
    c = from_acceptance(2, acc)
    # the share the chunks themselves show: chunks carrying accepted drafts are q·a₁ of steps
    multi = sum(1 for ch in chunks if len(ch["ids"]) > 1) / len(chunks)
    assert c.drafted_share == pytest.approx(multi / c.rate(1), abs=0.05)
    assert 0.6 <= c.drafted_share <= 0.9  # scripted 0.7; this launch's requests drew their own
    ratio = found.step_ratio
    assert ratio["measured"] is True, ratio
    scripted = 1 + 0.4 * (experts.ratio(384, 8, 3) - 1)
    assert abs(math.log(ratio["ratio"]) - math.log(scripted)) <= 3 * ratio["log_sd"] + 0.04
    # the same folder with no chunk counts to take the steps from: q is not measured
    _without_chunk_counts(tmp_path / "run")
    blind = evidence.derive(tmp_path / "run", record, plan)
    assert blind.acceptance["share_known"] is False and blind.acceptance["chunk_steps"] is None
    assert "share of drafting steps is not known" in blind.step_ratio["reason"]


def _without_chunk_counts(run: Path) -> None:
    bench = run / "launches" / "L003" / "bench.json"
    doc = json.loads(bench.read_text())
    for w in doc["workloads"]:
        for r in w["requests"]:
            r["chunks"] = None
    bench.write_text(json.dumps(doc))


def test_a_sweep_whose_no_match_share_is_unknown_says_so_in_its_decision(tmp_path):
    """`sweep --rebuild` of the stand-in's depth-0 and depth-2 launches: with the chunks the
    model takes the launch; without them the black-box rule decides, and the decision, the
    model's entry and its summary say that the no-match share was not measured."""
    shutil.copytree(FIXTURE, tmp_path / "run")
    priced = rebuild(tmp_path / "run").document
    assert UNKNOWN_SHARE not in priced["decision"]["reason"]
    assert priced["model"]["available"] is True and priced["model"]["inputs"]["launches"] == [
        "L001", "L003"]
    _without_chunk_counts(tmp_path / "run")
    doc = rebuild(tmp_path / "run").document
    assert doc["decision"]["rule"] == "black-box"
    assert doc["decision"]["reason"].endswith("; the depth model was not used: " + UNKNOWN_SHARE)
    model = doc["model"]
    assert model["state"] == "not-enough-data" and model["available"] is False
    assert model["inputs"]["excluded"] == [{"label": "L003", "reason": UNKNOWN_SHARE}]
    assert model["summary"] == f"The depth model was not used: {UNKNOWN_SHARE}."
    launch = next(l for l in doc["launches"] if l["label"] == "L003")
    assert launch["acceptance"]["share_known"] is False
