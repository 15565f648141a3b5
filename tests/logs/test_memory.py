"""A 1 GB log streams through `sparktriage logs` in bounded memory.

The log (a real startup, then serving windows of real access and stats lines) is generated on
the fly into the analyser's stdin, so no gigabyte touches the disk. The analyser runs in its own
process; its peak RSS on 1 GB must stay within a few MiB of its peak on 16 MB, and every stats
window must have been read.
"""

from __future__ import annotations

import json
import subprocess
import sys
from pathlib import Path

import pytest

FIXTURES = Path(__file__).parent.parent / "fixtures" / "logs"
CHILD = """
import json, resource, sys
from sparktriage.logs.scan import analyze_inputs
doc = analyze_inputs(["-"])
print(json.dumps({"windows": doc["throughput"]["generation"]["windows"],
                  "complete": doc["startup"]["complete"],
                  "rss_mb": resource.getrusage(resource.RUSAGE_SELF).ru_maxrss / 1024}))
"""


def _stream(size: int) -> tuple[dict, int]:
    startup = (FIXTURES / "vllm-cpu-startup.log").read_text().split("\n")
    ready = next(i for i, line in enumerate(startup) if "Application startup complete" in line)
    access = [line for line in startup if line.startswith("INFO:     127.0.0.1")]
    stats = [line for line in startup if "Avg generation throughput" in line][1]
    window = "\n".join(access[i % len(access)] for i in range(300)) + "\n" + stats + "\n"
    block = (window * 64).encode()
    child = subprocess.Popen([sys.executable, "-c", CHILD], stdin=subprocess.PIPE,
                             stdout=subprocess.PIPE)
    head = ("\n".join(startup[: ready + 1]) + "\n").encode()
    child.stdin.write(head)
    written, windows = len(head), 0
    while written < size:
        child.stdin.write(block)
        written += len(block)
        windows += 64
    child.stdin.close()
    out = child.stdout.read()
    assert child.wait(timeout=600) == 0
    return json.loads(out), windows


@pytest.mark.slow
def test_one_gigabyte_log_streams_in_bounded_memory():
    small, small_windows = _stream(16 << 20)
    big, big_windows = _stream(1 << 30)
    assert (small["windows"], big["windows"]) == (small_windows, big_windows)
    assert big["complete"] and big_windows > 40_000
    assert big["rss_mb"] - small["rss_mb"] < 48, (small, big)


FULL_CHILD = """
import json, resource
from sparktriage.logs.parser import iter_events
n = sum(1 for _ in iter_events(["-"]))
print(json.dumps({"windows": n, "complete": True,
                  "rss_mb": resource.getrusage(resource.RUSAGE_SELF).ru_maxrss / 1024}))
"""


@pytest.mark.slow
def test_every_event_streams_in_bounded_memory(monkeypatch):
    """The full event stream (parse_files/iter_events, for other stages) is bounded too."""
    monkeypatch.setattr(sys.modules[__name__], "CHILD", FULL_CHILD)
    small, _ = _stream(4 << 20)
    big, _ = _stream(64 << 20)
    assert big["windows"] > 10 * small["windows"]
    assert big["rss_mb"] - small["rss_mb"] < 24, (small, big)
