"""Reconciliation on constructed runs with exact ground truth (a simulated server's records)."""

from __future__ import annotations

from pathlib import Path

import pytest

from sparktriage.metrics.prometheus import Scrape, delta, metrics_window, parse_text
from sparktriage.reconcile.windows import delivered_from_records, reconcile
from sparktriage.logs.series import StatsWindow

METRICS = Path(__file__).parent.parent / "fixtures" / "metrics"
T0 = 1_800_000_000.0


def record(sent: float, tokens_per_chunk: list[int], gap: float = 0.05, *, warmup=False,
           ids=True, ttft=0.1) -> dict:
    chunks = []
    for i, n in enumerate(tokens_per_chunk):
        chunk = {"t": ttft + i * gap, "text": "x" * n, "finish": None, "usage": None, "lp": None,
                 "ids": list(range(n)) if ids else None}
        chunks.append(chunk)
    total = sum(tokens_per_chunk)
    return {"type": "request", "workload": "w", "index": 0, "warmup": warmup, "sent_unix": sent,
            "status": "ok", "reason": None, "chunks": chunks,
            "final_usage": {"completion_tokens": total}, "t_end": ttft + len(chunks) * gap,
            "max_tokens": total, "ignore_eos": True}


def steady_run(n: int = 10, per_request: int = 100, gap: float = 0.05, pause: float = 0.0) -> list[dict]:
    """n single-stream requests back to back: 20 tok/s per chunk gap 0.05 s, one token a chunk."""
    out, t = [], T0
    for i in range(n):
        r = record(t, [1] * per_request, gap, warmup=(i == 0))
        out.append(r)
        t += r["t_end"] + pause
    return out


def windows_from(records: list[dict], interval: float, factor: float = 1.0, start: float = T0) -> list:
    """The stats windows a correct server would log (rate = tokens in window / interval)."""
    delivered = delivered_from_records(records)
    end = max(a.t for a in delivered.arrivals)
    out, t = [], start
    while t < end + interval:
        tokens = sum(a.tokens for a in delivered.arrivals if t < a.t <= t + interval)
        w = StatsWindow(t + interval, "0", 0.0, round(factor * tokens / interval, 1), "INFO", "n",
                        start=t, parts={"running": 1})
        out.append(w)
        t += interval
    return out


def test_consistent_run_with_exact_metrics():
    records = steady_run()
    delivered = delivered_from_records(records)
    assert delivered.tokens == 1000 and delivered.chunks == 1000
    metrics = [{"workload": "w", "start": T0 - 1, "end": T0 + 60, "generation_tokens": 1000.0,
                "delivered_tokens": 1000, "requests_finished": {"length": 10.0}}]
    doc = reconcile(delivered, metrics, windows_from(records, 10.0), log_edge_s=0.25)
    assert doc["verdict"] == "consistent"
    codes = [r["code"] for r in doc["reasons"]]
    assert "metrics_match" in codes and "log_windows" in codes
    inside = [w for w in doc["log"]["windows"] if w["inside_protocol_fraction"] >= 0.999]
    assert inside and all(w["verdict"] == "consistent" for w in inside)
    assert doc["delivered"]["decode_tok_s_mean"] == pytest.approx(20.0, rel=1e-6)
    assert doc["ratio_log_peak_to_delivered_mean"] == pytest.approx(1.0, abs=0.02)


