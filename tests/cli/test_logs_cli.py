"""`sparktriage logs`: the JSON contract, exit codes, inputs, the human view."""

from __future__ import annotations

import json
import subprocess
import sys
from pathlib import Path

import pytest

from sparktriage.cli.app import main

FIXTURES = Path(__file__).parent.parent / "fixtures" / "logs"
STARTUP = FIXTURES / "vllm-cpu-startup.log"
NGRAM = FIXTURES / "vllm-cpu-spec-ngram.log"
FAILED = FIXTURES / "vllm-cpu-default-kv-failure.log"


def run(argv: list[str], capsys) -> tuple[int, str, str]:
    with pytest.raises(SystemExit) as info:
        main(argv)
    out = capsys.readouterr()
    return info.value.code, out.out, out.err


def test_json_contract_of_logs(capsys):
    code, out, _ = run(["logs", str(NGRAM), "--json", "-", "--tz", "UTC", "--year", "2026"], capsys)
    assert code == 0
    doc = json.loads(out)
    assert doc["schema_version"] == 1 and doc["version"] == "0.32.0"
    for phase in doc["phases"]:
        assert set(phase) >= {"name", "start", "end", "duration_s"}
    assert doc["phases"][0] == {**doc["phases"][0], "name": "resolve",
                                "start": "2026-11-29T20:59:45.000+00:00",
                                "end": "2026-11-29T20:59:58.000+00:00", "duration_s": 13.0}
    assert set(doc["reported"]) <= {"loading_weights_s", "model_loading_s", "model_loading_gib",
                                    "torch_compile_s", "graph_capture_s", "init_engine_s",
                                    "init_engine_compilation_s"}
    assert doc["reported"] == {"loading_weights_s": 0.01, "init_engine_s": 2.16}
    for key in ("generation", "prompt"):
        assert set(doc["throughput"][key]) == {"windows", "mean", "mean_active", "peak"}
    assert doc["throughput"]["generation"] == {"windows": 2, "mean": 204.85, "mean_active": 409.7,
                                               "peak": 409.7}
    spec = doc["spec_decode"]
    assert set(spec) >= {"windows", "mean_acceptance_length", "accepted", "drafted", "per_position"}
    assert (spec["windows"], spec["accepted"], spec["drafted"]) == (1, 2384, 3504)
    assert spec["mean_acceptance_length"] == pytest.approx(1 + 2384 / (2384 / 2.014), abs=1e-3)
    assert spec["per_position"] == [0.851, 0.622, 0.541]
    assert doc["kernels"] == [] and doc["errors"] == []


def test_failed_start_exits_1_with_errors(capsys, tmp_path):
    target = tmp_path / "out" / "logs.json"
    code, out, err = run(["logs", str(FAILED), "--json", str(target), "--tz", "UTC"], capsys)
    assert code == 1
    doc = json.loads(target.read_text())
    assert doc["errors"][0]["time"].endswith("+00:00")
    assert doc["errors"][0]["text"].startswith("WorkerProc failed to start. | ValueError: Available memory")
    assert "startup FAILED" in out and "startup failed during engine_start" in out


def test_human_view_and_several_nodes(capsys):
    code, out, _ = run(["logs", f"head={STARTUP}", f"worker={NGRAM}"], capsys)
    assert code == 0
    assert "Startup phases" in out and "init_engine" in out
    assert "generation throughput over 6 windows" in out


def test_bad_inputs_are_one_line_usage_errors(capsys, tmp_path):
    code, _, err = run(["logs", str(tmp_path / "nope.log")], capsys)
    assert code == 2 and err.strip() == f"error: {tmp_path / 'nope.log'}: no such file"
    code, _, err = run(["logs", str(STARTUP), "--tz", "Mars/Olympus"], capsys)
    assert code == 2 and "unknown time zone" in err and "Traceback" not in err
    code, _, err = run(["logs"], capsys)
    assert code == 2


def test_stdin_and_binary_garbage_never_traceback():
    garbage = bytes(range(256)) * 1000 + b"\n\xff\xfe(APIServer pid=1) INFO 99-99 99:99:99 [x.py:1] \x1b[31m"
    out = subprocess.run([sys.executable, "-m", "sparktriage", "logs", "-", "--json", "-"],
                         input=garbage, capture_output=True, timeout=120)
    # not a vLLM log: the same one-line refusal as `stalls` (tests/cli/test_same_verdict.py)
    assert out.returncode == 2, out.stderr
    assert b"Traceback" not in out.stderr
    assert out.stderr == b"error: -: no timed log lines (is this a vLLM log?)\n"


def test_json_into_a_device_or_a_pipe_writes_into_it_and_never_replaces_it(capsys, tmp_path):
    """`--json /dev/null` must leave /dev/null a device: the atomic write (a temporary file
    renamed over the target) is for regular files only. A private null device and a FIFO stand
    in for the real ones, so a regression cannot break the machine."""
    import os
    import stat
    import threading

    null = tmp_path / "null"
    try:
        os.mknod(null, 0o666 | stat.S_IFCHR, os.makedev(1, 3))
    except PermissionError:
        pytest.skip("making a device needs root")
    code, _, err = run(["logs", str(NGRAM), "--json", str(null), "--tz", "UTC"], capsys)
    assert code == 0, err
    assert stat.S_ISCHR(null.lstat().st_mode) and not (tmp_path / "null.tmp").exists()

    fifo = tmp_path / "fifo"
    os.mkfifo(fifo)
    got: list[bytes] = []
    reader = threading.Thread(target=lambda: got.append(fifo.read_bytes()))
    reader.start()
    code, _, err = run(["logs", str(NGRAM), "--json", str(fifo), "--tz", "UTC"], capsys)
    reader.join(timeout=30)
    assert code == 0, err
    assert stat.S_ISFIFO(fifo.lstat().st_mode)
    assert json.loads(got[0])["version"] == "0.32.0"
