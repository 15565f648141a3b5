"""Record files of a bundle indexed by time and byte offset, read lazily by time window.

A one-hour, eight-node bundle holds hundreds of thousands of sample records (hundreds of MB).
`IndexedRecords.scan(path)` reads each line's time with a small regex and keeps only (time,
offset) pairs; `window(start, end)` then parses only the records of that window, and over a
long window an evenly spaced subset of at most `max_rounds` sampling rounds (records closer
than 50 ms form one round). `Bundle.indexed(...)` is the way readers get one.
"""

from __future__ import annotations

import bisect
import json
import re
from array import array
from pathlib import Path

from sparktriage.errors import InputError

MAX_ROUNDS = 300  # sampling rounds read per window (evenly spaced over it)
_ROUND_S = 0.05  # records closer in time than this belong to one sampling round
_T = re.compile(rb'(?<!\\)"t":\s*(-?[0-9][0-9.eE+-]*)')


class IndexedRecords:
    """The time-ordered records of one file, indexed by time and byte offset, read lazily."""

    def __init__(self, path: Path | None = None, clock_offset: float = 0.0,
                 max_rounds: int = 0, compact=None) -> None:
        self.path = path
        self.clock_offset = clock_offset
        self.max_rounds = max_rounds or MAX_ROUNDS
        self.compact = compact  # turns a parsed record into what the rules read of it
        self.times = array("d")
        self.offsets = array("q")
        self._cache: dict[int, dict] = {}

    @classmethod
    def scan(cls, path: Path, clock_offset: float = 0.0, max_rounds: int = 0,
             compact=None) -> "IndexedRecords":
        series = cls(path, clock_offset, max_rounds, compact)
        if not path.is_file():
            return series
        pairs: list[tuple[float, int]] = []
        position = 0
        try:
            with open(path, "rb") as fh:
                for line in fh:
                    t = _line_time(line)
                    if t is not None:
                        pairs.append((t - clock_offset, position))
                    position += len(line)
        except OSError as exc:
            raise InputError(f"{path}: cannot read ({exc.strerror or exc})") from exc
        if any(pairs[i][0] > pairs[i + 1][0] for i in range(len(pairs) - 1)):
            pairs.sort(key=lambda p: p[0])
        series.times = array("d", (p[0] for p in pairs))
        series.offsets = array("q", (p[1] for p in pairs))
        return series

    def __len__(self) -> int:
        return len(self.times)

    def window(self, start: float, end: float, max_rounds: int | None = None) -> list[dict]:
        """Records with start <= t <= end: all of them, or those of `max_rounds` evenly spaced
        sampling rounds when the window holds more (the first and last rounds always)."""
        max_rounds = max_rounds or self.max_rounds
        lo = bisect.bisect_left(self.times, start)
        hi = bisect.bisect_right(self.times, end)
        if hi <= lo:
            return []
        rounds = [lo]
        for i in range(lo + 1, hi):
            if self.times[i] - self.times[i - 1] > _ROUND_S:
                rounds.append(i)
        if len(rounds) > max_rounds:
            step = (len(rounds) - 1) / (max_rounds - 1)
            rounds = [rounds[round(k * step)] for k in range(max_rounds)]
            picked: list[int] = []
            for first in rounds:
                i = first
                while i < hi and (i == first or self.times[i] - self.times[i - 1] <= _ROUND_S):
                    picked.append(i)
                    i += 1
        else:
            picked = list(range(lo, hi))
        return self._read(picked)

    def _read(self, indices: list[int]) -> list[dict]:
        missing = [i for i in indices if i not in self._cache]
        if missing and self.path is not None:
            with open(self.path, "rb") as fh:
                for i in missing:
                    fh.seek(self.offsets[i])
                    try:
                        value = json.loads(fh.readline())
                    except ValueError:
                        value = None
                    if isinstance(value, dict):
                        value["t"] = self.times[i]
                        self._cache[i] = self.compact(value) if self.compact else value
        return [self._cache[i] for i in indices if i in self._cache]


def _line_time(line: bytes) -> float | None:
    match = _T.search(line)
    if match:
        try:
            return float(match.group(1))
        except ValueError:
            return None
    try:  # unusual formatting: parse the whole line
        value = json.loads(line)
    except ValueError:
        return None
    return _num(value.get("t")) if isinstance(value, dict) else None



def _num(value) -> float | None:
    return float(value) if isinstance(value, (int, float)) and not isinstance(value, bool) else None


__all__ = ["IndexedRecords", "MAX_ROUNDS"]
