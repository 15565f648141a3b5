"""`logs` and `stalls` on untimed pastes (issue 36), as a user runs them (real process).

An untimed excerpt is read, never refused whole: `stalls` reports its failures (the same count
as `logs`), never a stall, and says why; text that is no serving-stack log is refused alike by
both, one line, exit 2. Pastes and their expectations: tests/stalls/untimed/README.md (the logs side: tests/logs/test_untimed_excerpts.py).
"""

from __future__ import annotations

import json
import subprocess
import sys
from pathlib import Path

import pytest

REPO = Path(__file__).resolve().parents[2]
PASTES = Path(__file__).resolve().parent / "untimed"
LOGS_FAILURE_CODES = ("startup-failed", "engine-died")


def _run(*args: str) -> subprocess.CompletedProcess:
    return subprocess.run([sys.executable, "-m", "sparktriage", *args], cwd=REPO,
                          capture_output=True, text=True, timeout=120)


def _both(path: Path, tmp_path: Path) -> tuple[dict, int, str, dict, int, str]:
    logs = _run("logs", str(path), "--json", str(tmp_path / "logs.json"))
    stalls = _run("stalls", str(path), "--json", str(tmp_path / "stalls.json"))
    assert "Traceback" not in logs.stderr + stalls.stderr
    return (json.loads((tmp_path / "logs.json").read_text()), logs.returncode, logs.stdout,
            json.loads((tmp_path / "stalls.json").read_text()), stalls.returncode, stalls.stdout)


def _logs_failures(doc: dict) -> int:
    return sum(1 for f in doc["findings"] if f["code"] in LOGS_FAILURE_CODES)


def test_engine_dead_at_start_traceback(tmp_path):
    logs, logs_rc, _, stalls, stalls_rc, text = _both(
        PASTES / "engine-free-memory-traceback.txt", tmp_path)
    assert logs_rc == stalls_rc == 1  # findings (docs/exit-codes.md)
    assert _logs_failures(logs) == 1
    failures = [f for f in stalls["findings"] if f["kind"] == "failure"]
    assert len(failures) == 1 and len(stalls["findings"]) == 1  # no stall
    failure = failures[0]
    assert failure["verdict"]["id"] == "uma-memory-accounting"
    assert failure["errors"] == 2 == logs["errors_total"]  # the failure holds both errors
    assert (failure["start"], failure["end"], failure["duration_s"]) == (None, None, None)
    assert "Free memory on device (31.44/47.38 GiB)" in failure["reason"]
    assert all(item["t"] is None for item in failure["verdict"]["evidence"])
    assert stalls["summary"]["stalls"] == 0 and stalls["summary"]["failures"] == 1
    assert stalls["summary"]["healthy"] is False
    # untimed stated in the document and the output
    assert stalls["input"]["timed"] is False and stalls["excerpt"] is True
    assert "untimed" in {r["code"] for r in stalls["excerpt_detail"]["reasons"]}
    assert "stall durations cannot be judged" in text
    assert "untimed excerpt" in text
    assert logs["time_basis"]["timed"] is False


def test_untimed_load_oom_has_the_phase_its_lines_name_in_both(tmp_path):
    logs, logs_rc, _, stalls, stalls_rc, _ = _both(PASTES / "load-oom-traceback.txt", tmp_path)
    assert logs_rc == stalls_rc == 1
    assert _logs_failures(logs) == 1 == stalls["summary"]["failures"]
    assert stalls["findings"][0]["phase"] == "weight_read" == logs["errors"][0]["phase"]
    assert stalls["summary"]["stalls"] == 0


def test_untimed_hf_lock_wait_is_no_failure_and_no_stall(tmp_path):
    logs, logs_rc, _, stalls, stalls_rc, text = _both(PASTES / "hf-download-lock-wait.txt",
                                                       tmp_path)
    # the lock waits state 90 s, but with no time of its own the excerpt cannot show a stall
    assert logs_rc == stalls_rc == 0
    assert _logs_failures(logs) == 0 and stalls["findings"] == []
    assert stalls["summary"]["healthy"] is False and stalls["input"]["timed"] is False
    assert "stalls cannot be judged without times" in text


def test_untimed_nccl_error_paste(tmp_path):
    logs, logs_rc, _, stalls, stalls_rc, _ = _both(PASTES / "nccl-connect-error.txt", tmp_path)
    assert logs_rc == stalls_rc == 1
    assert _logs_failures(logs) == 1 == stalls["summary"]["failures"]
    assert stalls["summary"]["stalls"] == 0
    assert "DistBackendError: NCCL error" in stalls["findings"][0]["reason"]


@pytest.mark.parametrize("name", sorted(p.name for p in PASTES.glob("*.txt")))
def test_logs_and_stalls_agree_on_the_failure_count(name):
    from sparktriage.logs.scan import analyze_inputs
    from sparktriage.stalls.analyze import analyze
    path = PASTES / name
    logs = analyze_inputs([str(path)])
    stalls, _ = analyze(path)
    assert _logs_failures(logs) == stalls["summary"]["failures"]
    assert stalls["summary"]["errors"] + stalls["summary"]["errors_other"] == logs["errors_total"]


def test_prose_is_refused_alike_in_one_line(tmp_path):
    path = tmp_path / "prose.txt"
    path.write_text("We tried to start the server yesterday and it did not work.\n"
                    "Any idea what could be wrong? Thanks in advance.\n")
    logs, stalls = _run("logs", str(path)), _run("stalls", str(path))
    expected = f"error: {path}: no timed log lines (is this a vLLM log?)"
    assert logs.returncode == stalls.returncode == 2
    assert logs.stderr.strip() == stalls.stderr.strip() == expected
    assert logs.stdout == stalls.stdout == ""


ENGINE_DEAD = ("Traceback (most recent call last):\n"
               '  File "/usr/local/lib/python3.12/dist-packages/vllm/v1/engine/async_llm.py", '
               "line 420, in generate\n"
               "vllm.v1.engine.exceptions.EngineDeadError: EngineCore encountered an issue. "
               "See stack trace (above) for the root cause.\n")


@pytest.mark.parametrize("text,failures,codes", [
    # the server said it serves, then its engine died: one failure, while serving
    ('INFO:     127.0.0.1:40312 - "POST /v1/chat/completions HTTP/1.1" 200 OK\n' + ENGINE_DEAD,
     1, ["engine-died"]),
    # an error, then the start went on to serve: it ended nothing
    ("ValueError: bad\nINFO:     Application startup complete.\n", 0, []),
    # an engine death, then a server that serves: a start that failed, then one that worked
    ("RuntimeError: Engine core initialization failed. See root cause above.\n"
     "INFO:     Application startup complete.\n", 1, ["startup-failed"]),
])
def test_untimed_order_decides_as_in_a_timed_log(tmp_path, text, failures, codes):
    from sparktriage.logs.scan import analyze_inputs
    from sparktriage.stalls.analyze import analyze
    path = tmp_path / "paste.txt"
    path.write_text(text)
    logs = analyze_inputs([str(path)])
    stalls, _ = analyze(path)
    assert [f["code"] for f in logs["findings"] if f["code"] in LOGS_FAILURE_CODES] == codes
    assert stalls["summary"]["failures"] == failures
    assert stalls["summary"]["stalls"] == 0
    assert all(f["start"] is None for f in stalls["findings"])
