"""Page one (issue 14, items 1-2): findings ranked by impact with measured or estimated gains,
healthy areas only with evidence, "not measured" with the command, numbers people can read."""

from __future__ import annotations

import json
from pathlib import Path

import pytest

from report.golden_runs import eight_node, selfcheck
from sparktriage.report import readable
from sparktriage.report.inputs import load_run
from sparktriage.report.model import Context, build_document
from sparktriage.testbed.synthetic_run import SyntheticSpec, make_run


def _doc(root: Path) -> dict:
    return build_document(load_run(root), Context(generated_at="2026-01-01T00:00:00Z"))


@pytest.fixture(scope="module")
def eight(tmp_path_factory) -> dict:
    return _doc(eight_node(tmp_path_factory.mktemp("eight") / "run"))


def test_findings_are_ranked_and_the_sweep_gain_is_the_measured_difference(eight):
    findings = eight["page_one"]["findings"]
    assert [f["rank"] for f in findings] == [1, 2, 3, 4]
    assert [f["cause"] for f in findings] == ["probe/F4", "sweep/decision", "stall/cold-storage",
                                              "stats/unstable-across-launches"]
    garbage, sweep, stall, _ = findings
    assert garbage["launches"] == ["L009", "L010"] and "depth 4" in garbage["title"]
    assert "known-answer: garbage (2/24 probes answered)" in garbage["evidence"]
    points = {p["depth"]: p for p in eight["sections"]["sweep"]["points"]}
    diff = points[2]["mean"] - points[0]["mean"]  # the deployment configures no speculative decoding
    assert sweep["gain"]["basis"] == "measured"
    assert sweep["gain"]["text"].startswith(f"+{readable.significant(diff)} tok/s (+{round(100 * diff / points[0]['mean'])}%)")
    assert sweep["fix"] == "set speculative num_speculative_tokens to 2"
    startup = {l["label"]: l for l in eight["sections"]["startup"]["launches"]}
    assert stall["launches"] == ["L003", "L006", "L009"]  # every third launch has the stall
    assert all(startup[x]["findings"] for x in stall["launches"])
    assert stall["gain"]["basis"] == "measured" and "median of 7" in stall["gain"]["text"]
    health = eight["page_one"]["healthy"]
    assert health == ["output healthy in 8 of 10 probed launches (depths 0, 1, 2, 3): "
                      "2 probe families passed without a baseline (uncalibrated)",
                      "delivered vs logged: consistent in 2 of 10 reconciled launches (L001, L002)"]


def test_a_stall_in_every_launch_has_an_estimated_gain(tmp_path):
    doc = _doc(make_run(tmp_path / "run", SyntheticSpec(requests=3, max_tokens=16, stall_every=1)))
    stall, = [f for f in doc["page_one"]["findings"] if f["area"] == "startup"]
    lengths = sorted(f["duration_s"] for l in doc["sections"]["startup"]["launches"] for f in l["findings"])
    assert stall["gain"]["basis"] == "estimated" and len(lengths) == 1
    assert stall["gain"]["text"].startswith(f"up to {readable.duration(lengths[0])} per launch")  # the stall's length


def test_no_verdict_without_evidence(tmp_path):
    doc = _doc(selfcheck(tmp_path / "run"))
    page = doc["page_one"]
    missing = {m["what"]: m for m in page["not_measured"]}
    assert "HTTP 404" in missing["Delivered vs logged"]["why"]
    assert missing["Delivered vs logged"]["command"] == "sparktriage bench --log FILE --metrics URL"
    assert missing["Startup timeline and stalls"]["command"] == "sparktriage stalls LAUNCH/bundle"
    assert "Launch-to-launch spread" in missing
    assert not any("consistent" in line or "stall" in line for line in page["healthy"])
    rows = {r["metric"]: r for r in page["results"]}
    assert rows["Cold start to serving"]["result"] == "not measured"
    assert rows["Launches"]["notes"].startswith("one launch only")
    assert page["deployment"]["line"] == ("synthetic-moe-fp4 on node count not recorded; vLLM 0.32.0; "
                                          "quantization not recorded; speculative not recorded")


def test_config_traps_and_a_cold_compile_cache_become_findings(tmp_path):
    root = make_run(tmp_path / "run", SyntheticSpec(depths=(0,), launches_per_depth=3, requests=3,
                                                    max_tokens=16, stall_every=99))
    stalls = root / "launches" / "L001" / "stalls.json"
    doc = json.loads(stalls.read_text())
    for phase in doc["phases"]:
        if phase["name"] == "compile":
            phase["end"], phase["duration_s"] = phase["start"] + 78.0, 78.0
    stalls.write_text(json.dumps(doc))
    (root / "reproduce.json").write_text(json.dumps({"schema_version": 1, "traps": [
        {"id": "nccl-ib-disabled", "setting": "NCCL_IB_DISABLE=1", "why": "the interconnect falls back to TCP",
         "fix": "unset NCCL_IB_DISABLE", "severity": "high", "status": "fires"},
        {"id": "maybe", "setting": "x", "why": "?", "fix": "?", "severity": "low", "status": "possible"}]}))
    page = _doc(root)["page_one"]
    by_cause = {f["cause"]: f for f in page["findings"]}
    cold = by_cause["startup/cold-compile-cache"]
    assert cold["gain"] == {"basis": "measured", "text": "1 min 00 s on a cold start (warm cache against cold, this run)"}
    trap = by_cause["trap/nccl-ib-disabled"]
    assert trap["gain"]["basis"] == "estimated" and trap["fix"] == "unset NCCL_IB_DISABLE"
    assert "trap/maybe" not in by_cause  # only traps that fire
    assert [f["area"] for f in page["findings"]] == sorted(
        (f["area"] for f in page["findings"]),
        key=["correctness", "throughput", "startup", "configuration", "measurement"].index)


@pytest.mark.parametrize("mean, low, high, expected", [
    (33.969, 32.81, 35.12, "34.0 tok/s (95% CI 32.8–35.1)"),
    (32.5512, 31.97, 33.13, "32.55 tok/s (95% CI 31.97–33.13)"),
    (1234.5, 1000.0, 1500.0, "1,234 tok/s (95% CI 1,000–1,500)"),
    (28.2, None, None, "28.2 tok/s (no interval)"),
])
def test_digits_follow_the_interval(mean, low, high, expected):
    assert readable.with_interval(mean, low, high, "tok/s") == expected


def test_readable_numbers_never_use_exponents():
    assert readable.significant(3.2e10) == "32,000,000,000"
    assert readable.significant(1.464e-3) == "0.00146"
    assert readable.p_value(1.69e-5) == "p < 0.001" and readable.p_value(0.0432) == "p = 0.043"
    assert readable.duration(140.07) == "2 min 20 s" and readable.duration(48.34) == "48.3 s"
    assert readable.duration(4000) == "1 h 07 min"
    assert readable.percent(0.3297) == "33%" and readable.percent(0.047) == "4.7%"
