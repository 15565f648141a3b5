"""Lines → LogEvents: joining records, timing, inputs (files, NODE=, stdin, records, bundles)."""

from __future__ import annotations

import datetime as dt
import io
import json
import subprocess
import sys
import tarfile
from pathlib import Path

import pytest

from sparktriage.errors import InputError
from sparktriage.logs.clock import StampClock
from sparktriage.logs.parser import (
    ParseOptions,
    iter_events,
    iter_stream,
    parse_bytes,
    parse_files,
    parse_lines,
)
from sparktriage.logs.sources import split_lines

FIXTURES = Path(__file__).parent.parent / "fixtures" / "logs"
UTC = dt.timezone.utc


def unix(text: str) -> float:
    return dt.datetime.fromisoformat(text).replace(tzinfo=UTC).timestamp()


def test_real_failure_log_joins_multiline_records_and_tracebacks():
    events = parse_files([FIXTURES / "vllm-cpu-default-kv-failure.log"], tz=UTC, year=2026)
    worker = [e for e in events if e.message.startswith("WorkerProc failed to start.")]
    assert len(worker) == 1
    assert worker[0].message.count("\n") == 18  # 19 physical lines, one record
    assert worker[0].message.split("\n")[-1].startswith("ValueError: Available memory on node 0")
    assert (worker[0].process, worker[0].pid, worker[0].level) == ("VllmWorker-0", 31225, "ERROR")
    tracebacks = [e for e in events if e.kind == "traceback"]
    assert [e.message.split("\n")[-1][:30] for e in tracebacks] == [
        "Exception: WorkerProc initiali", "RuntimeError: Engine core init"]
    assert tracebacks[1].t == unix("2026-11-29T21:23:32")
    assert tracebacks[1].t_source == "inferred"


def test_logo_is_one_event_and_times_follow_the_stamps():
    events = parse_files([FIXTURES / "vllm-cpu-startup.log"], tz=UTC, year=2026)
    logo = [e for e in events if "version 0.32.0" in e.message]
    assert len(logo) == 1 and logo[0].message.count("\n") == 5
    stats = [e for e in events if "Avg generation throughput" in e.message]
    assert [e.t for e in stats] == [unix(f"2026-11-29T20:55:{s}") for s in (12, 22, 32, 42)]
    assert all(e.t_source == "log" for e in stats)
    # before any stamp: the first timed line's time (issue 36: untimed lines are read)
    assert events[0].t == events[1].t and events[0].t_source == "inferred"
    assert events[0].timed_by == events[1].line_no == 2
    # input order is kept
    assert [e.line_no for e in events] == sorted(e.line_no for e in events)


def test_line_records_use_receive_times_and_their_node(tmp_path):
    lines = [
        {"t": 1000.25, "node": "spark-02", "stream": "stdout",
         "line": "(APIServer pid=1) INFO 11-29 20:55:12 [loggers.py:335] Engine 000: Avg prompt "
                 "throughput: 1.0 tokens/s, Avg generation throughput: 2.0 tokens/s, Running: 1 reqs, "
                 "Waiting: 0 reqs, GPU KV cache usage: 0.1%"},
        {"t": 1001.5, "node": "spark-02", "stream": "stderr", "line": "INFO:     Application startup complete."},
    ]
    path = tmp_path / "server.log.lines.jsonl"
    path.write_text("".join(json.dumps(r) + "\n" for r in lines) + '{"t": 1002, "line": "torn')
    events = parse_files([path])
    assert [(e.t, e.t_source, e.node, e.stream) for e in events[:2]] == [
        (1000.25, "receive", "spark-02", "stdout"), (1001.5, "receive", "spark-02", "stderr")]
    assert len(events) == 3 and events[2].message.startswith('{"t": 1002')  # torn record kept as text
    named = parse_files([f"head={path}"])
    assert {e.node for e in named} == {"head"}


def test_several_files_merge_by_time_with_node_names(tmp_path):
    a = tmp_path / "spark-01.log"
    b = tmp_path / "spark-02.log"
    a.write_text("(Worker pid=1) INFO 11-29 10:00:00 [x.py:1] a0\n"
                 "(Worker pid=1) INFO 11-29 10:00:02 [x.py:1] a2\n")
    b.write_text("(Worker pid=2) INFO 11-29 10:00:01 [x.py:1] b1\n"
                 "(Worker pid=2) INFO 11-29 10:00:02 [x.py:1] b2\n")
    events = list(iter_events([a, f"worker={b}"], ParseOptions(tz=UTC, year=2026)))
    assert [(e.node, e.message) for e in events] == [
        ("spark-01", "a0"), ("worker", "b1"), ("spark-01", "a2"), ("worker", "b2")]


