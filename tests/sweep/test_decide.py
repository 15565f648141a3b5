"""The sweep decision: launch means, Welch's test, provisional answers, the e2e fallback."""

from __future__ import annotations

import pytest
from scipy import stats

from sparktriage.sweep.decide import LaunchRate, acceptance_length, decide, sweep_document, workload_rate


def rates(depth_values: dict[int, list[float]], e2e: dict[int, list[float]] | None = None) -> dict:
    out = {}
    n = 0
    for depth, values in depth_values.items():
        out[depth] = []
        for i, value in enumerate(values):
            n += 1
            out[depth].append(LaunchRate(f"L{n:03d}", value, 1.8 if depth else None,
                                         (e2e or {}).get(depth, [None] * len(values))[i]))
    return out


def test_significant_gain_is_adopted_with_the_welch_numbers():
    depths = rates({0: [25.9, 27.1, 28.4, 26.6], 2: [31.2, 32.0, 31.5, 30.8], 4: [29.0, 29.9, 28.7, 29.4]})
    decision = decide(depths)
    assert decision["depth"] == 2 and decision["provisional"] is False and decision["basis"] == "decode"
    expected = stats.ttest_ind([31.2, 32.0, 31.5, 30.8], [25.9, 27.1, 28.4, 26.6], equal_var=False)
    assert decision["comparison"]["p_value"] == pytest.approx(expected.pvalue, rel=1e-6)
    assert decision["comparison"]["significant"] is True
    assert "+16.2% against depth 0" in decision["reason"]  # 31.375 / 27.0


def test_a_gain_within_launch_noise_keeps_depth_0():
    # the obvious depth looks faster by its mean, but launches of depth 0 vary as much
    depths = rates({0: [25.9, 28.4, 26.8, 27.6], 3: [27.0, 29.1, 26.2, 28.8]})
    decision = decide(depths)
    assert decision["depth"] == 0 and decision["provisional"] is False
    assert decision["comparison"]["significant"] is False
    assert "keep the simpler configuration" in decision["reason"]


def test_a_slower_depth_is_never_chosen():
    decision = decide(rates({0: [28.0, 28.2], 2: [24.0, 24.5], 4: [21.0, 21.3]}))
    assert decision["depth"] == 0 and decision["comparison"] is None
    assert decision["provisional"] is False
    single = decide(rates({0: [28.0], 2: [24.0]}))  # depth 0 wins, on single launches
    assert single["depth"] == 0 and single["provisional"] is True and "--launches 3" in single["reason"]


def test_single_launches_give_a_provisional_answer():
    decision = decide(rates({0: [27.8], 2: [31.9]}))
    assert decision["depth"] == 2 and decision["provisional"] is True
    assert decision["comparison"]["p_value"] is None
    assert "+14.7% against depth 0" in decision["reason"] and "--launches 3" in decision["reason"]


def test_bursty_launches_are_compared_end_to_end():
    # L002 delivered everything in bursts: no decode rate; all launches compare on e2e rates
    depths = rates({0: [410.0], 2: [None]}, e2e={0: [260.0], 2: [300.0]})
    decision = decide(depths)
    assert decision["basis"] == "e2e" and decision["depth"] == 2
    assert "+15.4% against depth 0" in decision["reason"] and "end-to-end" in decision["reason"]


def test_nothing_measured_decides_nothing_and_missing_depth_0_is_said():
    assert decide(rates({0: [None], 2: [None]}))["depth"] is None
    decision = decide(rates({2: [30.0], 4: [29.0]}))
    assert decision["depth"] == 2 and decision["provisional"] is True
    assert "depth 0 was not measured" in decision["reason"]


def test_sweep_document_shape_and_inputs():
    bench = {"workloads": [{"name": "prose", "summary": {"decode_tok_s": {"mean": 1.0}}},
                           {"name": "code", "summary": {"decode_tok_s": {"mean": 27.8},
                                                        "e2e_tok_s": {"mean": 25.1}}}]}
    assert workload_rate(bench, "code") == 27.8
    assert workload_rate(bench, "code", "e2e_tok_s") == 25.1
    assert workload_rate(bench, "chat") is None and workload_rate(None, "code") is None
    assert acceptance_length({"spec_decode": {"mean_acceptance_length": 2.85}}) == 2.85
    assert acceptance_length({"spec_decode": None}) is None
    doc = sweep_document("ngram", "code", rates({2: [31.9], 0: [27.8, 27.5]}))
    assert doc["schema_version"] == 1 and doc["kind"] == "sweep" and doc["method"] == "ngram"
    assert [d["depth"] for d in doc["depths"]] == [0, 2]
    assert [l["delivered_tok_s"] for l in doc["depths"][0]["launches"]] == [27.8, 27.5]
    assert doc["depths"][1]["launches"][0]["acceptance_length"] == 1.8
    assert doc["decision"]["depth"] == 2 and doc["decision"]["provisional"] is True
