"""Excerpts, untimed lines and the failure list shared with `stalls` (issue 36 items 2 and 3)."""

from __future__ import annotations

import datetime as dt
from pathlib import Path

import pytest

from sparktriage.documents.logs import LogsDocument
from sparktriage.logs.document import LogAnalyzer, analyze
from sparktriage.logs.document import failures_of
from sparktriage.logs.failures import SERVING
from sparktriage.logs.parser import parse_lines
from sparktriage.logs.scan import analyze_inputs
from sparktriage.logs.sources import BytesSource
from sparktriage.store.typed import check

from test_scan import CASES, _same

UTC = dt.timezone.utc
FIXTURES = Path(__file__).parent.parent / "fixtures" / "logs"
STARTUP = (FIXTURES / "vllm-cpu-startup.log").read_bytes()
FAILURE = (FIXTURES / "vllm-cpu-default-kv-failure.log").read_bytes()


def _doc(blob: bytes) -> dict:
    doc = analyze_inputs([BytesSource("<x>", "n", False, data=blob)], tz=UTC, year=2026)
    check(LogsDocument, {"schema_version": 1, **doc})  # the new fields are in the schema
    return doc


def _codes(doc: dict) -> set[str]:
    return {r["code"] for r in doc["excerpt_detail"]["reasons"]}


def _from(blob: bytes, needle: bytes) -> bytes:
    """The log from the line holding `needle` on (an excerpt pasted from there)."""
    at = blob.index(needle)
    return blob[blob.rfind(b"\n", 0, at) + 1:]


def test_whole_logs_are_not_excerpts():
    for blob in CASES:
        doc = _doc(blob)
        assert doc["excerpt"] is False and doc["excerpt_detail"]["reasons"] == []
        assert doc["startup"]["start_in_log"] is True


def test_a_log_starting_mid_startup_says_what_it_cannot_tell():
    tail = _from(STARTUP, b"Starting to load model")
    doc = _doc(tail)
    assert doc["excerpt"] is True and _codes(doc) == {"no-start"}
    assert doc["startup"]["startup_s"] is None and doc["startup"]["seen_s"] > 0
    assert doc["startup"]["start_in_log"] is False
    assert any("total startup time unknown" in t for t in doc["excerpt_detail"]["cannot_tell"])
    assert doc["phases"][0]["name"] == "weight_read"  # no made-up resolve phase
    assert any(f["code"] == "excerpt" and f["severity"] == "info" for f in doc["findings"])
    for block_size in (97, 4096, 1 << 22):
        _same(tail, block_size)


def test_a_log_starting_while_serving_is_serving_only():
    tail = _from(STARTUP, b"Avg prompt throughput")
    doc = _doc(tail)
    assert _codes(doc) == {"serving-only"} and doc["phases"] == []
    assert not doc["startup"]["seen"] and doc["startup"]["startup_s"] is None
    _same(tail, 97)


def test_a_first_line_inside_a_traceback_is_read_and_marks_the_excerpt():
    frames = (b'  File "/usr/lib/python3.12/multiprocessing/process.py", line 108, in run\n'
              b"ValueError: Free memory on device (31.44/47.38 GiB) on startup is less than desired "
              b"GPU memory utilization (0.9, 42.64 GiB).\n")
    blob = frames + STARTUP
    doc = _doc(blob)
    assert _codes(doc) == {"starts-mid-record"}
    first = doc["errors"][0]
    assert first["text"].startswith("ValueError: Free memory on device") and first["line"] == 1
    assert doc["errors_total"] == _doc(STARTUP)["errors_total"] + 1
    assert first["time"] == doc["time_basis"]["first"]  # the first timed line's time
    assert first["phase"] == "resolve" and first["kind"] == "traceback"  # frame + exception: one
    _same(blob, 97)
    # pasted without its exception type, the message still counts as a failure
    doc = _doc(b"Free memory on device (31.44/47.38 GiB) on startup is less than desired GPU "
               b"memory utilization (0.9, 42.64 GiB).\n" + STARTUP)
    assert doc["errors"][0]["kind"] == "fatal" and doc["errors_total"] == _doc(STARTUP)["errors_total"] + 1


def test_untimed_top_lines_take_the_next_timed_lines_time():
    lines = ["some banner the container printed", "  indented continuation",
             "INFO 03-04 12:00:05 [x.py:1] vLLM API server version 0.20.0", "untimed after"]
    events = parse_lines(lines, tz=UTC, year=2025)
    t = dt.datetime(2025, 3, 4, 12, 0, 5, tzinfo=UTC).timestamp()
    assert [(e.t, e.t_source, e.timed_by) for e in events] == [
        (t, "inferred", 3), (t, "inferred", 3), (t, "log", None), (t, "inferred", 3)]
    assert parse_lines(["no time anywhere", "none here"])[0].t is None  # nothing to borrow


def test_untimed_lines_before_the_first_serving_mark_agree_on_every_path():
    serving = _from(STARTUP, b"Avg prompt throughput")
    blob = b"INFO:     Application startup complete.\nINFO:     127.0.0.1:5 - \"GET /health\" 200\n" \
        + serving
    _same(blob, 64)
    _same(blob, 1 << 22)


