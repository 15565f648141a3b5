"""The Ray backend's pure parts: the refusal sentence and the Ray watcher's bounded log reads."""

from __future__ import annotations

import subprocess
import sys

from sparktriage.launch import ray


def test_refusal_sentence_is_found_in_vllms_line():
    line = ("(EngineCore pid=21970) ERROR 12-01 15:01:23 [core.py:1510] ValueError: current "
            "platform cpu does not support ray.")
    assert ray.refusal(line) == "current platform cpu does not support ray."
    assert ray.refusal("Connected to Ray cluster.") is None


def test_watcher_forwards_new_lines_and_stops_at_its_cap(tmp_path):
    logs = tmp_path / "session_latest" / "logs"
    logs.mkdir(parents=True)
    (logs / "raylet.out").write_bytes(b"".join(b"line %03d\n" % i for i in range(100)))
    (logs / "gcs_server.out").write_bytes(b"first\npartial-without-newline")
    argv = [sys.executable, "-c", ray.WATCH_SOURCE, "/nonexistent/ray", str(logs),
            "raylet.out,gcs_server.out,missing.log", "", "0.2", "90"]
    proc = subprocess.Popen(argv, stdout=subprocess.PIPE, stdin=subprocess.DEVNULL)
    try:
        out, _ = proc.communicate(timeout=1.5)
    except subprocess.TimeoutExpired:
        proc.kill()
        out, _ = proc.communicate()
    lines = out.decode().splitlines()
    raylet = [line for line in lines if line.startswith("ray-watch raylet.out | ")]
    # 90 bytes cap: the first ten 9-byte lines, then the cap notice, once
    assert raylet == [f"ray-watch raylet.out | line {i:03d}" for i in range(10)] + [
        "ray-watch raylet.out | (capped at 90 bytes)"]
    # only complete lines; the partial one waits for its newline
    assert [line for line in lines if "gcs_server.out" in line] == ["ray-watch gcs_server.out | first"]
