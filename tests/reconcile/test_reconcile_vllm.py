"""Reconciliation on a real vLLM CPU run: `sparktriage bench --metrics --log` against the shared
test-bed server, then the live server log parsed as a golden (plain vLLM 0.32, receive times)."""

from __future__ import annotations

import json
from datetime import datetime

import pytest

from sparktriage.cli.app import main
from sparktriage.logs.scan import analyze_inputs
from sparktriage.store.documents import read_records

pytestmark = pytest.mark.vllm


def _run(argv: list[str]) -> int:
    with pytest.raises(SystemExit) as exit_info:
        main(argv)
    return exit_info.value.code


def server_rate_bound(records: list[dict]) -> float:
    """Tokens per second the server can have produced at most: the best end-to-end rate seen."""
    return max(sum(len(c.get("ids") or ()) for c in r["chunks"]) / r["t_end"]
               for r in records if r.get("t_end"))


def test_bench_reconciles_delivered_tokens_with_metrics_and_log(vllm_server, tmp_path):
    out = tmp_path / "run"
    lines = str(vllm_server.lines_path)
    code = _run(["bench", "--endpoint", vllm_server.base_url, "--requests", "24",
                 "--max-tokens", "256", "--metrics", vllm_server.base_url + "/metrics",
                 "--log", lines, "--log-wait", "30", "--out", str(out),
                 "--json", str(tmp_path / "bench.json")])
    assert code == 0
    launch = out / "launches" / "L001"
    doc = json.loads((launch / "reconcile.json").read_text())
    assert doc["schema_version"] == 1 and doc["kind"] == "reconcile"
    records = list(read_records(launch / "requests.jsonl"))
    bench = json.loads((tmp_path / "bench.json").read_text())
    assert bench["reconcile"]["verdict"] == doc["verdict"]

    # metrics: the counter rose by exactly the tokens delivered in each workload's window
    delivered_total = sum(len(ids) for r in records for c in r["chunks"] if (ids := c.get("ids")))
    assert doc["delivered"]["tokens"] == delivered_total == len(records) * 256
    metrics = doc["metrics"]
    assert [w["workload"] for w in metrics["windows"]] == ["code", "prose"]
    for window in metrics["windows"]:
        assert window["generation_tokens"] == window["delivered_tokens"] == 25 * 256
        assert window["requests_finished"] == {"length": 25.0}
    assert metrics["difference_tokens"] == 0
    scrapes = list(read_records(launch / "metrics" / "scrapes.jsonl"))
    assert [s["when"] for s in scrapes] == ["before", "after", "before", "after"]
    assert all((launch / "metrics" / s["file"]).exists() for s in scrapes)

    # log: every stats window inside the protocol window agrees with the tokens that arrived
    log = doc["log"]
    assert log["windows"], "stats windows overlapping the run"
    inside = [w for w in log["windows"] if w["inside_protocol_fraction"] >= 0.9]
    for w in inside or log["windows"]:  # a fast machine may finish inside two windows
        assert w["verdict"] == "consistent", w
        assert abs(w["logged_tokens"] - w["delivered_tokens"]) <= w["tolerance_tokens"]
    seen = sum(w["delivered_tokens"] for w in log["windows"])
    # vLLM logs a window only while its engine loop runs, so tokens after the last stats line
    # may never be logged; the windows must cover every token that arrived before it
    last_end = max(datetime.fromisoformat(w["end"]).timestamp() for w in log["windows"])
    before_end = sum(len(c["ids"]) for r in records for c in r["chunks"]
                     if c.get("ids") and r["sent_unix"] + c["t"] <= last_end)
    assert 0.97 * before_end <= seen <= delivered_total
    assert delivered_total - before_end <= 12 * server_rate_bound(records)  # one 10 s interval
    codes = {r["code"] for r in doc["reasons"]}
    assert {"metrics_match", "log_windows", "peak_ratio"} <= codes
    assert doc["ratio_log_peak_to_delivered_mean"] == pytest.approx(
        log["peak_tok_s"] / doc["delivered"]["decode_tok_s_mean"], abs=1e-3)
    # the verdict is explained by the numbers it gives
    decode, server = doc["delivered"]["decode_tok_s_mean"], metrics["server_decode_tok_s"]
    assert server and server > 0
    if doc["verdict"] == "bursty_delivery":  # a loaded client machine: tokens arrive in bursts
        assert decode > 1.5 * server
    else:
        assert doc["verdict"] in ("consistent", "idle_in_log_windows")
        assert decode == pytest.approx(server, rel=0.5)


def test_live_server_log_golden(vllm_server):
    """The shared server's own log (line records): a complete 0.32 eager startup."""
    doc = analyze_inputs([str(vllm_server.lines_path)])
    assert doc["version"] == "0.32.0"
    assert doc["startup"]["complete"] and not doc["startup"]["failed"]
    names = [p["name"] for p in doc["phases"]]
    assert names[0] == "resolve" and names[-1] == "ready"
    assert {"engine_start", "weight_read", "post_load"} <= set(names)
    assert "compile" not in names  # --enforce-eager
    assert doc["reported"]["loading_weights_s"] >= 0
    assert doc["reported"]["init_engine_s"] > 0
    assert doc["time_basis"]["sources"].get("receive", 0) > 0
    assert doc["config"]["enforce_eager"] is True
    assert doc["kv_cache"]["tokens"] > 0
    assert not [f for f in doc["findings"] if f["severity"] == "error"]
