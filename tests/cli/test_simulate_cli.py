"""`sparktriage simulate` from the command line: options shape the stream, trace file, shutdown."""

from __future__ import annotations

import json
import signal
import subprocess
import sys
import time

import httpx


def start(tmp_path, *args):
    ready = tmp_path / "ready"
    process = subprocess.Popen([sys.executable, "-m", "sparktriage", "simulate", "--port", "0",
                                "--ready-file", str(ready), *args],
                               stdout=subprocess.PIPE, stderr=subprocess.PIPE, text=True)
    deadline = time.monotonic() + 30
    while not ready.exists():
        assert process.poll() is None, process.stderr.read()
        assert time.monotonic() < deadline
        time.sleep(0.02)
    return process, ready.read_text().strip()


def test_options_shape_the_stream_and_the_trace_file_records_it(tmp_path):
    trace = tmp_path / "trace.jsonl"
    process, url = start(tmp_path, "--model", "mine", "--rate", "2000", "--tokens-per-chunk", "1,4",
                         "--no-token-ids", "--trace", str(trace))
    try:
        body = {"model": "mine", "prompt": "x", "max_tokens": 11, "stream": True, "return_token_ids": True,
                "stream_options": {"include_usage": True, "continuous_usage_stats": True}}
        text = httpx.post(url + "/v1/completions", json=body, trust_env=False, timeout=30).text
        assert httpx.get(url + "/v1/models", trust_env=False).json()["data"][0]["id"] == "mine"
    finally:
        process.send_signal(signal.SIGTERM)
        _, err = process.communicate(timeout=10)
    assert process.returncode == 0
    assert f"simulator listening on {url} (models: mine)" in err
    chunks = [json.loads(line[6:]) for line in text.splitlines() if line.startswith("data: {")]
    assert all("token_ids" not in c["choices"][0] for c in chunks if c["choices"])
    usage = [c["usage"]["completion_tokens"] for c in chunks if c["choices"]]
    assert usage == [1, 5, 6, 10, 11]  # chunks of 1, 4, 1, 4, 1 tokens
    (entry,) = [json.loads(l) for l in trace.read_text().splitlines()]
    assert [e["count"] for e in entry["events"] if e["kind"] == "tokens"] == [1, 4, 1, 4, 1]
    assert entry["model"] == "mine" and entry["outcome"] == "complete"


def test_schedule_file_and_scenario_options_do_not_mix(tmp_path):
    path = tmp_path / "s.yaml"
    path.write_text("scenarios:\n  a: {}\n")
    result = subprocess.run([sys.executable, "-m", "sparktriage", "simulate", "--schedule", str(path),
                             "--rate", "5"], capture_output=True, text=True, timeout=60)
    assert result.returncode == 2
    assert result.stderr.strip().endswith(
        "error: scenario options cannot be combined with --schedule (put them in the file)")


def test_the_customer_faults_from_the_command_line(tmp_path):
    """--fixed-tokens 0, --reasoning-only, --strict-fields (unknown fields too), --never-answer,
    and /tokenize: the faults `selfcheck`'s matrix uses, from the command line."""
    process, url = start(tmp_path, "--fixed-tokens", "0", "--reasoning-only", "--strict-fields")
    try:
        chat = {"model": "sim", "messages": [{"role": "user", "content": "hi"}], "max_tokens": 8}
        empty = httpx.post(url + "/v1/chat/completions", json=chat, trust_env=False, timeout=30).json()
        refused = httpx.post(url + "/v1/chat/completions", json={**chat, "made_up": 1}, trust_env=False,
                             timeout=30)
        counted = httpx.post(url + "/tokenize", json={"model": "sim", "prompt": " t5 t9 t12"},
                             trust_env=False, timeout=30).json()
    finally:
        process.send_signal(signal.SIGTERM)
        process.communicate(timeout=10)
    assert empty["choices"][0]["message"]["reasoning_content"] == ""
    assert empty["choices"][0]["message"]["content"] is None
    assert empty["choices"][0]["finish_reason"] == "stop" and empty["usage"]["completion_tokens"] == 0
    assert refused.status_code == 400 and "made_up" in refused.text
    assert counted["count"] == 3

    second = tmp_path / "second"
    second.mkdir()
    process, url = start(second, "--never-answer")
    try:
        try:
            httpx.post(url + "/v1/completions", json={"model": "sim", "prompt": "x", "max_tokens": 4},
                       trust_env=False, timeout=0.5)
            answered = True
        except httpx.ReadTimeout:
            answered = False
        models = httpx.get(url + "/v1/models", trust_env=False, timeout=5).status_code
    finally:
        process.send_signal(signal.SIGTERM)
        process.communicate(timeout=10)
    assert not answered and models == 200 and process.returncode == 0