def test_bundle_folder_and_tarball(tmp_path):
    bundle = tmp_path / "bundle"
    for node in ("spark-01", "spark-02"):
        logs = bundle / "nodes" / node / "logs"
        logs.mkdir(parents=True)
        (logs / "server.lines.jsonl").write_text(json.dumps(
            {"t": 10.0 if node == "spark-01" else 5.0, "node": node, "stream": "stdout",
             "line": f"(Worker pid=3) INFO 11-29 10:00:00 [x.py:1] from {node}"}) + "\n")
    (bundle / "bundle.json").write_text("{}")
    events = parse_files([bundle])
    assert [e.message for e in events] == ["from spark-02", "from spark-01"]
    archive = tmp_path / "bundle.tar.gz"
    with tarfile.open(archive, "w:gz") as tar:
        tar.add(bundle, arcname="bundle")
    assert [e.node for e in parse_files([archive])] == ["spark-02", "spark-01"]


def test_bad_inputs_are_one_line_errors(tmp_path):
    with pytest.raises(InputError, match="no such file"):
        parse_files([tmp_path / "missing.log"])
    (tmp_path / "empty").mkdir()
    with pytest.raises(InputError, match="neither an evidence bundle"):
        parse_files([tmp_path / "empty"])
    bad = tmp_path / "x.tar.gz"
    bad.write_bytes(b"not a tar")
    with pytest.raises(InputError):
        parse_files([bad])


def test_stdin_is_read_as_a_stream():
    text = (FIXTURES / "vllm-cpu-spec-ngram.log").read_bytes()
    code = ("import sys; from sparktriage.logs.parser import iter_events;"
            "ev=list(iter_events(['-'])); print(len(ev), sum('SpecDecoding' in e.message for e in ev))")
    out = subprocess.run([sys.executable, "-c", code], input=text, capture_output=True, check=True)
    assert out.stdout.decode().split() == [str(len(parse_bytes(text))), "1"]


def test_year_rollover_and_reference():
    lines = ["(A pid=1) INFO 12-31 23:59:59 [x.py:1] old year",
             "(A pid=1) INFO 01-01 00:00:01 [x.py:1] new year",
             "(A pid=1) INFO 12-31 23:59:58 [x.py:1] straggler"]
    reference = unix("2027-01-01T00:05:00")
    events = parse_lines(lines, tz=UTC, reference=reference)
    assert [e.t for e in events] == [unix("2026-12-31T23:59:59"), unix("2027-01-01T00:00:01"),
                                     unix("2026-12-31T23:59:58")]
    # a stamp later in the year than the reference belongs to the year before
    clock = StampClock(unix("2026-03-01T00:00:00"), UTC)
    assert clock.from_stamp("11-29 20:00:00") == unix("2025-11-29T20:00:00")
    # Feb 29 in a non-leap reference year moves to the last leap year
    assert StampClock(unix("2027-06-01T00:00:00"), UTC).from_stamp("02-29 12:00:00") == unix(
        "2024-02-29T12:00:00")
    assert StampClock(0, UTC).from_stamp("13-45 99:00:00") is None


def test_the_year_never_goes_back():
    """A 02-29 after New Year of a common year has no date (it was 2024-02-29, 672 days back);
    one in a leap year, or just after a rollover into one, is dated; a date months ahead is
    later in the same year, not a straggler from the year before."""
    clock = StampClock(unix("2026-01-01T00:05:00"), UTC)
    assert clock.from_stamp("12-31 23:59:50") == unix("2025-12-31T23:59:50")
    assert clock.from_stamp("01-01 00:00:07") == unix("2026-01-01T00:00:07")
    assert clock.from_stamp("02-29 00:00:30") is None
    assert clock.from_stamp("01-01 00:00:24") == unix("2026-01-01T00:00:24")
    clock = StampClock(unix("2028-01-01T00:05:00"), UTC)
    clock.from_stamp("12-31 23:59:50")
    assert clock.from_stamp("02-29 08:00:00") == unix("2028-02-29T08:00:00")  # rolled over
    clock = StampClock(unix("2024-12-01T00:00:00"), UTC)
    clock.from_stamp("01-02 00:00:00")
    assert clock.from_stamp("02-29 08:00:00") == unix("2024-02-29T08:00:00")
    assert clock.from_stamp("09-15 00:00:00") == unix("2024-09-15T00:00:00")  # months later


def test_split_lines_bounds_giant_lines_and_handles_missing_final_newline():
    data = b"a\n" + b"x" * 5000 + b"\nb\r\nc"
    out = list(split_lines(io.BytesIO(data), max_line=1000, block=64))
    assert out == [(b"a", False), (b"x" * 1000, True), (b"b\r", False), (b"c", False)]
    assert list(split_lines(io.BytesIO(b""))) == []
    assert list(split_lines(io.BytesIO(b"\n\n"), block=1)) == [(b"", False), (b"", False)]


def test_iter_stream_and_invalid_utf8():
    events = list(iter_stream(io.BytesIO(b"(A pid=1) INFO 01-02 03:04:05 [x.py:1] caf\xe9 \xff\n")))
    assert events[0].message == "caf\ufffd \ufffd"