def test_a_burst_across_a_window_edge_is_not_called_undelivered():
    """A loaded client receives 1.8 s of one request's tokens in one burst just after a log
    window's end: the server produced them on both sides of the edge, so the window before it
    is within tolerance; the same shortfall with no burst over the edge is not."""
    server = steady_run()
    windows = windows_from(server, 10.0)  # what the server really produced, window by window
    edge, held = T0 + 20.0, (T0 + 18.5, T0 + 20.3)

    def client(records: list[dict], burst: bool) -> list[dict]:
        out = []
        for r in records:
            r = {**r, "chunks": [dict(c) for c in r["chunks"]]}
            for c in r["chunks"]:
                if held[0] <= r["sent_unix"] + c["t"] <= held[1]:
                    # burst: held back and delivered at once after the edge; else lost before it
                    c["t"] = held[1] - r["sent_unix"] if burst else c["t"]
                    if not burst:
                        c["ids"], c["text"] = [], ""
            out.append(r)
        return out

    def window_before_edge(doc: dict) -> dict:
        (row,) = [w for w in doc["log"]["windows"] if abs(_unix(w["end"]) - edge) < 1e-6]
        return row

    bursty = reconcile(delivered_from_records(client(server, True)), None, windows, log_edge_s=0.25)
    row = window_before_edge(bursty)
    assert row["logged_tokens"] - row["delivered_tokens"] == pytest.approx(30, abs=1)
    assert row["tolerance_tokens"] >= 36 and row["verdict"] == "consistent", row
    short = reconcile(delivered_from_records(client(server, False)), None, windows, log_edge_s=0.25)
    row = window_before_edge(short)
    assert row["tolerance_tokens"] <= 12.5 and row["verdict"] == "log_counts_undelivered", row


def _unix(value) -> float:
    if isinstance(value, (int, float)):
        return float(value)
    import datetime as dt
    return dt.datetime.fromisoformat(value).timestamp()


def test_log_that_counts_tokens_the_client_never_got():
    records = steady_run()
    doc = reconcile(delivered_from_records(records), None, windows_from(records, 10.0, factor=1.46),
                    log_edge_s=0.25)
    assert doc["verdict"] == "log_counts_undelivered"
    assert doc["ratio_log_peak_to_delivered_mean"] == pytest.approx(1.46, abs=0.03)
    assert "did not receive" in [r for r in doc["reasons"]
                                 if r["code"] == "peak_window_undelivered"][0]["text"]


def test_idle_between_requests_dilutes_the_log():
    records = steady_run(n=6, per_request=40, pause=4.0)  # 2 s of decode, 4 s of idle
    doc = reconcile(delivered_from_records(records), None, windows_from(records, 10.0),
                    log_edge_s=0.25)
    assert doc["verdict"] == "idle_in_log_windows"
    rows = doc["log"]["windows"]
    assert all(r["verdict"] == "consistent" for r in rows if r["inside_protocol_fraction"] >= 0.999)
    assert doc["ratio_log_peak_to_delivered_mean"] < 0.5


def test_metrics_show_tokens_that_never_arrived_and_chunk_counting():
    records = steady_run(n=3)
    delivered = delivered_from_records(records)
    metrics = [{"workload": "w", "start": T0 - 1, "end": T0 + 60, "generation_tokens": 320.0,
                "delivered_tokens": 300, "requests_finished": {"length": 2.0, "abort": 1.0}}]
    doc = reconcile(delivered, metrics, None)
    assert doc["verdict"] == "client_received_fewer"
    assert "1 requests were aborted" in doc["reasons"][0]["text"]
    # no per-chunk token counts, three-token chunks: the client counts chunks
    chunked = [record(T0, [3] * 50, ids=False) for _ in range(2)]
    for r in chunked:
        r["final_usage"] = None
    doc = reconcile(delivered_from_records(chunked), None, None)
    assert doc["verdict"] == "chunks_counted"
    spec = [record(T0, [3] * 50)]
    doc = reconcile(delivered_from_records(spec), None, None)
    assert doc["delivered"]["tokens_per_chunk"] == 3.0
    assert any(r["code"] == "multi_token_chunks" and "33%" in r["text"] for r in doc["reasons"])


def test_no_overlap_and_no_data():
    records = steady_run(n=2)
    far = [StatsWindow(T0 + 10_000, "0", 0.0, 20.0, "INFO", "n", start=T0 + 9990)]
    assert reconcile(delivered_from_records(records), None, far)["verdict"] == "no_overlap"
    assert reconcile(delivered_from_records(records), None, None)["verdict"] == "not_measured"


