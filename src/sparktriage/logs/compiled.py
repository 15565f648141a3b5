"""The optional compiled scanner (`_fastscan`, C): load it, configure it from the gate, or do without.

`scanner()` returns a `_fastscan.Scanner` that evaluates the analysis gate of gate.py on raw
bytes, or None when the extension was not built (no compiler at install time), cannot express
the gate (a message start that is not a plain literal with digit/upper-case classes), or is
switched off with ``SPARKTRIAGE_PURE_PYTHON=1``. Callers then use the pure-Python scanner;
both give the same documents (tests run both on the same inputs).

The gate's message starts (catalog.MESSAGE_STARTS, regex fragments) are translated into small
programs for the C matcher: literal bytes, any byte but a newline (a regex "."), one digit,
one or more digits, N upper-case letters, an optional literal. Each gate literal gets a pair of adjacent bytes for the vector prefilter,
chosen to be rare in log text (upper case, brackets, non-ASCII), so most 16- or 32-byte chunks
of a log are rejected with a few vector compares.
"""

from __future__ import annotations

import functools
import os
import re

from sparktriage.logs.catalog import GATE_LITERALS, MESSAGE_STARTS

OP_LIT, OP_DIGIT, OP_DIGITS, OP_UPPER, OP_OPT, OP_ANY = 1, 2, 3, 4, 5, 6
_UPPER = re.compile(r"\[A-Z\]\{([1-9])\}")
_OPTIONAL = re.compile(r"\(\?:((?:\\.|[^()\\])*)\)\?")
_META = set(".^$*+?{}[]()|")


def _unescape(text: str) -> bytes:
    out = bytearray()
    i = 0
    while i < len(text):
        if text[i] == "\\":
            if i + 1 >= len(text) or text[i + 1].isalnum():
                raise ValueError(f"unsupported escape in {text!r}")
            out += text[i + 1].encode()
            i += 2
        elif text[i] in _META:
            raise ValueError(f"unsupported regex syntax in {text!r}")
        else:
            out += text[i].encode()
            i += 1
    return bytes(out)


def program(pattern: str) -> bytes:
    """A message start (a regex fragment) as a program for the C matcher; ValueError when the
    fragment uses more than literals, ".", [0-9], [0-9]+, [A-Z]{n} and (?:literal)?."""
    out = bytearray()
    literal = bytearray()

    def flush() -> None:
        for i in range(0, len(literal), 255):
            piece = literal[i:i + 255]
            out.extend((OP_LIT, len(piece)))
            out.extend(piece)
        literal.clear()

    i = 0
    while i < len(pattern):
        rest = pattern[i:]
        if rest.startswith("[0-9]+"):
            flush()
            out.append(OP_DIGITS)
            i += 6
        elif rest.startswith("[0-9]"):
            flush()
            out.append(OP_DIGIT)
            i += 5
        elif (m := _UPPER.match(rest)) is not None:
            flush()
            out.extend((OP_UPPER, int(m.group(1))))
            i += m.end()
        elif (m := _OPTIONAL.match(rest)) is not None:
            flush()
            text = _unescape(m.group(1))
            if not 0 < len(text) < 256 or b"\n" in text:
                raise ValueError(f"optional part too long in {pattern!r}")
            out.extend((OP_OPT, len(text)))
            out.extend(text)
            i += m.end()
        elif rest[0] == "\\":
            literal += _unescape(rest[:2])
            i += 2
        elif rest[0] == ".":  # any byte but a newline
            flush()
            out.append(OP_ANY)
            i += 1
        elif rest[0] in _META:
            raise ValueError(f"unsupported regex syntax in {pattern!r}")
        else:
            literal += rest[0].encode()
            i += 1
    if b"\n" in literal:
        raise ValueError(f"a newline in {pattern!r}")
    flush()
    if not out:
        raise ValueError("an empty message start")
    out.append(0)
    return bytes(out)


_LOWER_BY_FREQUENCY = "etaoinsrhldcumfpgwybvkxjqz"
_COMMON_PUNCT = set(b".,:/-_=[]'\"")


def _rarity(byte: int) -> float:
    """How common a byte is in log text (higher = more common); a rough, fixed estimate."""
    ch = chr(byte)
    if byte >= 0x80:
        return 1.0
    if ch == " " or ch == "\n":
        return 10.0
    if ch.isdigit():
        return 8.0
    if "a" <= ch <= "z":
        return 9.0 - 4.0 * _LOWER_BY_FREQUENCY.index(ch) / 25
    if "A" <= ch <= "Z":
        return 5.0 - 4.0 * _LOWER_BY_FREQUENCY.index(ch.lower()) / 25
    if byte in _COMMON_PUNCT:
        return 7.0
    if ch in "()":
        return 4.0
    return 5.0


def needle_pair(literal: bytes) -> int:
    """The offset of the two adjacent bytes of the literal that together are rarest in log text."""
    if len(literal) < 2:
        raise ValueError("a gate literal needs two bytes")
    return min(range(len(literal) - 1),
               key=lambda o: (_rarity(literal[o]) + _rarity(literal[o + 1]), o))


@functools.lru_cache(maxsize=1)
def scanner():
    """The configured compiled scanner, or None (see the module docstring)."""
    if os.environ.get("SPARKTRIAGE_PURE_PYTHON", "") not in ("", "0"):
        return None
    try:
        from sparktriage.logs import _fastscan
    except ImportError:
        return None
    try:
        programs = [program(start) for start in MESSAGE_STARTS]
    except ValueError:
        return None
    literals = [lit.encode("utf-8") for lit in GATE_LITERALS]
    try:
        return _fastscan.Scanner(programs, literals, [needle_pair(lit) for lit in literals])
    except ValueError:  # a gate the compiled matcher cannot hold (e.g. a one-byte literal)
        return None


def hot_state():
    """A fresh `_fastscan.HotState`, or None without the extension."""
    if scanner() is None:
        return None
    from sparktriage.logs import _fastscan
    return _fastscan.HotState()


__all__ = ["scanner", "hot_state", "program", "needle_pair"]
