"""Build the confusion table (variant x verdict, with the deciding numbers) from real runs.

Usage: .venv/bin/python provision/garbage/confusion.py

The variant tests (tests/probe/test_vllm_variants.py) probe every catalogue variant of the tiny
MoE model from its recording of real vLLM (provision/garbage/record.py makes them) and four of
them on real vLLM too; with SPARKTRIAGE_CONFUSION_OUT set they also write their rows to that
JSON file and rewrite the table in docs/garbage.md, and the fingerprint of the healthy model
(the baseline `sparktriage demo` can probe against) to
src/sparktriage/testbed/garbage/fingerprint.json. One code path for the tests and the published
table: what the table shows is what the tests asserted.
"""

from __future__ import annotations

import os
import subprocess
import sys
from pathlib import Path

ROOT = Path(__file__).resolve().parents[2]


def main() -> int:
    env = dict(os.environ, SPARKTRIAGE_CONFUSION_OUT=str(ROOT / "docs" / "garbage-confusion.json"),
               SPARKTRIAGE_CONFUSION_DOC=str(ROOT / "docs" / "garbage.md"),
               SPARKTRIAGE_FINGERPRINT_OUT=str(ROOT / "src" / "sparktriage" / "testbed" / "garbage" / "fingerprint.json"))
    argv = [sys.executable, "-m", "pytest", "-q", "-rA", str(ROOT / "tests" / "probe" / "test_vllm_variants.py")]
    return subprocess.call(argv, cwd=ROOT, env=env)


if __name__ == "__main__":
    sys.exit(main())
