"""`selfcheck` against the simulator with one fault at a time (the fault matrix, docs/selfcheck.md).

Each case serves one simulated model from a thread of this process, runs the check's core with a
small budget (one workload, `--quick`, no probe, Markdown report only) and pins the finding that
names the fault and the exit decision; the healthy cases must come out clean. The real vLLM
case is tests/cli/test_selfcheck.py (the shared server)."""

from __future__ import annotations

import json

import pytest

from sparktriage.errors import EndpointError
from sparktriage.progress import quiet
from sparktriage.report.readable import significant
from sparktriage.session.selfcheck import (SelfcheckSettings, check_endpoint, has_findings,
                                           run_selfcheck)
from sparktriage.sim.thread import SimThread
from sparktriage.store.rundir import RunDir

FAST = {"ttft_s": 0.005, "gap_s": 0.0005}


def _check(tmp_path, scenario: dict, server: dict | None = None, **options) -> dict:
    config = {"scenarios": {"sim": {**FAST, **scenario}}, **(server or {})}
    with SimThread(config) as sim:
        settings = SelfcheckSettings(endpoint=sim.url, quick=True, probe=False, formats="md",
                                     metrics=None, workloads=("code",), **options)
        check_endpoint(settings)
        return run_selfcheck(RunDir.create(tmp_path / "run", ["test"]), settings, quiet)


def _ids(doc: dict, severity: str = "finding") -> set[str]:
    return {f["id"] for f in doc["findings"] if f["severity"] == severity}


def _requests(doc: dict) -> list[dict]:
    bench = json.loads((tmp_run(doc) / "bench.json").read_text())
    return [r for w in bench["workloads"] for r in w["requests"]]


def tmp_run(doc: dict):
    from pathlib import Path
    return Path(doc["run"]) / "launches" / doc["launch"]


def test_healthy_server_exits_0_with_delivered_tokens(tmp_path):
    doc = _check(tmp_path, {})
    assert _ids(doc) == set() and not has_findings(doc), doc["findings"]
    assert _ids(doc, "caveat") == {"fields-unchecked"}  # the simulator, like vLLM, accepts anything
    ready = doc["readiness"]
    assert ready["outcome"] == "answered" and ready["api"] == "chat"
    assert ready["finish_reason"] == "length" and ready["model_answered"] == "sim"
    assert ready["content_chars"] > 0 and ready["reasoning_chars"] == 0
    assert doc["bench"]["workloads"]["code"]["delivered_tokens"] == [128, 128]
    assert all(r["max_gap_s"] < 1.0 for r in _requests(doc))
    page = (tmp_path / "run" / "report" / "report.md").read_text()
    assert "128 output tokens delivered per request, one request at a time" in page


def test_strict_fields_server_has_no_field_caveat(tmp_path):
    doc = _check(tmp_path, {"strict_fields": True})
    assert doc["fields"]["verdict"] == "rejected" and doc["fields"]["status"] == 400
    assert "fields-unchecked" not in _ids(doc, "caveat")


def test_one_token_answers_are_short(tmp_path):
    doc = _check(tmp_path, {"eos_after": 1, "honour_ignore_eos": False})
    assert "short-answers" in _ids(doc) and has_findings(doc)
    text = next(f["text"] for f in doc["findings"] if f["id"] == "short-answers")
    assert "6 of 6 requests delivered fewer tokens than asked" in text and "(1 of 128)" in text
    assert doc["bench"]["workloads"]["code"]["delivered_tokens"] == [1, 1]
    page = (tmp_path / "run" / "report" / "report.md").read_text()
    assert "1 output token delivered per request (128 asked)" in page
    assert "128 output tokens per request" not in page
    report = json.loads((tmp_path / "run" / "report" / "report.json").read_text())
    (client,) = [f for f in report["page_one"]["findings"] if f["cause"] == "short-answers"]
    assert client["area"] == "correctness" and client["observed"] == text


def test_empty_answers(tmp_path):
    doc = _check(tmp_path, {"fixed_tokens": 0})
    assert {"empty-answer", "empty-answers"} <= _ids(doc) and has_findings(doc)


def test_never_answering_stops_at_the_deadline(tmp_path):
    doc = _check(tmp_path, {"faults": {"never_answer": True}}, answer_deadline_s=0.5)
    assert _ids(doc) == {"no-answer"} and has_findings(doc)
    assert doc["launch"] is None and doc["steps"] == [] and doc["bench"] is None
    assert doc["readiness"]["elapsed_s"] < 5
    assert json.loads((tmp_path / "run" / "selfcheck.json").read_text())["findings"] == doc["findings"]


def test_a_pause_mid_stream_longer_than_the_bound(tmp_path):
    doc = _check(tmp_path, {"faults": {"stalls": [{"at": 40, "seconds": 0.4}]}}, max_pause_s=0.25)
    assert _ids(doc) == {"mid-stream-pause"} and has_findings(doc)
    gaps = [r["max_gap_s"] for r in _requests(doc)]
    assert all(0.38 < g < 1.5 for g in gaps), gaps
    page = (tmp_path / "run" / "report" / "report.md").read_text()
    assert f"| Longest pause mid-stream | {significant(max(gaps), 2)} s |" in page


def test_a_short_pause_within_the_bound_is_no_finding(tmp_path):
    doc = _check(tmp_path, {"faults": {"stalls": [{"at": 40, "seconds": 0.1}]}}, max_pause_s=1.0)
    assert _ids(doc) == set()


