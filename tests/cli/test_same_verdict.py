"""The same input gets the same verdict from every command that reads it."""

from __future__ import annotations

import subprocess
import sys


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
