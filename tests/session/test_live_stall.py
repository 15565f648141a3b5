"""Live stall verdict on a real reproduction: the throttled-read fault of the stall tests
(tests/stalls/test_reproductions.py::test_cold_storage: a 280 MB checkpoint on a cold loop
volume read through a blkio limit of 8 MB/s), started by the real CPU vLLM under the real
collectors, with the session's live stall watcher on the bundle as it is written. The live
classifier must name cold-storage within 60 s of the stall's onset; the verdict after the
start is the authoritative one and must agree."""

from __future__ import annotations

import json
import os
import shutil
import subprocess
import threading
from pathlib import Path

import pytest

from sparktriage.session.live import StallWatcher
from sparktriage.stalls.analyze import analyze
from sparktriage.testbed.faults import LoopVolume, ReadThrottle
from sparktriage.testbed.repro import ServeRun, record

pytestmark = [pytest.mark.vllm, pytest.mark.slow]
REPO = Path(__file__).resolve().parents[2]


def test_live_classifier_names_cold_storage_within_60_s(testbed, tmp_path):
    if os.geteuid() != 0:
        pytest.fail("the stall reproductions need root (cgroup v1 and loop devices), as CI has")
    model = tmp_path / "big"
    subprocess.run([str(testbed.python), str(REPO / "provision" / "make_big_model.py"),
                    str(testbed.model()), str(model), "--mb", "280", "--shards", "4"],
                   check=True, capture_output=True, timeout=300)
    bundle = tmp_path / "bundle"
    seen: list[dict] = []
    with LoopVolume(tmp_path, 450) as volume:
        shutil.copytree(model, volume.mount / "model")
        volume.make_cold()
        with ReadThrottle(volume.device, 8_000_000) as throttle:
            run = ServeRun(str(volume.mount / "model"), tmp_path / "scratch", wrap=throttle.wrap,
                           max_s=480)
            watcher = StallWatcher(bundle, tmp_path / "live-stalls.jsonl",
                                   lambda event, details: seen.append(details))
            with watcher:
                _, result = record(testbed, run, bundle)
    assert result["outcome"] == "ready", result
    live = [v for v in seen if v["cause"] == "cold-storage"]
    assert live, seen
    first = live[0]
    assert first["kind"] == "stall" and first["phase"] == "weight_read"
    assert first["t"] - first["start"] <= 60.0, first  # named within 60 s of the onset
    on_disk = [json.loads(l) for l in (tmp_path / "live-stalls.jsonl").read_text().splitlines()]
    assert on_disk[:len(seen)] == seen  # every live verdict recorded with its time
    document, _ = analyze(bundle)  # the authoritative verdict agrees
    assert [f["verdict"]["id"] for f in document["findings"]] == ["cold-storage"]
