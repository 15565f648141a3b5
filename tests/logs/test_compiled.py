"""The compiled scanner evaluates exactly the gate of gate.py, with every search kernel, on any
bytes; nothing it is given makes it crash or read outside the range it was given.

The extension is required: where it is missing every test here fails, saying why, unless
SPARKTRIAGE_NO_COMPILER=1 declares a machine without a compiler (compiled_required.py)."""

from __future__ import annotations

import json
from pathlib import Path

import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

from sparktriage.logs import compiled
from sparktriage.logs.catalog import GATE_LITERALS, MESSAGE_STARTS
from sparktriage.logs.gate import candidate_starts
from sparktriage.logs.lineformat import parse_line
import compiled_required
from vllm_synth import PROFILES, render

fastscan = compiled_required.module()  # None when missing: then every test fails (fixture below)
pytestmark = pytest.mark.usefixtures("compiled_extension")

FIXTURES = Path(__file__).parent.parent / "fixtures" / "logs"
LITERALS = [lit.encode() for lit in GATE_LITERALS]
PROGRAMS = [compiled.program(p) for p in MESSAGE_STARTS]
CASES = [p.read_bytes() for p in sorted(FIXTURES.glob("*.log"))] + [
    "".join(json.loads(line)["line"] + "\n" for line in p.open()).encode()
    for p in sorted((FIXTURES / "recorded").glob("*.lines.jsonl"))] + [
    "\n".join(render(name)[0]).encode() for name in sorted(PROFILES)]


def _kernels() -> list[str]:
    found = []
    for kernel in ("avx2", "vector", "scalar"):
        try:
            fastscan.Scanner(PROGRAMS, LITERALS, [compiled.needle_pair(x) for x in LITERALS],
                             kernel=kernel)
        except ValueError:
            continue
        found.append(kernel)
    return found


KERNELS = _kernels() if fastscan else ["not built"]  # not built: each test fails in its fixture
SCANNERS = {k: fastscan.Scanner(PROGRAMS, LITERALS, [compiled.needle_pair(x) for x in LITERALS],
                                kernel=k) for k in KERNELS} if fastscan else {}


def test_every_message_start_translates_and_odd_syntax_is_refused():
    assert len(PROGRAMS) == len(MESSAGE_STARTS)
    for bad in ("a|b", "\\d+", "x*", "(?:a|b)?", "[a-z]", ""):
        with pytest.raises(ValueError):
            compiled.program(bad)
    assert compiled.program("torch.compile").count(6) == 1  # "." is any byte but a newline


@pytest.mark.parametrize("kernel", KERNELS)
@pytest.mark.parametrize("index", range(len(CASES)))
def test_candidates_equal_the_python_gate_on_every_fixture(kernel, index):
    blob = CASES[index]
    assert SCANNERS[kernel].candidates(blob) == candidate_starts(blob)


PIECES = [b"\n", b" ", b"] ", b"]", b"]\x1b[0;36m ", b"\x1b[m", b"[backbone] ", b"[x] ", b"Engine 0",
          b"Engine ", b"12 Engines Aggregated", b"Avg prompt throughput", b"SpecDecoding",
          b"torch.compile", b"torch-compile", b"CPU KV cache size", b"GPU + host KV cache size",
          b'"message": "', b'"message":"', b'"m', b"WARN", b"WAR", b"ERR", b"ER", b"CRITICAL",
          b"Traceback (", b"\xe2\x96\x88  ", b"\xe2\x96\x88", b"Segmentation fault",
          b"[shutdown]", b"[c10d]", b"rank 3", b"x" * 40, b"\r", b"\xff\xfe", b"0123456789"]


@settings(max_examples=300, deadline=None)
@given(st.lists(st.one_of(st.sampled_from(PIECES), st.binary(max_size=8)), max_size=80),
       st.data())
def test_candidates_equal_the_python_gate_on_built_bytes(pieces, data):
    blob = b"".join(pieces)
    start = data.draw(st.integers(0, len(blob)))
    end = data.draw(st.integers(start, len(blob)))
    expected = candidate_starts(blob, start, end)
    for scanner in SCANNERS.values():
        assert scanner.candidates(blob, start, end) == expected


LINES = [b"", b"INFO:     127.0.0.1:5 - \"POST /v1/completions HTTP/1.1\" 200 OK", b"INFO: x",
         b"INFO:", b"WARNING:  y", b"ERROR: z", b"DEBUG:\t", b"(APIServer pid=1) INFO: x",
         b"INFO 11-29 20:55:40 [a.py:1] m", b"2026-11-29T20:55:40Z INFO: x", b"\r", b"\xffINFO: "]


@settings(max_examples=200, deadline=None)
@given(st.one_of(st.binary(max_size=3000),
                 st.lists(st.one_of(st.sampled_from(LINES), st.binary(max_size=20)),
                          max_size=30).map(b"\n".join)), st.data())
def test_counts_and_unstamped_skips_on_any_bytes(blob, data):
    scanner = next(iter(SCANNERS.values()))
    start = data.draw(st.integers(0, len(blob)))
    end = data.draw(st.integers(start, len(blob)))
    assert scanner.count(blob, start, end) == blob.count(b"\n", start, end)
    hi, skipped = scanner.skip_unstamped(blob, start, end)
    assert start - 1 <= hi <= end
    if hi == end:
        assert skipped == 0
        return
    lines = blob[max(hi + 1, start):end].split(b"\n")
    assert len(lines) == skipped
    for line in lines:  # every skipped line is one the parser finds no stamp in
        fields = parse_line(line.decode("utf-8", "replace"))
        assert fields.stamp is None and fields.stamp_full is None


def test_bad_arguments_are_errors_not_crashes():
    scanner = next(iter(SCANNERS.values()))
    with pytest.raises(ValueError):
        scanner.candidates(b"abc", 5, 2)
    with pytest.raises(TypeError):
        scanner.next(b"abc\n", 0, 4, 1, "not a state")
    with pytest.raises(ValueError):
        fastscan.Scanner(PROGRAMS, [b"x"], [0])  # a one-byte literal has no pair
    with pytest.raises(ValueError):
        fastscan.Scanner(PROGRAMS, LITERALS, [0] * (len(LITERALS) - 1))
    with pytest.raises(ValueError):
        fastscan.Scanner(PROGRAMS, LITERALS, [40] * len(LITERALS))
    with pytest.raises(ValueError):
        fastscan.Scanner(PROGRAMS, LITERALS * 2, [0] * 2 * len(LITERALS))
    with pytest.raises(TypeError):
        fastscan.Scanner([b""], LITERALS, [0] * len(LITERALS))
    assert scanner.candidates(b"", 0, 0) == [] and scanner.count(b"") == 0