@pytest.mark.parametrize("fault, words", [
    ({"error_at": 10}, "simulated engine failure"),
    ({"malformed_at": 10}, "malformed SSE"),
    ({"reset_at": 10}, "connection reset"),
])
def test_broken_streams_are_failed_requests(tmp_path, fault, words):
    doc = _check(tmp_path, {"faults": fault})
    assert "failed-requests" in _ids(doc) and has_findings(doc)
    text = next(f["text"] for f in doc["findings"] if f["id"] == "failed-requests")
    assert words in text


def test_no_usage_and_no_token_ids_are_recounted_through_tokenize(tmp_path):
    sources = {"token_ids": False, "logprobs": False, "continuous_usage": False, "final_usage": False}
    doc = _check(tmp_path, {"sources": sources, "tokens_per_chunk": 4})
    assert _ids(doc) == {"no-token-counts"} and has_findings(doc)
    assert "recount-differs" in _ids(doc, "caveat")  # 32 chunks with text, 128 tokens
    counts = json.loads((tmp_run(doc) / "selfcheck-findings.json").read_text())["recount"]
    assert {(c["counted"], c["tokenized"]) for c in counts} == {(32, 128)}


def test_no_counts_and_short_answers_are_found_through_tokenize(tmp_path):
    sources = {"token_ids": False, "logprobs": False, "continuous_usage": False, "final_usage": False}
    doc = _check(tmp_path, {"sources": sources, "eos_after": 3, "honour_ignore_eos": False})
    assert {"no-token-counts", "short-answers"} <= _ids(doc)


def test_multi_token_chunks_are_counted_exactly(tmp_path):
    doc = _check(tmp_path, {"tokens_per_chunk": (1, 4, 2)})
    assert _ids(doc) == set() and not has_findings(doc)
    assert doc["bench"]["workloads"]["code"]["delivered_tokens"] == [128, 128]


def test_reasoning_only_answers_are_a_blank_reply(tmp_path):
    doc = _check(tmp_path, {"answer_channel": "reasoning"})
    assert "reasoning-only" in _ids(doc) and has_findings(doc)
    assert doc["readiness"]["content_chars"] == 0 and doc["readiness"]["reasoning_chars"] > 0


def test_a_key_is_required(tmp_path):
    with pytest.raises(EndpointError):
        _check(tmp_path, {}, {"api_key": "s3cret"})
    doc = _check(tmp_path, {}, {"api_key": "s3cret"}, api_key="s3cret")
    assert _ids(doc) == set() and doc["readiness"]["outcome"] == "answered"


@pytest.mark.slow  # starts the simulated vLLM process: about 7 s
def test_speculative_acceptance_collapsing_mid_run_through_metrics(tmp_path):
    """The simulator as `vllm serve` with ngram depth 3 and `/metrics`: the first requests are
    accepted whole (4-token chunks), every later one refuses every draft (1-token chunks)."""
    import os
    import socket
    import subprocess
    import sys
    import time
    with socket.socket() as sock:
        sock.bind(("127.0.0.1", 0))
        port = sock.getsockname()[1]
    sequence = [{"tokens_per_chunk": 4}] * 7 + [{"tokens_per_chunk": 1}] * 60
    scenario = {"decode": {"rates": {3: 4000}, "ttft_s": 0.005}, "stream": {"sequence": sequence}}
    env = {k: v for k, v in os.environ.items() if not k.startswith("SPARKTRIAGE_SIM")}
    env["SPARKTRIAGE_SIM"] = json.dumps(scenario)
    spec = json.dumps({"method": "ngram", "num_speculative_tokens": 3})
    with open(tmp_path / "sim.log", "wb") as log:
        proc = subprocess.Popen([sys.executable, "-m", "sparktriage.sim.vllm", "serve", "/models/m",
                                 "--host", "127.0.0.1", "--port", str(port), "--served-model-name", "m",
                                 "--speculative-config", spec], stdout=log, stderr=log, env=env)
    try:
        deadline = time.monotonic() + 30
        while socket.socket().connect_ex(("127.0.0.1", port)) != 0:
            assert proc.poll() is None and time.monotonic() < deadline, (tmp_path / "sim.log").read_text()
            time.sleep(0.05)
        settings = SelfcheckSettings(endpoint=f"http://127.0.0.1:{port}", quick=True, probe=False,
                                     formats="md", workloads=("code",))
        doc = run_selfcheck(RunDir.create(tmp_path / "run", ["test"]), settings, quiet)
    finally:
        proc.terminate()
        proc.wait(10)
    assert _ids(doc) == {"acceptance-collapse"} and has_findings(doc), doc["findings"]
    windows = json.loads((tmp_run(doc) / "selfcheck-findings.json").read_text())["windows"]
    rates = [w["acceptance_rate"] for w in windows if w["draft_tokens"] >= 20]
    assert rates[0] > 0.5 and rates[-1] == 0.0, windows


@pytest.mark.slow  # a fresh interpreter per case: about 8-12 s each on the loaded machine
@pytest.mark.parametrize("scenario, code, line", [
    ({"faults": {"never_answer": True}}, 1, "FINDING no-answer: the readiness request"),
    ({}, 0, "CAVEAT fields-unchecked:"),
])
def test_the_command_exits_on_findings(tmp_path, scenario, code, line):
    import subprocess
    import sys
    with SimThread({"scenarios": {"sim": {**FAST, **scenario}}}) as sim:
        result = subprocess.run([sys.executable, "-m", "sparktriage", "selfcheck", "--endpoint", sim.url,
                                 "--quick", "--no-probe", "--no-metrics", "--workload", "code",
                                 "--format", "md", "--answer-deadline", "1", "--out", str(tmp_path / "run")],
                                capture_output=True, text=True, timeout=300)
    assert result.returncode == code, result.stderr[-2000:]
    assert line in result.stdout and "Traceback" not in result.stderr  # the summary is data
