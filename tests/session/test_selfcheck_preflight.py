"""The checks before measuring against a hostile server: every answer is read with a size cap,
a depth bound and a deadline, and what the server does is recorded, never raised."""

from __future__ import annotations

import http.server
import json
import threading
import time

import pytest

from sparktriage.session.findings import judge
from sparktriage.session.preflight import BODY_MAX_BYTES, PreflightSettings, run_preflight

MODELS = json.dumps({"object": "list", "data": [{"id": "m", "max_model_len": 4096,
                                                 "owned_by": "x", "root": "/models/m"}]}).encode()


@pytest.fixture
def hostile():
    """GET /v1/models answers; each POST answers what the test puts in `answers` (in turn)."""
    answers: list[tuple[int, bytes, float]] = []

    class Handler(http.server.BaseHTTPRequestHandler):
        protocol_version = "HTTP/1.1"

        def _send(self, status: int, body: bytes) -> None:
            self.send_response(status)
            self.send_header("Content-Type", "application/json")
            self.send_header("Content-Length", str(len(body)))
            self.end_headers()
            try:
                self.wfile.write(body)
            except (BrokenPipeError, ConnectionResetError):
                pass

        def do_GET(self):
            self._send(200, MODELS if self.path == "/v1/models" else b"[" * 100_000)

        def do_POST(self):
            self.rfile.read(int(self.headers.get("Content-Length") or 0))
            status, body, delay = answers.pop(0) if answers else (500, b"{}", 0.0)
            time.sleep(delay)
            self._send(status, body)

        def log_message(self, *args):
            pass

    server = http.server.ThreadingHTTPServer(("127.0.0.1", 0), Handler)
    server.daemon_threads = True
    threading.Thread(target=server.serve_forever, daemon=True).start()
    try:
        yield answers, f"http://127.0.0.1:{server.server_address[1]}"
    finally:
        server.shutdown()
        server.server_close()


def test_deep_nesting_and_a_huge_body_are_recorded_not_raised(hostile):
    answers, url = hostile
    answers.append((200, b"[" * 200_000, 0.0))
    doc = run_preflight(PreflightSettings(url, metrics=None, answer_deadline_s=10))
    assert doc["server"] == {"models": [{"id": "m", "max_model_len": 4096, "owned_by": "x",
                                         "root": "/models/m"}], "version": None}
    ready = doc["readiness"]
    assert ready["outcome"] == "bad_body" and ready["reason"] == "the answer is not a JSON object"
    assert doc["fields"] is None  # nothing answered, so no field check
    (finding,) = judge(doc, None, [], None, None)
    assert finding["id"] == "not-ready" and "not a JSON object" in finding["text"]


def test_an_answer_past_the_size_cap_is_cut(hostile):
    answers, url = hostile
    answers.append((200, b"x" * (BODY_MAX_BYTES + 10), 0.0))
    ready = run_preflight(PreflightSettings(url, metrics=None))["readiness"]
    assert ready["outcome"] == "bad_body" and ready["reason"] == "answer larger than 1024 KiB"


def test_a_slow_answer_past_the_deadline_is_no_answer(hostile):
    answers, url = hostile
    answers.append((200, b"{}", 3.0))
    start = time.monotonic()
    doc = run_preflight(PreflightSettings(url, metrics=None, answer_deadline_s=0.5))
    assert time.monotonic() - start < 2.5
    assert doc["readiness"]["outcome"] == "no_answer"
    assert judge(doc, None, [], None, None)[0]["id"] == "no-answer"


def test_an_answer_naming_another_model_without_finish_reason(hostile):
    answers, url = hostile
    answer = {"model": "other", "choices": [{"message": {"content": "ready"}}]}
    answers += [(200, json.dumps(answer).encode(), 0.0), (422, b'{"detail": "extra field"}', 0.0)]
    doc = run_preflight(PreflightSettings(url, metrics=None))
    assert doc["fields"]["verdict"] == "rejected"
    assert {f["id"] for f in judge(doc, None, [], None, None)} == {"not-ready", "wrong-model"}
