"""The same input gets the same verdict from every command that reads it."""

from __future__ import annotations

import subprocess
import sys

import pytest


def _run(*argv: str) -> subprocess.CompletedProcess:
    return subprocess.run([sys.executable, "-m", "sparktriage", *argv], capture_output=True,
                          text=True, timeout=120)


def test_a_file_that_is_not_a_vllm_log_is_refused_alike_by_logs_and_stalls(tmp_path):
    path = tmp_path / "notes.txt"
    path.write_text("shopping list\nmilk\neggs\n")
    logs, stalls = _run("logs", str(path)), _run("stalls", str(path))
    assert logs.returncode == stalls.returncode == 2
    expected = f"error: {path}: no timed log lines (is this a vLLM log?)"
    assert logs.stderr.strip() == stalls.stderr.strip() == expected
    assert logs.stdout == ""


@pytest.mark.slow
def test_logs_states_gaps_as_facts_and_leaves_the_stall_verdict_to_stalls(tmp_path):
    """A 70 s gap in weight loading: `logs` lists it under `silences` without a finding; only
    `stalls` judges it (here: a stall, with the same length)."""
    import json
    from pathlib import Path

    source = Path(__file__).parents[1] / "fixtures/logs/recorded/plain.lines.jsonl"
    records = [json.loads(line) for line in source.read_text().splitlines() if line.strip()]
    cut = next(i for i, r in enumerate(records) if "Starting to load model" in r["line"])
    for record in records[cut + 1:]:
        record["t"] += 70.0
    path = tmp_path / "gap.lines.jsonl"
    path.write_text("".join(json.dumps(r) + "\n" for r in records))
    logs = _run("logs", str(path), "--json", str(tmp_path / "logs.json"))
    stalls = _run("stalls", str(path), "--json", str(tmp_path / "stalls.json"))
    doc = json.loads((tmp_path / "logs.json").read_text())
    gap = max(doc["silences"], key=lambda s: s["duration_s"])
    assert 70.0 <= gap["duration_s"] < 72.0 and gap["phase"] == "weight_read"
    assert not [f for f in doc["findings"] if f["code"] == "silence"]
    assert "no log line for 7" in logs.stdout and "`sparktriage stalls` tells" in logs.stdout
    verdict = json.loads((tmp_path / "stalls.json").read_text())
    assert stalls.returncode == 1
    (finding,) = [f for f in verdict["findings"] if f["kind"] == "stall"]
    assert 70.0 <= finding["duration_s"] < 72.0
