"""The bench hooks on a simulated server: scrapes kept raw, a launch reconciled from its files."""

from __future__ import annotations

import datetime as dt
import http.server
import json
import os
import threading
import time

import pytest

from sparktriage.bench.metrics_recorder import MetricsRecorder, wait_for_log
from sparktriage.reconcile.launch import metric_windows, reconcile_launch
from sparktriage.store.documents import RecordWriter, read_records
from sparktriage.store.rundir import RunDir
from test_reconcile import T0, steady_run

UTC = dt.timezone.utc


class _Metrics(http.server.BaseHTTPRequestHandler):
    value = 0.0

    def do_GET(self):  # noqa: N802 - http.server's name
        body = (f'# TYPE vllm:generation_tokens counter\n'
                f'vllm:generation_tokens_total{{engine="0",model_name="m"}} {_Metrics.value}\n').encode()
        self.send_response(200)
        self.send_header("Content-Length", str(len(body)))
        self.end_headers()
        self.wfile.write(body)

    def log_message(self, *args):
        pass


@pytest.fixture
def metrics_server():
    server = http.server.ThreadingHTTPServer(("127.0.0.1", 0), _Metrics)
    thread = threading.Thread(target=server.serve_forever, daemon=True)
    thread.start()
    yield f"http://127.0.0.1:{server.server_address[1]}/metrics"
    server.shutdown()
    server.server_close()


def test_recorder_scrapes_around_each_workload_and_survives_failures(tmp_path, metrics_server):
    launch = RunDir.create(tmp_path / "run", ["t"]).next_launch()
    seen = []
    recorder = MetricsRecorder(metrics_server, launch)
    observe = recorder.observer(lambda event, details: seen.append(event))
    _Metrics.value = 100.0
    observe("capabilities", {"workload": "code"})
    _Metrics.value = 612.0
    observe("request", {"workload": "code", "index": 0, "total": 2})
    observe("request", {"workload": "code", "index": 1, "total": 2})
    broken = MetricsRecorder("http://127.0.0.1:9/metrics", launch)
    broken.take("before", "prose")
    records = list(read_records(launch.path / "metrics" / "scrapes.jsonl"))
    assert [(r["when"], r["workload"], r["error"] is None) for r in records] == [
        ("before", "code", True), ("after", "code", True), ("before", "prose", False)]
    assert seen == ["capabilities", "request", "request"]
    assert "612.0" in (launch.path / "metrics" / records[1]["file"]).read_text()
    windows = metric_windows(launch)
    assert windows[0]["generation_tokens"] == 512.0 and windows[0]["start"] < windows[0]["end"]
    assert windows[1]["error"] and windows[1]["generation_tokens"] is None


def test_scrapes_during_a_workload_leave_reconciliation_alone(tmp_path, metrics_server):
    launch = RunDir.create(tmp_path / "run", ["t"]).next_launch()
    recorder = MetricsRecorder(metrics_server, launch, every=2)
    observe = recorder.observer(lambda event, details: None)
    _Metrics.value = 100.0
    observe("capabilities", {"workload": "code"})
    for index in range(6):  # one warm-up, five measured
        _Metrics.value = 100.0 + 100 * index
        observe("request", {"workload": "code", "index": index, "total": 6,
                            "warmup": index == 0, "warmups": 1})
    records = list(read_records(launch.path / "metrics" / "scrapes.jsonl"))
    assert [r["when"] for r in records] == ["before", "during", "during", "after"]
    assert "300.0" in (launch.path / "metrics" / records[1]["file"]).read_text()  # 2 measured
    (window,) = metric_windows(launch)
    assert window["workload"] == "code" and window["generation_tokens"] == 500.0


def _stamp(t: float) -> str:
    return time.strftime("%m-%d %H:%M:%S", time.gmtime(t))


def test_launch_reconciled_from_its_files(tmp_path):
    launch = RunDir.create(tmp_path / "run", ["t"]).next_launch()
    records = steady_run()  # 10 requests x 100 tokens at 20 tok/s from T0
    with RecordWriter(launch.requests_path) as writer:
        for r in records:
            writer.append(r)
    end = T0 + sum(r["t_end"] for r in records)
    folder = launch.path / "metrics"
    folder.mkdir()
    page = 'vllm:generation_tokens_total{{engine="0",model_name="m"}} {}\n'
    (folder / "001-before-w.prom").write_text(page.format(5000.0))
    (folder / "002-after-w.prom").write_text(page.format(6000.0))
    with RecordWriter(folder / "scrapes.jsonl") as writer:
        writer.append({"n": 1, "when": "before", "workload": "w", "file": "001-before-w.prom",
                       "t": T0 - 0.5, "error": None, "url": "x"})
        writer.append({"n": 2, "when": "after", "workload": "w", "file": "002-after-w.prom",
                       "t": end + 0.5, "error": None, "url": "x"})
    lines = []
    for k in range(7):  # the server's windows, 10 s each, stamped in UTC at their ends
        a, b = T0 - 10 + 10 * k, T0 + 10 * k
        tokens = sum(1 for r in records for i, c in enumerate(r["chunks"])
                     if a < r["sent_unix"] + c["t"] <= b)
        lines.append(f"(APIServer pid=1) INFO {_stamp(b)} [loggers.py:1] Engine 000: Avg prompt "
                     f"throughput: 0.0 tokens/s, Avg generation throughput: {tokens / 10:.1f} tokens/s, "
                     f"Running: 1 reqs, Waiting: 0 reqs, GPU KV cache usage: 0.1%")
    log = tmp_path / "server.log"
    log.write_text("\n".join(lines) + "\n")
    os.utime(log, (end + 100, end + 100))  # written after its last line (the year comes from it)
    assert wait_for_log([str(log)], T0 + 50, 0, tz=UTC)
    assert not wait_for_log([str(log)], T0 + 600, 0.2, tz=UTC)
    doc = reconcile_launch(launch, [str(log)], tz=UTC)
    saved = json.loads((launch.path / "reconcile.json").read_text())
    assert saved["verdict"] == doc["verdict"] == "consistent"
    assert doc["metrics"]["generation_tokens"] == 1000.0 == doc["delivered"]["tokens"]
    inside = [w for w in doc["log"]["windows"] if w["inside_protocol_fraction"] >= 0.9]
    assert len(inside) >= 4 and all(w["verdict"] == "consistent" for w in inside)
    assert doc["log"]["windows"][0]["end"].endswith("+00:00")
