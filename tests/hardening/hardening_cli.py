"""Helpers of the hardening tests (issue 16): the CLI as a user runs it."""

from __future__ import annotations

import subprocess
import sys
from pathlib import Path

REPO = Path(__file__).resolve().parents[2]
DOCUMENTED_EXITS = {0, 1, 2, 3, 130}


def cli(*args: str, timeout: float = 120, **kwargs) -> subprocess.CompletedProcess:
    return subprocess.run([sys.executable, "-m", "sparktriage", *args], capture_output=True,
                          text=True, timeout=timeout, **kwargs)


def one_error(result: subprocess.CompletedProcess) -> str:
    assert "Traceback" not in result.stderr + result.stdout, result.stderr
    assert "internal error" not in result.stderr, result.stderr
    errors = [line for line in result.stderr.splitlines() if line.startswith("error:")]
    assert len(errors) == 1, result.stderr
    return errors[0]
