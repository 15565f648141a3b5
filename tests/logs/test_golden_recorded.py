"""Golden tests on logs the test bed recorded from real vLLM 0.32 CPU runs (line records with
receive times; recorded once by provision/record_logs.py and committed), and on the same runs as
plain text (what a user would paste), which must read the same way apart from time resolution."""

from __future__ import annotations

import json
from pathlib import Path

import pytest

from sparktriage.metrics.prometheus import metrics_window, parse_text
from sparktriage.logs.scan import analyze_inputs
from sparktriage.logs.sources import BytesSource

FIXTURES = Path(__file__).parent.parent / "fixtures"
RECORDED = FIXTURES / "logs" / "recorded"


def doc_of(name: str) -> dict:
    return analyze_inputs([str(RECORDED / f"{name}.lines.jsonl")])


def plain_doc_of(name: str) -> dict:
    text = "".join(json.loads(line)["line"] + "\n" for line in (RECORDED / f"{name}.lines.jsonl").open())
    return analyze_inputs([BytesSource("plain", "n", False, data=text.encode())])


def test_plain_run():
    doc = doc_of("plain")
    assert doc["version"] == "0.32.0"
    assert doc["startup"]["complete"] and doc["startup"]["attempts"] == 1
    assert [p["name"] for p in doc["phases"]] == ["resolve", "engine_start", "distributed_init",
                                                  "weight_read", "post_load", "kv_profiling", "ready"]
    phases = doc["phases"]
    assert all(a["end"] == b["start"] for a, b in zip(phases, phases[1:]))  # contiguous
    assert doc["startup"]["startup_s"] == pytest.approx(sum(p["duration_s"] for p in phases), abs=0.01)
    assert set(doc["reported"]) == {"loading_weights_s", "init_engine_s"}
    assert doc["time_basis"]["sources"]["receive"] == doc["counts"]["events"]
    gen = doc["throughput"]["generation"]
    assert gen["windows"] >= 1 and gen["peak"] > 0
    assert doc["spec_decode"] is None and doc["errors"] == []
    assert doc["shards"][0]["complete"] and doc["storage"]["prefetch"] == "disabled"
    assert not [f for f in doc["findings"] if f["severity"] == "error"]


def test_plain_text_reads_like_the_records_up_to_one_second():
    records, plain = doc_of("plain"), plain_doc_of("plain")
    assert [p["name"] for p in plain["phases"]] == [p["name"] for p in records["phases"]]
    assert plain["reported"] == records["reported"]
    assert plain["throughput"]["generation"] == records["throughput"]["generation"]
    assert plain["startup"]["startup_s"] == pytest.approx(records["startup"]["startup_s"], abs=2.0)


def test_ngram_run_log_totals_equal_metrics_deltas():
    doc = doc_of("ngram")
    assert doc["config"]["speculative"]["method"] == "ngram"
    assert doc["config"]["speculative"]["num_speculative_tokens"] == 3
    spec = doc["spec_decode"]
    metrics = metrics_window(parse_text((FIXTURES / "metrics" / "ngram-before.prom").read_text()),
                             parse_text((FIXTURES / "metrics" / "ngram-after.prom").read_text()))
    exact = metrics["spec_decode"]
    assert spec["accepted"] == exact["accepted_tokens"]
    assert spec["drafted"] == exact["draft_tokens"]
    assert spec["drafts_estimated"] == pytest.approx(exact["drafts"], rel=0.01)
    assert spec["mean_acceptance_length"] == pytest.approx(exact["mean_acceptance_length"], abs=0.01)
    assert spec["per_position"] == pytest.approx(exact["per_position"], abs=0.005)
    assert len(spec["per_position"]) == 3
    # generation tokens of the log's window: rate x window length, the length bracketed because
    # the line before it was hidden (idle) and vLLM's 10 s loop drifts longer under load
    windows = [w for w in doc["throughput"]["windows"] if w["generation"] > 0]
    assert len(windows) == 1 and windows[0]["start_estimated"]
    rate = windows[0]["generation"]
    assert 10.0 * rate <= metrics["generation_tokens"] <= 15.0 * rate


def test_killed_worker_after_startup():
    doc = doc_of("killed-worker")
    assert doc["startup"]["complete"]
    codes = {f["code"]: f for f in doc["findings"]}
    assert "engine-died" in codes and codes["engine-died"]["severity"] == "error"
    texts = [e["text"] for e in doc["errors"]]
    assert any("died unexpectedly" in t for t in texts)
    assert any("EngineDeadError" in t for t in texts)


def test_failed_start_in_weight_loading():
    doc = doc_of("failed-start")
    st = doc["startup"]
    assert st["failed"] and not st["complete"] and st["current_phase"] == "weight_read"
    assert st["failure"] == "WorkerProc failed to start."
    assert any("SafetensorError" in e["text"] for e in doc["errors"])
    assert doc["findings"][0]["code"] == "startup-failed"
