"""The report document: sections, missing sections, pooling, roofline, sweep statistics."""

from __future__ import annotations

import json
import math

import pytest
from scipy import stats as sps

from sparktriage.report import roofline
from sparktriage.report.inputs import load_run
from sparktriage.report.model import Context, build_document
from sparktriage.report.results import delivered_series


def _record(index, sent, times, per_chunk=1, warmup=False):
    chunks, n = [], 0
    for t in times:
        n += per_chunk
        chunks.append({"t": t, "ids": list(range(per_chunk)), "lp": per_chunk, "usage": n,
                       "text": "x" * per_chunk, "finish": None})
    return {"type": "request", "workload": "code", "index": index, "warmup": warmup,
            "path": "/v1/completions", "max_tokens": n, "ignore_eos": True, "sent_unix": sent,
            "http_status": 200, "chunks": chunks, "final_usage": {"completion_tokens": n},
            "t_final": times[-1], "t_end": times[-1], "done": True, "events": len(times),
            "status": "ok", "reason": None}


def _write_launch(root, label, records, server_version="0.32.0"):
    folder = root / "launches" / label
    folder.mkdir(parents=True)
    (folder / "launch.json").write_text(json.dumps({
        "schema_version": 1, "kind": "launch", "endpoint": "http://127.0.0.1:1", "model": "m",
        "server_version": server_version,
        "workloads": [{"name": "code", "api": "completions", "prompt": "p", "max_tokens": 4,
                       "temperature": 0.0, "ignore_eos": True, "requests": 3, "warmup": 0}]}))
    (folder / "requests.jsonl").write_text("".join(json.dumps(r) + "\n" for r in records))


def _run(tmp_path, launches: dict[str, list[float]], versions=None):
    root = tmp_path / "run"
    root.mkdir()
    (root / "run.json").write_text(json.dumps({"schema_version": 1, "kind": "sparktriage-run",
                                               "created": "2026-01-01T00:00:00Z", "command": ["x"]}))
    for label, rates in launches.items():
        # each request: first token at 0.1 s, then 4 more tokens spaced 1/rate apart
        records = [_record(i, 1000.0 + 10 * i, [0.1 + k / rate for k in range(5)]) for i, rate in enumerate(rates)]
        _write_launch(root, label, records, (versions or {}).get(label, "0.32.0"))
    return root


def _doc(root):
    return build_document(load_run(root), Context(generated_at="2026-01-01T00:00:00Z"))


def test_missing_sections_say_what_and_how(tmp_path):
    doc = _doc(_run(tmp_path, {"L001": [10.0, 20.0, 40.0]}))
    sections = doc["sections"]
    assert sections["protocol"]["status"] == "present"  # derived from requests.jsonl alone
    for name, producer in [("probe", "sparktriage probe"), ("startup", "sparktriage stalls"),
                           ("sweep", "sparktriage sweep"), ("deployment", "sparktriage launch"),
                           ("environment", "collect"), ("reconciliation", "sparktriage logs")]:
        assert sections[name]["status"] == "missing", name
        assert producer in sections[name]["produce_with"], name
        assert any(w.startswith(f"{name}: missing") for w in doc["warnings"]), name
    assert sections["roofline"]["status"] == "missing"
    verdicts = {v["topic"]: v["verdict"] for v in doc["summary"]["verdicts"]}
    assert verdicts["Output quality (probe)"] == "not measured"
    assert verdicts["Signature"] == "not signed"


def test_per_launch_numbers_and_launch_level_pooling(tmp_path):
    rates = {"L001": [10.0, 11.0, 12.0], "L002": [20.0, 21.0, 22.0], "L003": [15.0, 16.0, 17.0]}
    doc = _doc(_run(tmp_path, rates))
    launches = doc["sections"]["protocol"]["launches"]
    means = [l["workloads"][0]["decode_tok_s"]["mean"] for l in launches]
    assert means == pytest.approx([11.0, 21.0, 16.0], rel=1e-9)  # decode rate = 4 tokens / (4/rate)
    pool, = doc["sections"]["protocol"]["across"]
    assert pool["launches"] == ["L001", "L002", "L003"] and pool["n_launches"] == 3
    expected = sps.t.interval(0.95, 2, loc=16.0, scale=sps.sem(means))
    assert pool["decode_tok_s"]["mean"] == pytest.approx(16.0)
    assert (pool["decode_tok_s"]["ci95_low"], pool["decode_tok_s"]["ci95_high"]) == pytest.approx(expected)
    assert not pool["stable"]  # launch means 5 apart, request spread 1: the launch dominates
    headline = doc["summary"]["headline"][0]
    assert "mean of 3 launch means" in headline["detail"] and "16.0 tok/s" in headline["value"]


