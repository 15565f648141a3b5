"""`bench --out R` then `probe --out R --launch L001` share one launch; a command that fails
before it measured anything leaves no run directory behind."""

from __future__ import annotations

import json
import subprocess
import sys

import pytest


def _cli(*argv: str, timeout: float = 300) -> subprocess.CompletedProcess:
    return subprocess.run([sys.executable, "-m", "sparktriage", *argv], capture_output=True,
                          text=True, timeout=timeout)


@pytest.mark.slow
def test_bench_then_probe_record_into_one_launch(sim, tmp_path):
    run = tmp_path / "run"
    bench = _cli("bench", "--endpoint", sim.base_url, "--model", "sim", "--requests", "2",
                 "--max-tokens", "16", "--warmup", "0", "--workload", "code", "--out", str(run))
    assert bench.returncode == 0, bench.stderr
    probe = _cli("probe", "--endpoint", sim.base_url, "--model", "sim", "--out", str(run),
                 "--launch", "L001")
    assert probe.returncode in (0, 1), probe.stderr  # a verdict (the simulator is no model)
    launches = sorted(p.name for p in (run / "launches").iterdir())
    assert launches == ["L001"]
    folder = run / "launches" / "L001"
    assert json.loads((folder / "bench.json").read_text())["workloads"][0]["name"] == "code"
    assert json.loads((folder / "probe.json").read_text())["verdict"] in (
        "healthy", "suspect", "garbage")
    again = _cli("probe", "--endpoint", sim.base_url, "--model", "sim", "--out", str(run),
                 "--launch", "L001")
    assert again.returncode == 2
    assert "already has probe-requests.jsonl, probe.json" in again.stderr
    missing = _cli("bench", "--endpoint", sim.base_url, "--out", str(run), "--launch", "L007")
    assert missing.returncode == 2 and "no launch L007 (launches here: L001)" in missing.stderr


def test_launch_needs_out(sim):
    result = _cli("bench", "--endpoint", sim.base_url, "--launch", "L001")
    assert result.returncode == 2
    assert result.stderr.strip() == ("error: --launch names a launch of an existing run: give "
                                     "--out RUN_DIR too")


def test_failing_before_measuring_leaves_no_run_directory(tmp_path):
    for command in ("bench", "probe"):
        out = tmp_path / command
        result = _cli(command, "--endpoint", "http://127.0.0.1:9", "--out", str(out))
        assert result.returncode == 3, result.stderr
        assert not out.exists()


def test_an_existing_run_directory_is_left_as_it_was(tmp_path):
    out = tmp_path / "kept"
    out.mkdir()
    (out / "notes.txt").write_text("mine")
    result = _cli("bench", "--endpoint", "http://127.0.0.1:9", "--out", str(out))
    assert result.returncode == 3
    assert (out / "notes.txt").read_text() == "mine"