def test_cuts_ellipsis_gap_and_time_going_back():
    head = STARTUP[:STARTUP.index(b"Starting to load model")]
    rest = STARTUP[len(head):]
    doc = _doc(head + b"[... 200 lines omitted ...]\n" + rest)
    assert _codes(doc) == {"cut"}
    (cut,) = doc["excerpt_detail"]["cuts"]
    assert cut["node"] == "n" and "left out" in cut["why"] and cut["start"] <= cut["end"]
    assert any("not a silence" in t for t in doc["excerpt_detail"]["cannot_tell"])
    lines = ["INFO 03-04 12:00:00 [x.py:1] vLLM API server version 0.20.0",
             "INFO 03-04 12:00:01 [x.py:1] Initializing a V1 LLM engine (v0.20.0) with config: m",
             "INFO 03-04 15:00:01 [x.py:1] Starting to load model m...",
             "INFO 03-04 14:00:01 [x.py:1] Loading weights took 1.00 seconds"]
    doc = analyze(parse_lines(lines, tz=UTC, year=2025))
    whys = [c["why"] for c in doc["excerpt_detail"]["cuts"]]
    assert len(whys) == 2 and "no line for 10800 s" in whys[0] and "goes back by 3600" in whys[1]
    whole = lines[:2] + ["INFO 03-04 12:00:03 [x.py:1] Starting to load model m...",
                         "INFO 03-04 12:00:04 [x.py:1] Loading weights took 1.00 seconds"]
    assert analyze(parse_lines(whole, tz=UTC, year=2025))["excerpt"] is False  # "..." in a line


def test_failures_are_the_errors_logs_counts_with_their_phase():
    events = parse_lines(FAILURE.decode().split("\n"), tz=UTC, year=2026)
    analyzer = LogAnalyzer(UTC).feed_all(events)
    doc = analyzer.document()
    failures = analyzer.failures
    assert len(failures) == doc["errors_total"] > 0
    assert [f.text for f in failures] == [e["text"] for e in doc["errors"]]
    assert [f.phase for f in failures] == [e["phase"] for e in doc["errors"]]
    assert all(f.phase == doc["startup"]["current_phase"] for f in failures if f.engine_death)
    assert any(f.engine_death for f in failures)
    assert failures_of(events) == failures


def test_a_crash_while_serving_is_in_the_serving_phase():
    crash = (b"(EngineCore pid=9) ERROR 11-29 20:56:00 [core.py:1] EngineCore hit an exception: "
             b"CUDA error\n"
             b"(APIServer pid=1) ERROR 11-29 20:56:01 [async_llm.py:1] AsyncLLM output_handler "
             b"failed.\nTraceback (most recent call last):\n  File \"x.py\", line 1, in f\n"
             b"vllm.v1.engine.exceptions.EngineDeadError: EngineCore encountered an issue.\n")
    # the recorded start up to its stop (the fixture ends with the server's shutdown, after
    # which what a server logs is its teardown, no failure): the crash is while serving
    serving = STARTUP[:STARTUP.index(b"[shutdown]")]
    blob = serving[:serving.rindex(b"\n") + 1] + crash
    doc = _doc(blob)
    late = [e for e in doc["errors"] if e["time"] >= "2026-11-29T20:56"]
    assert [e["phase"] for e in late] == [SERVING] * len(late) and len(late) == 3
    assert [e["engine_death"] for e in late] == [True, True, True]  # the output handler too
    assert [f["code"] for f in doc["findings"] if f["severity"] == "error"] == ["engine-died"]
    # the same crash after the logged stop is the server's teardown: no failure
    torn = _doc(STARTUP + crash)
    assert [e["phase"] for e in torn["errors"] if e["time"] >= "2026-11-29T20:56"] == [SERVING] * 3
    assert not [f for f in torn["findings"] if f["severity"] == "error"]
    _same(blob, 97)


@pytest.mark.timeout(60)
def test_a_line_of_blanks_is_read_in_linear_time_and_padding_keeps_a_cut():
    """A hostile line (a vLLM prefix and 100,000 blanks) is read promptly: the cut-line pattern
    once began with `\\s*` before alternatives holding `\\s*` again, quadratic in the blanks
    (about ten minutes for this line). A padded cut line is still a cut."""
    blanks = "INFO 03-04 12:00:01 [x.py:1] " + " " * 100_000 + "x"
    lines = ["INFO 03-04 12:00:00 [x.py:1] vLLM API server version 0.20.0", blanks,
             "INFO 03-04 12:00:02 [x.py:1]    [... 3 lines omitted]   ",
             "INFO 03-04 12:00:03 [x.py:1] Starting to load model m..."]
    doc = analyze(parse_lines(lines, tz=UTC, year=2025))
    assert [c["why"] for c in doc["excerpt_detail"]["cuts"]] == [
        "a line says lines were left out: [... 3 lines omitted]"]