def test_launches_that_differ_are_not_pooled(tmp_path):
    doc = _doc(_run(tmp_path, {"L001": [10.0, 11.0], "L002": [10.0, 11.0]}, {"L002": "0.33.0"}))
    pools = doc["sections"]["protocol"]["across"]
    assert [p["launches"] for p in pools] == [["L001"], ["L002"]]
    assert all("not pooled (launches differ in server version: 0.32.0, 0.33.0)" in " ".join(p["notes"])
               for p in pools)


def test_delivered_series_counts_tokens_per_window(tmp_path):
    root = tmp_path / "run"
    root.mkdir()
    (root / "run.json").write_text('{"schema_version": 1}')
    # 3 tokens per chunk, chunks at 1, 2, ..., 25 s after a send at t=100: 10 s windows
    record = _record(0, 100.0, [float(t) for t in range(1, 26)], per_chunk=3)
    _write_launch(root, "L001", [record])
    series = delivered_series(load_run(root), "L001")
    assert [w["t"] for w in series] == [0.0, 10.0, 20.0]
    assert series[0]["tok_s"] == pytest.approx(9 * 3 / 10)  # chunks at 1..9 s
    assert series[1]["tok_s"] == pytest.approx(10 * 3 / 10)
    assert series[2]["tok_s"] == pytest.approx(6 * 3 / 5)  # 20..25 s: a partial window of 5 s


def test_roofline_from_the_deployments_profiles_with_the_one_formula():
    """The section is roofline/'s ceiling (docs/roofline.md), never a second formula."""
    from sparktriage.roofline.ceiling import ceiling
    from sparktriage.roofline.profiles import HardwareProfile, ModelProfile, load_profile
    deployment = {"roofline": {"hardware": "gb10", "model": "kimi-k2"}, "parallelism": {"tp": 8},
                  "nodes": [{"host": f"n{i}"} for i in range(8)]}
    roof = roofline.compute(deployment)
    same = ceiling(load_profile(HardwareProfile, "gb10"), load_profile(ModelProfile, "kimi-k2"), 8)
    assert roof["ceiling_tok_s"] == pytest.approx(same.ceiling_tok_s) == pytest.approx(59.16, abs=0.01)
    assert roof["per_depth"][0]["ceiling_tok_s"] == pytest.approx(same.ceiling_tok_s)
    inline = {"roofline": {"hardware": {"memory_bandwidth_gbs": 273},  # Llama-3.3-70B NVFP4, one GB10
                           "model": {"active_params_b": 40.61, "layers": 80, "bits_per_weight": 8}}}
    assert roofline.compute(inline)["ceiling_tok_s"] == pytest.approx(6.7225, rel=1e-3)
    loose = roofline.compute({"model": {"active_params": 1e9, "bytes_per_param": 1}})
    assert loose["status"] == "missing" and "roofline: block" in loose["reason"]
    bad = roofline.compute({"roofline": {"hardware": "gb10", "model": "llama-9000"}})
    assert bad["status"] == "missing" and "not shipped" in bad["reason"]
    assert roofline.compute(None)["status"] == "missing"


def test_sweep_statements_restate_the_sweeps_own_welch_tests(tmp_path):
    """The sweep tests the chosen depth over launch means (sweep.json `comparisons`); the report
    restates those tests and never re-tests: a changed test in sweep.json changes the report."""
    from sparktriage.report.sweep import sweep_section
    from sparktriage.sweep.document import build_document as sweep_document
    from sparktriage.sweep.plan import SweepPlan
    from sparktriage.sweep.running.state import SweepState

    root = _run(tmp_path, {})
    a, b = [30.1, 31.0, 29.7], [27.2, 27.9, 26.8, 27.5]
    rates = [(0, v) for v in b] + [(2, v) for v in a] + [(3, 29.0)]
    records = [{"label": f"L{i:03d}", "depth": d, "status": "ok", "reason": None,
                "request_decode_tok_s": [v], "request_e2e_tok_s": [v], "delivered_tok_s": v,
                "metadata": {"model": "m"}, "wall_s": 100.0} for i, (d, v) in enumerate(rates, 1)]
    plan = SweepPlan(deployment_path=str(tmp_path / "d.yaml"), depths_requested=(0, 2, 3),
                     depths=(0, 2, 3), method="ngram", max_launches=8)
    doc = sweep_document(plan, SweepState(tmp_path / "sweep", plan, records), tmp_path / "sweep",
                         "launch budget spent")
    assert doc["decision"]["depth"] == 2
    (root / "sweep.json").write_text(json.dumps(doc))
    section = sweep_section(load_run(root))
    versus0, versus3 = section["comparisons"]
    theirs = sps.ttest_ind(a, b, equal_var=False)
    assert versus0["versus"] == 0 and versus0["test"]["p_value"] == pytest.approx(theirs.pvalue, rel=1e-6)
    from sparktriage.report.readable import p_value
    assert f"Welch {p_value(theirs.pvalue)}: significant" in versus0["statement"]  # no exponent
    assert versus3["versus"] == 3 and "run more launches" in versus3["statement"]
    zero = next(p for p in section["points"] if p["depth"] == 0)
    assert zero["ci95_low"] == pytest.approx(sps.t.interval(0.95, 3, loc=sum(b) / 4, scale=sps.sem(b))[0])
    # the report reads the numbers; it does not compute them
    doc["comparisons"][0]["test"].update(p_value=0.41, significant=False)
    doc["depths"][0].update(mean_tok_s=99.0, ci95_low=98.0, ci95_high=100.0)
    (root / "sweep.json").write_text(json.dumps(doc))
    section = sweep_section(load_run(root))
    assert "Welch p = 0.41: not significant" in section["comparisons"][0]["statement"]
    zero = next(p for p in section["points"] if p["depth"] == 0)
    assert (zero["mean"], zero["ci95_low"], zero["ci95_high"]) == (99.0, 98.0, 100.0)


