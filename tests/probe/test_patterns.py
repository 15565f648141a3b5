"""Each failure pattern F1-F8, and healthy servers that look odd, through the whole probe.

The simulator's toy language model (sparktriage.sim.toy) reproduces one pattern per configuration; the probe runs
against it exactly as against a real server. These pin the verdict, the pattern and the
deciding family; real vLLM variants are in test_vllm_variants.py.
"""

from __future__ import annotations

import asyncio

import pytest

from sparktriage.probe import baseline as baseline_io
from sparktriage.probe.runner import ProbeSettings, run_probe
from sparktriage.sim.thread import toy_server
from sparktriage.sim.toy import ToyConfig


def probe(config: ToyConfig | None = None, seed: int = 7, **settings) -> dict:
    with toy_server(config) as server:
        outcome = asyncio.run(run_probe(ProbeSettings(server.url, seed=seed, **settings),
                                        lambda *_: None, lambda _: None))
    return outcome.document


def family(doc: dict, name: str) -> dict:
    return next(f for f in doc["families"] if f["name"] == name)


def test_healthy_server_is_healthy_uncalibrated():
    doc = probe()
    assert doc["verdict"] == "healthy-uncalibrated"
    assert doc["pattern"] is None
    assert {f["name"]: f["status"] for f in doc["families"]} == {
        "sanity": "ok", "likelihood": "ok", "answers": "ok", "generation": "ok",
        "consistency": "ok", "differential": "skipped"}
    assert family(doc, "answers")["numbers"]["passed"] == 24
    assert doc["confidence"] == "normal" and doc["limitations"] == []
    assert 0 < doc["tokens_spent"] < 10_000


@pytest.mark.parametrize("config, pattern, deciding", [
    (ToyConfig(garbage="'s"), "F1", {"answers", "generation"}),
    (ToyConfig(garbage="!"), "F2", {"answers", "generation"}),
    (ToyConfig(nan_literals=True), "F2", {"sanity"}),
    (ToyConfig(logprob_500=True), "F2", {"sanity"}),
    (ToyConfig(uniform=True), "F3", {"sanity", "likelihood", "answers", "generation"}),
    (ToyConfig(salad=True), "F4", {"answers", "generation"}),
    (ToyConfig(empty_chat=True), "F7", {"answers", "generation"}),
])
def test_gross_patterns_are_garbage(config, pattern, deciding):
    doc = probe(config)
    assert doc["verdict"] == "garbage"
    assert doc["pattern"] == pattern
    strong = {f["name"] for f in doc["families"] if f["status"] == "garbage"}
    assert deciding <= strong
    assert doc["advice"], "a garbage verdict says what to try next"


@pytest.mark.slow
def test_fluent_but_wrong_is_suspect_then_garbage_against_a_baseline(tmp_path):
    with toy_server() as good:
        outcome = asyncio.run(run_probe(ProbeSettings(good.url, seed=3), lambda *_: None, lambda _: None))
        baseline_io.save(outcome.fingerprint, tmp_path / "fp.json", good.url, "fake-1")
    alone = probe(ToyConfig(fluent_wrong=True))
    assert alone["verdict"] == "suspect" and alone["pattern"] == "F5"
    assert family(alone, "generation")["status"] == "ok"  # the text itself looks fine
    compared = probe(ToyConfig(fluent_wrong=True), baseline=tmp_path / "fp.json")
    assert compared["verdict"] == "garbage" and compared["pattern"] == "F5"
    diff = family(compared, "differential")
    assert diff["status"] == "garbage"
    assert diff["numbers"]["delta_nll"] > 0.5


def test_wrong_answers_under_concurrency_is_f6():
    doc = probe(ToyConfig(burst_bug=True, delay_s=0.1))  # long answers: bursts overlap under load
    assert doc["verdict"] == "suspect" and doc["pattern"] == "F6"
    numbers = family(doc, "consistency")["numbers"]
    assert numbers["sequential_accuracy"] == 1.0 and numbers["burst_accuracy"] < 0.5


def test_broken_chat_path_with_healthy_completions_is_f8():
    doc = probe(ToyConfig(broken_chat=True))
    assert doc["verdict"] == "suspect" and doc["pattern"] == "F8"
    answers = family(doc, "answers")["numbers"]
    assert answers["passed"] == 24 and answers["chat_passed"] == 0
    assert family(doc, "likelihood")["status"] == "ok"


def test_reasoning_model_with_empty_content_is_not_an_alarm():
    doc = probe(ToyConfig(reasoning=True))
    assert doc["verdict"] == "healthy-uncalibrated"
    assert family(doc, "answers")["numbers"]["chat_passed"] == 12
    assert family(doc, "generation")["numbers"]["flagged"] == 0


def test_baseline_round_trip_makes_a_healthy_server_healthy(tmp_path):
    with toy_server() as server:
        first = asyncio.run(run_probe(ProbeSettings(server.url, seed=1), lambda *_: None, lambda _: None))
        path = tmp_path / "fingerprint.json"
        baseline_io.save(first.fingerprint, path, server.url, "fake-1")
        loaded = baseline_io.load(path)
        assert sorted(loaded.prints) == sorted(first.fingerprint.prints)
        second = asyncio.run(run_probe(ProbeSettings(server.url, seed=2, baseline=path),
                                       lambda *_: None, lambda _: None))
    doc = second.document
    assert doc["verdict"] == "healthy"
    diff = family(doc, "differential")
    assert diff["status"] == "ok"
    assert diff["numbers"]["kl_mean"] == pytest.approx(0.0, abs=1e-6)
    assert diff["numbers"]["top1_agreement"] == 1.0
    assert doc["baseline"]["path"] == str(path)


def test_live_reference_endpoint_is_compared():
    with toy_server(ToyConfig(fluent_wrong=True)) as bad, toy_server() as good:
        outcome = asyncio.run(run_probe(ProbeSettings(bad.url, seed=5, reference=good.url),
                                        lambda *_: None, lambda _: None))
    doc = outcome.document
    assert doc["baseline"]["kind"] == "reference" and doc["baseline"]["url"] == good.url
    assert family(doc, "differential")["status"] == "garbage"
    assert doc["reference_tokens_spent"] > 0


@pytest.mark.slow
def test_a_weak_model_is_judged_against_its_own_baseline(tmp_path):
    """A model that always fails some absolute guards (a tiny model) is not flagged on every
    launch once a baseline of it exists: only the change counts (calibrate.py)."""
    weak = ToyConfig(fluent_wrong=True)
    with toy_server(weak) as server:
        first = asyncio.run(run_probe(ProbeSettings(server.url, seed=1), lambda *_: None, lambda _: None))
        baseline_io.save(first.fingerprint, tmp_path / "fp.json", server.url, "fake-1")
        second = asyncio.run(run_probe(ProbeSettings(server.url, seed=2, baseline=tmp_path / "fp.json"),
                                       lambda *_: None, lambda _: None))
    assert first.document["verdict"] == "suspect"
    doc = second.document
    assert doc["verdict"] == "healthy"
    assert family(doc, "answers")["numbers"]["uncalibrated_status"] == "suspect"
    assert any("not counted" in e for e in family(doc, "likelihood")["evidence"])
    from sparktriage.probe.verdict import from_documents
    assert from_documents(doc["families"], with_baseline=False) == "suspect"
    # ...but a real change against that baseline is still caught
    with toy_server(ToyConfig(garbage="!")) as broken:
        third = asyncio.run(run_probe(ProbeSettings(broken.url, seed=3, baseline=tmp_path / "fp.json"),
                                      lambda *_: None, lambda _: None))
    assert third.document["verdict"] == "garbage"