def test_counter_deltas_sum_engines_and_detect_resets():
    before = parse_text('vllm:generation_tokens_total{engine="0",model_name="m"} 100.0\n'
                        'vllm:generation_tokens_total{engine="1",model_name="m"} 50.0\n')
    after = parse_text('vllm:generation_tokens_total{engine="0",model_name="m"} 160.0\n'
                       'vllm:generation_tokens_total{engine="1",model_name="m"} 70.0\n')
    assert delta(before, after, "vllm:generation_tokens_total").value == 80.0
    assert delta(before, after, "vllm:generation_tokens_total", engine="1").value == 20.0
    reset = parse_text('vllm:generation_tokens_total{engine="0",model_name="m"} 5.0\n')
    d = delta(before, reset, "vllm:generation_tokens_total")
    assert (d.value, d.reset) == (5.0, True)
    assert delta(before, after, "vllm:missing_total").value is None
    with pytest.raises(Exception, match="not a Prometheus metrics page"):
        parse_text("vllm:generation_tokens_total{engine=0 nonsense\n")


def test_real_metrics_pages_of_the_test_bed():
    """Scrapes of the real vLLM CPU server around 12 requests of 96 tokens (provision/record_logs.py)."""
    a = parse_text((METRICS / "plain-before.prom").read_text())
    b = parse_text((METRICS / "plain-after.prom").read_text())
    window = metrics_window(a, b)
    assert window["generation_tokens"] == 12 * 96
    assert window["requests_finished"] == {"length": 12.0}
    assert window["histograms"]["vllm:request_generation_tokens"]["sum"] == 12 * 96
    assert window["spec_decode"] is None
    assert isinstance(a, Scrape)


def test_real_spec_decode_metrics_give_acceptance_from_deltas():
    a = parse_text((METRICS / "ngram-before.prom").read_text())
    b = parse_text((METRICS / "ngram-after.prom").read_text())
    spec = metrics_window(a, b)["spec_decode"]
    assert spec["drafts"] > 0 and spec["accepted_tokens"] <= spec["draft_tokens"]
    assert spec["mean_acceptance_length"] == pytest.approx(1 + spec["accepted_tokens"] / spec["drafts"], abs=1e-4)
    assert len(spec["per_position"]) == 3
    assert sum(spec["per_position"]) == pytest.approx(spec["accepted_tokens"] / spec["drafts"], abs=1e-3)


def test_tokens_arriving_in_bursts_are_not_believed():
    """A loaded client reads a 2 s stream in 50 ms: its decode rate is 20x the server's."""
    records, t = [], T0
    for i in range(8):
        r = record(t, [1] * 100, gap=0.0005, ttft=2.0, warmup=(i == 0))
        records.append(r)
        t += r["t_end"]
    delivered = delivered_from_records(records)
    server_rate = 100 / 2.05
    log = [StatsWindow(T0 + 10 * (k + 1), "0", 0.0,
                       round(sum(a.tokens for a in delivered.arrivals
                                 if T0 + 10 * k < a.t <= T0 + 10 * (k + 1)) / 10, 1),
                       "INFO", "n", start=T0 + 10 * k, parts={"running": 1}) for k in range(2)]
    doc = reconcile(delivered, None, log, log_edge_s=0.25)
    assert doc["verdict"] == "bursty_delivery"
    assert doc["delivered"]["decode_tok_s_mean"] > 10 * server_rate
    metrics = [{"workload": "w", "start": T0, "end": t, "generation_tokens": 800.0,
                "delivered_tokens": 800, "requests_finished": {"length": 8.0},
                "histograms": {"vllm:request_time_per_output_token_seconds":
                               {"count": 8.0, "sum": 8 / server_rate, "mean": 1 / server_rate}}}]
    doc = reconcile(delivered, metrics, None)
    assert doc["verdict"] == "bursty_delivery"
    assert doc["metrics"]["server_decode_tok_s"] == pytest.approx(server_rate, rel=1e-3)
    assert "per-request decode rate" in [r["text"] for r in doc["reasons"]
                                         if r["code"] == "bursty_delivery"][0]
