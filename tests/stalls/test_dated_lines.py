"""Logs that mix vLLM's year-less stamps with lines dated in full (Ray's own driver lines), read
long after the run: the dated line gives the year, and Ray's scheduler saying an actor is
pending is a placement wait. Real cores on files, as the CLI reads them."""

from __future__ import annotations

import datetime as dt
import os
from pathlib import Path

from sparktriage.logs.parser import parse_files
from sparktriage.stalls.analyze import analyze

LATER = dt.datetime(2026, 12, 1, 12, 0).timestamp()  # the paste written to a file much later

RAY_LOG = """\
INFO 02-26 11:14:53 llm_engine.py:234] Initializing a V0 LLM engine (v0.7.3) with config: model='m', tensor_parallel_size=4
2025-02-26 11:14:54,614 INFO worker.py:1636 -- Connecting to existing Ray cluster at address: 192.0.2.1:6379...
INFO 02-26 11:14:55 ray_utils.py:252] Creating a new placement group
2025-02-26 11:15:25,000 WARNING worker.py:2037 -- The actor or task with ID ffffffffffffffff88866c7d01000000 is pending and cannot currently be scheduled. It requires {GPU: 1.000000} for execution and {GPU: 1.000000} for placement
2025-02-26 11:16:25,000 WARNING worker.py:2037 -- The actor or task with ID ffffffffffffffff88866c7d01000000 is pending and cannot currently be scheduled. It requires {GPU: 1.000000} for execution and {GPU: 1.000000} for placement
"""


def _write(tmp_path: Path, text: str, mtime: float) -> Path:
    path = tmp_path / "server.log"
    path.write_text(text)
    os.utime(path, (mtime, mtime))
    return path


def test_a_dated_line_gives_the_year_less_stamps_its_year(tmp_path):
    events = [e for e in parse_files([_write(tmp_path, RAY_LOG, LATER)]) if e.t is not None]
    local = dt.datetime(2025, 2, 26, 11, 14, 53).timestamp()
    assert events[0].t == local  # 2025, not the file's 2026
    assert [round(e.t - local, 3) for e in events] == [0.0, 1.614, 2.0, 32.0, 92.0]


def test_a_recent_dated_line_leaves_a_live_logs_year_alone(tmp_path):
    # a live log: the dated line is days, not half a year, before the file's last write
    text = RAY_LOG.replace("2025-02-26", "2026-11-29").replace("02-26 ", "11-29 ")
    events = [e for e in parse_files([_write(tmp_path, text, LATER)]) if e.t is not None]
    assert events[0].t == dt.datetime(2026, 11, 29, 11, 14, 53).timestamp()


def test_rays_pending_actor_is_a_placement_wait(tmp_path, rules):
    document, _ = analyze(_write(tmp_path, RAY_LOG, LATER), rules)
    (stall,) = [f for f in document["findings"] if f["kind"] == "stall"]
    assert stall["phase"] == "distributed_init" and 85 <= stall["duration_s"] <= 92
    assert stall["verdict"]["id"] == "ray-placement-wait"
    assert "pg_unschedulable" in {e["condition"] for e in stall["verdict"]["evidence"]}
