"""`sparktriage bench` end to end against the simulator: JSON contract, kill and rebuild, secrets."""

from __future__ import annotations

import json
import os
import signal
import subprocess
import sys
import time

import pytest

from bench_contract import check_bench_document


def cli(*args, env=None, timeout=180) -> subprocess.CompletedProcess:
    return subprocess.run([sys.executable, "-m", "sparktriage", *args], capture_output=True, text=True,
                          timeout=timeout, env=env)


def test_json_to_stdout_follows_the_contract(sim, tmp_path):
    result = cli("bench", "--endpoint", sim.base_url, "--requests", "3", "--max-tokens", "40",
                 "--warmup", "1", "--out", str(tmp_path / "run"), "--json", "-")
    assert result.returncode == 0, result.stderr
    doc = json.loads(result.stdout)  # stdout carries the JSON only
    check_bench_document(doc)
    assert doc["endpoint"] == sim.base_url and doc["model"] == "sim"
    assert [w["name"] for w in doc["workloads"]] == ["code", "prose"]
    for w in doc["workloads"]:
        assert [r["output_tokens"] for r in w["requests"]] == [40] * 4
        assert [r["warmup"] for r in w["requests"]] == [True, False, False, False]
        assert w["summary"]["decode_tok_s"]["n"] == 3
    assert "Delivered tokens: sim at" in result.stderr  # the table went to stderr
    bench_json = json.loads((tmp_path / "run" / "launches" / "L001" / "bench.json").read_text())
    assert bench_json == doc


def test_a_killed_bench_keeps_what_it_measured_and_can_be_rebuilt(sim, tmp_path):
    run = tmp_path / "run"
    path = tmp_path / "slow.yaml"
    path.write_text("name: slow\nprompt: hello\nmax_tokens: 20\nrequests: 50\nwarmup: 1\n"
                    "extra_body:\n  sim: {ttft_s: 0.05, gap_s: 0.01}\n")
    process = subprocess.Popen([sys.executable, "-m", "sparktriage", "bench", "--endpoint", sim.base_url,
                                "--workload", str(path), "--out", str(run)],
                               stdout=subprocess.DEVNULL, stderr=subprocess.DEVNULL)
    records = run / "launches" / "L001" / "requests.jsonl"
    deadline = time.monotonic() + 60
    try:
        while time.monotonic() < deadline:
            lines = records.read_text().splitlines() if records.exists() else []
            if len(lines) >= 5:
                break
            time.sleep(0.05)
        os.kill(process.pid, signal.SIGKILL)
    finally:
        process.wait(timeout=10)
    assert not (run / "launches" / "L001" / "bench.json").exists()
    measured = [json.loads(l) for l in records.read_text().splitlines() if l.strip()]
    assert len(measured) >= 5 and all(r["status"] == "ok" and len(r["chunks"]) == 20 for r in measured)

    result = cli("bench", "--rebuild", str(run), "--json", "-")
    assert result.returncode == 0, result.stderr
    doc = json.loads(result.stdout)
    check_bench_document(doc)
    (slow,) = doc["workloads"]
    assert len(slow["requests"]) == len(measured)
    assert slow["summary"]["decode_tok_s"]["n"] == len(measured) - 1  # one warm-up excluded
    assert (run / "launches" / "L001" / "bench.json").exists()


@pytest.mark.slow
def test_api_key_from_the_environment_and_never_written(start_sim, tmp_path):
    keyed = start_sim({"api_key": "s3cret-value"})
    env = dict(os.environ, OPENAI_API_KEY="s3cret-value")
    result = cli("bench", "--endpoint", keyed.base_url, "--requests", "1", "--max-tokens", "8",
                 "--workload", "code", "--out", str(tmp_path / "a"), env=env)
    assert result.returncode == 0, result.stderr
    result = cli("bench", "--endpoint", keyed.base_url, "--api-key", "s3cret-value", "--requests", "1",
                 "--max-tokens", "8", "--workload", "code", "--out", str(tmp_path / "b"))
    assert result.returncode == 0, result.stderr
    for run in ("a", "b"):
        for file in (tmp_path / run).rglob("*"):
            if file.is_file():
                assert "s3cret-value" not in file.read_text(errors="replace"), file
    command = json.loads((tmp_path / "b" / "run.json").read_text())["command"]
    assert command[command.index("--api-key") + 1].startswith("REDACTED-flag-value-")
