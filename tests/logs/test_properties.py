"""Property tests: no input crashes the parser or the analysis, and both paths agree."""

from __future__ import annotations

import datetime as dt
import io
import json
from pathlib import Path

import pytest
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st

from sparktriage.logs.lineformat import parse_line
from sparktriage.logs.document import analyze
from sparktriage.logs.parser import ParseOptions, parse_bytes
from sparktriage.logs.scan import analyze_inputs
from sparktriage.logs.sources import BytesSource, split_lines

FIXTURES = Path(__file__).parent.parent / "fixtures" / "logs"
REAL_LINES = [line for name in ("vllm-cpu-startup.log", "vllm-cpu-spec-ngram.log",
                                "vllm-cpu-default-kv-failure.log")
              for line in (FIXTURES / name).read_bytes().split(b"\n")]
UTC = dt.timezone.utc
OPTIONS = ParseOptions(tz=UTC, year=2026, reference=0.0)
SETTINGS = settings(max_examples=150, deadline=None,
                    suppress_health_check=[HealthCheck.too_slow, HealthCheck.data_too_large])


def _mutate(line: bytes, data) -> bytes:
    how = data.draw(st.sampled_from(["keep", "cut", "insert", "digits", "giant", "bytes"]))
    if how == "cut" and line:
        return line[: data.draw(st.integers(0, len(line)))]
    if how == "insert":
        at = data.draw(st.integers(0, len(line)))
        return line[:at] + data.draw(st.binary(max_size=40)) + line[at:]
    if how == "digits":
        return line.replace(b"0", b"9" * data.draw(st.integers(1, 5000)), 1)
    if how == "giant":
        return line + b"x" * data.draw(st.integers(0, 3_000_000))
    if how == "bytes":
        return data.draw(st.binary(max_size=300))
    return line


def _lines(data) -> bytes:
    picked = data.draw(st.lists(st.sampled_from(REAL_LINES), max_size=60))
    return b"\n".join(_mutate(line, data) for line in picked)


@SETTINGS
@given(st.text(max_size=400))
def test_parse_line_never_raises(text):
    fields = parse_line(text)
    assert isinstance(fields.message, str)


@SETTINGS
@given(st.binary(max_size=4000))
def test_random_bytes_parse_and_analyse(data):
    events = parse_bytes(data, options=OPTIONS)
    doc = analyze(events, tz=UTC)
    json.dumps(doc, allow_nan=False)


@pytest.mark.slow
@SETTINGS
@given(st.data())
def test_mutated_real_lines_never_crash_and_both_paths_agree(data):
    blob = _lines(data)
    source = BytesSource("<mutated>", "n", False, data=blob)
    fast = analyze_inputs([source], tz=UTC, year=2026)
    pure = analyze_inputs([source], tz=UTC, year=2026, compiled_path=False)
    full = analyze_inputs([source], tz=UTC, year=2026, fast=False)
    assert json.dumps(fast, allow_nan=False) == json.dumps(full) == json.dumps(pure)


@SETTINGS
@given(st.binary(max_size=3000), st.integers(1, 64), st.integers(1, 200))
def test_split_lines_is_lossless_up_to_the_cut(data, block, max_line):
    lines = list(split_lines(io.BytesIO(data), max_line=max_line, block=block))
    expected = data.split(b"\n")
    if data.endswith(b"\n"):
        expected = expected[:-1]
    if not data:
        expected = []
    assert [line for line, _ in lines] == [e[:max_line] for e in expected]
    assert [cut for _, cut in lines] == [len(e) > max_line for e in expected]


_PREFIXES = [b"", b"2026-11-29T20:53:15.1234567Z ", b"2026-11-29T20:55:0%dZ stdout F ",
             b"Nov 29 20:55:1%d spark-01 vllm[7]: ", b"[rank%d]: ", b"vllm-1  | ",
             b"2026-11-29 20:55:2%d.123 | ", b"\x1b[36m(pid=%d, ip=10.0.0.2)\x1b[0m ", b"0: "]
_UNTIMED = [b"ValueError: Free memory on device (31.44/47.38 GiB) on startup", b"  File \"x.py\"",
            b"...", b"INFO:     Application startup complete.", b"[... 3 lines omitted ...]"]


@SETTINGS
@given(st.data())
def test_collector_prefixes_excerpts_and_old_lines_agree_on_every_path(data):
    """Issue 36: prefixed, bracket-less and untimed lines (at the top too) give one document."""
    picked = data.draw(st.lists(st.sampled_from(REAL_LINES + _UNTIMED), max_size=40))
    top = data.draw(st.lists(st.sampled_from(_UNTIMED), max_size=3))
    out = []
    for line in top + picked:
        prefix = data.draw(st.sampled_from(_PREFIXES))
        if b"%d" in prefix:
            prefix = prefix % data.draw(st.integers(0, 9))
        if data.draw(st.booleans()):
            line = line.replace(b" [", b" ", 1).replace(b"] ", b"] ", 1)  # 0.6-0.8: no "["
        out.append(prefix + line)
    blob = b"\n".join(out)
    source = BytesSource("<prefixed>", "n", False, data=blob)
    block = data.draw(st.sampled_from([64, 4096, 1 << 22]))
    year = data.draw(st.sampled_from([2026, None]))  # None: the runner's stamps give the year
    tz = data.draw(st.sampled_from([UTC, None]))  # None: and the zone
    full = json.dumps(analyze_inputs([source], tz=tz, year=year, fast=False), allow_nan=False)
    assert json.dumps(analyze_inputs([source], tz=tz, year=year, block_size=block,
                                     compiled_path=False)) == full
    assert json.dumps(analyze_inputs([source], tz=tz, year=year, block_size=block)) == full
