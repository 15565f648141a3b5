"""`selfcheck`'s judgement of `/metrics`: speculative acceptance read window by window from the
pages a launch kept, requests already running, KV preemptions during the check.

The pages are vLLM 0.32's own (tests/fixtures/metrics/ngram-after.prom, scraped from the real
CPU build) with the counters set to the values each case needs."""

from __future__ import annotations

import http.server
import json
import re
import threading
from pathlib import Path

import pytest

from sparktriage.session.findings import judge
from sparktriage.session.preflight import metrics_snapshot
from sparktriage.session.windows import acceptance_windows

PAGE = (Path(__file__).parents[1] / "fixtures" / "metrics" / "ngram-after.prom").read_text()


def page(drafts=0, drafted=0, accepted=0, running=0, preemptions=0) -> str:
    values = {"spec_decode_num_drafts_total": drafts, "spec_decode_num_draft_tokens_total": drafted,
              "spec_decode_num_accepted_tokens_total": accepted, "num_requests_running": running,
              "num_preemptions_total": preemptions}
    text = PAGE
    for name, value in values.items():
        text, n = re.subn(rf"^(vllm:{name}\{{[^}}]*\}}) \S+$", rf"\g<1> {float(value)}", text, flags=re.M)
        assert n == 1, name
    return text


def kept(folder: Path, pages: list[str]) -> Path:
    """A launch's metrics folder as the protocol's recorder leaves it."""
    folder.mkdir()
    names = ("before-code", "after-code", "before-prose", "after-prose")
    with open(folder / "scrapes.jsonl", "w") as index:
        for n, (text, name) in enumerate(zip(pages, names), 1):
            when, workload = name.split("-")
            (folder / f"{n:03d}-{name}.prom").write_text(text)
            index.write(json.dumps({"n": n, "when": when, "workload": workload,
                                    "file": f"{n:03d}-{name}.prom", "t": float(n), "error": None}) + "\n")
    return folder


def test_acceptance_that_collapses_in_a_later_window_is_a_finding(tmp_path):
    folder = kept(tmp_path / "metrics", [page(), page(304, 904, 640), page(310, 922, 650),
                                         page(610, 1822, 664)])
    windows = acceptance_windows(folder)
    assert [w["acceptance_rate"] for w in windows] == [0.708, 0.5556, 0.0156]
    (finding,) = judge(None, None, windows, None, None)
    assert finding["id"] == "acceptance-collapse" and finding["severity"] == "finding"
    assert "fell to 0.016 in window 3 of 3 (best earlier window 0.708" in finding["text"]


def test_steady_acceptance_is_no_finding(tmp_path):
    folder = kept(tmp_path / "metrics", [page(), page(304, 904, 640), page(310, 922, 650),
                                         page(610, 1822, 1290)])
    windows = acceptance_windows(folder)
    assert windows[-1]["acceptance_rate"] == pytest.approx(0.711, abs=1e-3)
    assert judge(None, None, windows, None, None) == []


def test_a_window_with_few_drafts_is_not_judged(tmp_path):
    folder = kept(tmp_path / "metrics", [page(), page(304, 904, 640), page(306, 910, 640)])
    assert judge(None, None, acceptance_windows(folder), None, None) == []


@pytest.fixture
def metrics_server():
    """A plain HTTP server answering /metrics with whatever page the test sets."""
    served = {"page": page()}

    class Handler(http.server.BaseHTTPRequestHandler):
        def do_GET(self):
            body = served["page"].encode()
            self.send_response(200)
            self.send_header("Content-Type", "text/plain; version=0.0.4")
            self.send_header("Content-Length", str(len(body)))
            self.end_headers()
            self.wfile.write(body)

        def log_message(self, *args):
            pass

    server = http.server.ThreadingHTTPServer(("127.0.0.1", 0), Handler)
    thread = threading.Thread(target=server.serve_forever, daemon=True)
    thread.start()
    try:
        yield served, f"http://127.0.0.1:{server.server_address[1]}/metrics"
    finally:
        server.shutdown()
        server.server_close()


def test_busy_server_and_preemptions_during_the_check(metrics_server):
    served, url = metrics_server
    served["page"] = page(running=3, preemptions=2)
    before = metrics_snapshot(url, None)
    assert before["running"] == 3 and before["preemptions"] == 2
    assert before["config_info"]["vllm:cache_config_info"]["num_gpu_blocks"] == "8192"
    served["page"] = page(running=0, preemptions=7)
    after = metrics_snapshot(url, None)
    found = {f["id"]: f for f in judge({"readiness": None, "metrics": before}, None, [], after, None)}
    assert found["busy-server"]["severity"] == "caveat"
    assert found["busy-server"]["text"].startswith("3 request(s) running and 0 waiting")
    assert found["preemptions"]["severity"] == "finding"
    assert found["preemptions"]["text"].startswith("5 KV-cache preemption(s) during the check")


def test_an_idle_server_without_preemptions_is_clean(metrics_server):
    _, url = metrics_server
    snap = metrics_snapshot(url, None)
    found = judge({"readiness": None, "metrics": snap}, None, [], metrics_snapshot(url, None), None)
    assert {f["id"] for f in found} == {"not-ready"}  # only: no model was asked here


def test_an_unreadable_metrics_page_is_recorded_not_raised():
    snap = metrics_snapshot("http://127.0.0.1:9/metrics", None)
    assert snap["error"].startswith("cannot")
