"""The correctness gate (sweep.evidence.gate): identical, near-tie divergence, a real difference."""

from __future__ import annotations

from sparktriage.sweep.evidence.gate import GreedyOutput, compare_one, gate

REF = GreedyOutput("code", ("def", " f", "(", "x", "):", " return"),
                   tuple({t: -0.1, "zz": -3.0} for t in ("def", " f", "(", "x", "):", " return")))


def test_identical_outputs_pass():
    result = gate([REF], [REF])
    assert result["state"] == "pass" and "identical, 6 tokens" in result["reason"]


def test_difference_at_a_near_tie_passes_and_stops_comparing():
    top = list(REF.top)
    top[3] = {"x": -0.70, "y": -0.72}
    ref = GreedyOutput("code", REF.tokens, tuple(top))
    cand = GreedyOutput("code", ("def", " f", "(", "y", ")", ":"),
                        tuple(top[:3]) + ({"x": -0.71, "y": -0.69},) + tuple(top[4:]))
    result = compare_one(ref, cand)
    assert result["state"] == "pass" and result["position"] == 3 and "near-tie" in result["reason"]


def test_difference_outside_the_top_k_fails_with_position_and_text():
    cand = GreedyOutput("code", ("def", " f", "(", "garbage", "):", " return"), REF.top)
    result = gate([REF], [cand])
    assert result["state"] == "fail"
    assert result["prompts"][0]["position"] == 3
    assert "'x'" in result["reason"] and "'garbage'" in result["reason"]
    assert result["prompts"][0]["expected"].startswith("def f(x") and "garbage" in result["prompts"][0]["got"]


def test_close_tokens_with_distant_logprobs_fail():
    top = list(REF.top)
    top[3] = {"x": -0.1, "y": -2.5}
    cand = GreedyOutput("code", ("def", " f", "(", "y"), tuple(top[:4]))
    assert compare_one(GreedyOutput("code", REF.tokens, tuple(top)), cand)["state"] == "fail"


def test_probe_differential_verdict_joins_the_gate():
    probe = {"verdict": "garbage", "families": [{"name": "differential", "status": "garbage"}]}
    result = gate([REF], [REF], probe)
    assert result["state"] == "fail" and "differential garbage" in result["reason"]
    ok = gate([REF], [REF], {"verdict": "healthy", "families": [{"name": "differential", "status": "ok"}]})
    assert ok["state"] == "pass"


def test_missing_outputs_are_unchecked():
    assert gate(None, [REF])["state"] == "unchecked"
    assert gate([REF], [GreedyOutput("code", (), (), "HTTP 500")])["state"] == "unchecked"
