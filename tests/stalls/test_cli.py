"""`sparktriage stalls` and `sparktriage rules check` as a user runs them (real process)."""

from __future__ import annotations

import json
import shutil
import subprocess
import sys
from pathlib import Path

import pytest

REPO = Path(__file__).resolve().parents[2]
LOGS = REPO / "tests" / "fixtures" / "logs"


def _run(*args: str, cwd: Path = REPO) -> subprocess.CompletedProcess:
    return subprocess.run([sys.executable, "-m", "sparktriage", *args], cwd=cwd,
                          capture_output=True, text=True, timeout=120)


def test_healthy_log_exits_zero():
    result = _run("stalls", str(LOGS / "vllm-cpu-startup-eager.log"), "--json", "-")
    assert result.returncode == 0, result.stderr
    doc = json.loads(result.stdout)
    assert doc["findings"] == [] and doc["kind"] == "sparktriage-stalls"
    assert "No stall or failure" in result.stderr


def test_failure_log_exits_one_with_cause():
    result = _run("stalls", str(LOGS / "vllm-cpu-default-kv-failure.log"))
    assert result.returncode == 1
    assert "uma-memory-accounting" in result.stdout
    assert "fix:" in result.stdout


FIELD = REPO / "tests" / "stalls" / "field"


def test_warmup_budget_flag_changes_the_verdict_on_a_recorded_warmup():
    """Field case 20 (vllm-project/vllm PR 39910): a 108 s profiling/warmup run vLLM reports
    on a CPU server is healthy within the default 180 s warmup budget, a stall within 60 s."""
    log = str(FIELD / "20-cpu-warmup-shm-s390x.log")
    default = _run("stalls", log, "--json", "-")
    assert default.returncode == 0, default.stderr
    assert json.loads(default.stdout)["params"]["warmup_s"] == 180.0
    tight = _run("stalls", log, "--warmup", "60", "--json", "-")
    assert tight.returncode == 1, tight.stderr
    doc = json.loads(tight.stdout)
    assert doc["params"]["warmup_s"] == 60.0
    stalls = [f for f in doc["findings"] if f["kind"] == "stall"]
    assert [f["phase"] for f in stalls] == ["kv_profiling"]
    assert stalls[0]["duration_s"] > 100


@pytest.mark.parametrize("value", ["0", "-5", "abc", "nan"])
def test_bad_warmup_is_a_one_line_usage_error(value):
    result = _run("stalls", str(FIELD / "20-cpu-warmup-shm-s390x.log"), "--warmup", value)
    assert result.returncode == 2, result.stderr
    assert len(result.stderr.strip().splitlines()) == 1, result.stderr
    assert "--warmup" in result.stderr and "Traceback" not in result.stderr


@pytest.mark.slow
def test_bad_inputs_are_one_line_errors(tmp_path):
    (tmp_path / "garbage.log").write_bytes(b"\x00\xff" * 100)
    (tmp_path / "bundle").mkdir()
    (tmp_path / "bundle" / "bundle.json").write_text('{"schema_version": 99, "kind": "sparktriage-bundle"}')
    for target in ("/nonexistent/x.log", str(tmp_path / "garbage.log"), str(tmp_path / "bundle")):
        result = _run("stalls", target)
        assert result.returncode == 2, (target, result.stderr)
        assert len(result.stderr.strip().splitlines()) == 1, result.stderr
        assert "Traceback" not in result.stderr


@pytest.mark.slow
def test_rules_check_passes_and_runs_fixtures():
    result = _run("rules", "check", "--json", "-")
    assert result.returncode == 0, result.stdout + result.stderr
    report = json.loads(result.stdout)
    assert report["rules"] == 15 and report["errors"] == 0
    assert report["fixtures"]["ran"] and report["fixtures"]["failed"] == 0
    assert report["fixtures"]["total"] >= 30


def test_rules_check_fails_on_a_broken_rule(tmp_path):
    folder = tmp_path / "rules"
    shutil.copytree(REPO / "rules", folder)
    path = folder / "nccl-hang.yaml"
    path.write_text(path.read_text().replace("decision: multi_rank and", "decision: multi_rank nd"))
    result = _run("rules", "check", "--rules", str(folder), "--no-fixtures")
    assert result.returncode == 1
    assert "nccl-hang.yaml:" in result.stdout and "decision" in result.stdout
    stalls = _run("stalls", str(LOGS / "vllm-cpu-startup.log"), "--rules", str(folder))
    assert stalls.returncode == 2 and "rules check" in stalls.stderr
