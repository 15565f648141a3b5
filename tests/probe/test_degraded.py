"""Servers that refuse or break parts of the API: the probe degrades, says so, never crashes."""

from __future__ import annotations

from sparktriage.sim.toy import ToyConfig
from probe.test_patterns import family, probe


def test_refused_prompt_logprobs_falls_back_to_echo():
    doc = probe(ToyConfig(no_prompt_logprobs=True))
    assert doc["capabilities"]["prompt_logprobs_via"] == "echo"
    assert family(doc, "likelihood")["status"] == "ok"
    assert doc["confidence"] == "reduced"
    assert any("echo" in item for item in doc["limitations"])
    assert doc["verdict"] == "healthy-uncalibrated"


def test_no_prompt_logprobs_at_all_skips_likelihood_with_the_reason():
    doc = probe(ToyConfig(no_prompt_logprobs=True, no_echo=True))
    lik = family(doc, "likelihood")
    assert lik["status"] == "skipped"
    assert "prompt_logprobs and echo" in lik["reason"]
    assert doc["confidence"] == "reduced"
    assert doc["verdict"] == "healthy-uncalibrated"  # the other families still ran
    assert family(doc, "answers")["numbers"]["passed"] == 24


def test_capped_logprobs_are_negotiated_down():
    doc = probe(ToyConfig(max_logprobs=3))
    assert doc["capabilities"]["prompt_logprobs"] == 3
    assert doc["capabilities"]["logprobs"] == 3
    assert any("capped at top-3" in item for item in doc["limitations"])
    assert doc["verdict"] == "healthy-uncalibrated"


def test_nan_and_infinity_literals_are_evidence_not_a_crash():
    doc = probe(ToyConfig(nan_literals=True))
    sanity = family(doc, "sanity")
    assert sanity["numbers"]["nonfinite_json_literals"] == ["-Infinity", "NaN"]
    assert doc["verdict"] == "garbage" and doc["pattern"] == "F2"


def test_http_500_on_logprob_requests_is_evidence():
    doc = probe(ToyConfig(logprob_500=True))
    assert family(doc, "sanity")["numbers"]["http_5xx_only_with_logprobs"] >= 1
    assert family(doc, "likelihood")["status"] == "skipped"
    assert doc["verdict"] == "garbage" and doc["pattern"] == "F2"


def test_no_chat_template_sends_generations_as_completions():
    doc = probe(ToyConfig(no_chat_template=True))
    assert doc["capabilities"]["chat"] is False
    assert any("no chat template" in item for item in doc["limitations"])
    assert family(doc, "answers")["numbers"]["chat_asked"] == 0
    assert family(doc, "generation")["numbers"]["generations"] == 5
    assert doc["verdict"] == "healthy-uncalibrated"


def test_no_token_ids_skips_decode_vs_prefill_only():
    doc = probe(ToyConfig(no_token_ids=True))
    cons = family(doc, "consistency")
    assert "decode_prefill_k3" not in cons["numbers"]
    assert cons["numbers"]["probes"] == 22
    assert doc["verdict"] == "healthy-uncalibrated"