def test_synthetic_run_sections_all_present(report_run):
    from sparktriage.report.redact import Redactor

    doc = build_document(Redactor().run(load_run(report_run)), Context(generated_at="x"))
    s = doc["sections"]
    assert all(s[name]["status"] == "present" for name in s), {n: s[n]["status"] for n in s}
    sweep = s["sweep"]
    assert [p["depth"] for p in sweep["points"]] == [0, 2]
    assert sweep["comparisons"] and "Welch p" in sweep["comparisons"][0]["statement"]
    stalls = [f for l in s["startup"]["launches"] for f in l["findings"]]
    assert stalls and all(f["id"] == "cold-storage" and f["start"] >= 0 for f in stalls)
    rec = s["reconciliation"]["launches"][0]
    assert rec["peak_over_delivered"] == pytest.approx(rec["logged_peak"] / rec["delivered_mean"])
    assert len(s["reconciliation"]["series"]) == 4
    assert math.isfinite(s["roofline"]["ceiling_tok_s"])
    assert s["environment"]["launches"][0]["differs"]  # nccl differs between the two nodes


def test_startup_from_logs_only_and_iso_times(tmp_path):
    root = _run(tmp_path, {"L001": [10.0, 11.0]})
    folder = root / "launches" / "L001"
    (folder / "logs.json").write_text(json.dumps({
        "schema_version": 1, "kind": "logs", "version": "0.11.0",
        "phases": [{"name": "weight-read", "start": "2026-01-01T00:00:10Z", "end": "2026-01-01T00:01:10Z",
                    "duration_s": 60.0},
                   {"name": "ready", "start": "2026-01-01T00:01:10Z", "end": None, "duration_s": 1.5}],
        "reported": {"loading_weights_s": 58.2, "model_loading_gib": "not a number"},
        "throughput": {"generation": {"windows": 7, "mean": 30.0, "mean_active": 35.0, "peak": 42.0}}}))
    doc = _doc(root)
    startup = doc["sections"]["startup"]
    launch, = startup["launches"]
    assert startup["status"] == "partial" and not launch["classified"]
    assert [(p["name"], p["start"], p["end"]) for p in launch["phases"]] == [
        ("weight-read", 0.0, 60.0), ("ready", 60.0, 61.5)]
    assert launch["reported"] == {"loading_weights_s": 58.2} and launch["version"] == "0.11.0"
    rec, = doc["sections"]["reconciliation"]["launches"]
    assert rec["logged_peak"] == 42.0 and rec["peak_over_delivered"] == pytest.approx(42.0 / 10.5)
    verdict = {v["topic"]: v["verdict"] for v in doc["summary"]["verdicts"]}["Startup stalls"]
    assert verdict == "not classified"


def test_contract_field_of_wrong_type_names_the_file(tmp_path):
    from sparktriage.errors import InputError

    root = _run(tmp_path, {"L001": [10.0, 11.0]})
    (root / "launches" / "L001" / "stalls.json").write_text(json.dumps({"schema_version": 1, "kind": "sparktriage-stalls",
                                                                           "phases": [], "findings": {}}))
    with pytest.raises(InputError, match="launches/L001/stalls.json: field 'findings' must be list"):
        _doc(root)
