"""The analysis gate: which lines of a log the `logs` analysis reads, on text and on bytes.

A source alternates between two modes. While its server starts, every line is read, so the
startup timeline and its silences are exact. The first serving mark (uvicorn's ``Application
startup complete`` or a periodic stats line) switches it to serving: from then on only lines
that pass the gate are read: catalog.MESSAGE_STARTS right after vLLM's ``[file.py:N] `` (or the
JSON formatter's ``"message": "``), or one of catalog.GATE_LITERALS anywhere in the line. A
restart mark (a version banner or logo, an argument dump) switches back to reading everything.

`interesting` evaluates the gate on one line of text; `candidate_starts` evaluates it on a
block of raw bytes with a few C-speed scans (two regexes with a literal prefix, then one
`bytes.find` loop per literal). Both read the same bytes the same way. The compiled scanner
(compiled.py, src/fastscan/search.c) evaluates the same gate: it takes MESSAGE_STARTS and
GATE_LITERALS from the catalog and repeats the structure of _VLLM and _JSON below (the "]",
the optional colour code and tag, the JSON message key); tests compare it with
`candidate_starts` on every fixture and on built bytes, so a change here must be made there too.
"""

from __future__ import annotations

import re

from sparktriage.logs.catalog import GATE_LITERALS, MESSAGE_STARTS

SERVING_MARKS = ("Application startup complete", "Avg prompt throughput:")
RESTART_MARKS = ("server version ", "\u2588  version ", "non-default args:")
_STARTS = "(?:" + "|".join(MESSAGE_STARTS) + ")"
_TAG = r"(?:\[[A-Za-z0-9_.-]+\] )?"
_VLLM = r"\](?:\x1b\[[0-9;]*m)? " + _TAG + _STARTS  # "[file.py:123] " (possibly coloured)
_JSON = r'"message": ?"' + _TAG + _STARTS
_TEXT = re.compile(_VLLM + "|" + _JSON)
_BYTES = (re.compile(_VLLM.encode()), re.compile(_JSON.encode()))
_LITERALS_BYTES = tuple(lit.encode("utf-8") for lit in GATE_LITERALS)
_MARKS_BYTES = tuple(m.encode() for m in SERVING_MARKS)


def interesting(text: str) -> bool:
    """Does this line (or record) pass the analysis gate?"""
    if _TEXT.search(text) is not None:
        return True
    for literal in GATE_LITERALS:
        if literal in text:
            return True
    return False


def serving_mark(text: str) -> bool:
    """Does this line show that the server is serving (its startup is over)?"""
    return SERVING_MARKS[0] in text or SERVING_MARKS[1] in text


def restart_mark(text: str) -> bool:
    """Does this line start a new server process (a new startup to read in full)?"""
    return RESTART_MARKS[0] in text or RESTART_MARKS[1] in text or RESTART_MARKS[2] in text


def first_serving_mark(block: bytes, start: int = 0, end: int | None = None) -> int:
    """Offset of the first serving mark in block[start:end], or -1."""
    end = len(block) if end is None else end
    found = [p for p in (block.find(m, start, end) for m in _MARKS_BYTES) if p >= 0]
    return min(found) if found else -1


def candidate_starts(block: bytes, start: int = 0, end: int | None = None) -> list[int]:
    """Start offsets (sorted) of the lines in block[start:end] that pass the gate."""
    end = len(block) if end is None else end
    starts: set[int] = set()
    rfind, find = block.rfind, block.find
    for regex in _BYTES:
        for m in regex.finditer(block, start, end):
            starts.add(rfind(b"\n", 0, m.start()) + 1)
    for literal in _LITERALS_BYTES:
        pos = find(literal, start, end)
        while pos >= 0:
            starts.add(rfind(b"\n", 0, pos) + 1)
            line_end = find(b"\n", pos, end)
            if line_end < 0:
                break
            pos = find(literal, line_end, end)
    return sorted(s for s in starts if s >= start)
