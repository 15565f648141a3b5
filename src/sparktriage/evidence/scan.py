"""The fast path of `sparktriage logs`: read only the lines the analysis needs.

Until a source's server serves, every line is fed to the parser (gate.py: the startup is read
whole). After that, `gate.candidate_starts` finds the lines that pass the gate in each block
of raw bytes, and only those are split, decoded and parsed, plus what keeps the result
identical to the full path: a multi-line record is fed from its first line (backing up over
lines that end in ``\r``; such lines at a block's end travel into the next block), an open
record is fed to its end, and a candidate without a time stamp is preceded by the nearest
stamped line (its time is inferred from it, as the full path does). Tests check that both
paths give the same document on every fixture and on generated logs.
"""

from __future__ import annotations

import datetime as _dt
import re
import sys
from typing import BinaryIO, Iterator, Sequence

from sparktriage.errors import InputError
from sparktriage.evidence.gate import candidate_starts, first_serving_mark, restart_mark
from sparktriage.evidence.events import LogEvent
from sparktriage.evidence.lineformat import FAST_PREFIX, parse_line
from sparktriage.evidence.logsdoc import LogAnalyzer
from sparktriage.evidence.parser import ParseOptions, _Assembler, merge_events, source_events
from sparktriage.evidence.sources import MAX_LINE, LogSource, RawLine, _decode, resolve_inputs

BLOCK = 4 << 20
_STAMPED = re.compile(FAST_PREFIX.encode())
MAX_FOLLOW = 4000  # lines fed after a candidate while its record stays open


def iter_blocks(stream: BinaryIO, block: int = BLOCK, max_line: int = MAX_LINE) -> Iterator[bytes]:
    """Blocks of whole lines (each ends with a newline); a line with no newline within
    `max_line` bytes is cut there (the rest of it is skipped), as the full reader does."""
    tail = b""
    skipping = False
    while True:
        chunk = stream.read(block)
        if not chunk:
            break
        data = tail + chunk if tail else chunk
        tail = b""
        if skipping:
            cut = data.find(b"\n")
            if cut < 0:
                continue
            skipping = False
            data = data[cut + 1:]
        end = data.rfind(b"\n")
        if end >= 0:
            body, tail = data[: end + 1], data[end + 1:]
            if body:
                yield body
        else:
            tail = data
        if len(tail) > max_line:
            yield tail[: max_line + 1] + b"\n"  # one byte over: the reader flags it cut
            tail = b""
            skipping = True
    if tail and not skipping:
        yield tail + b"\n"


CARRY_MAX = 64 * 1024  # bytes of trailing "\r"-ended lines carried into the next block
WINDOW_FIRST, WINDOW = 16 * 1024, 1024 * 1024  # candidates are searched window by window


class _FastFeeder:
    """Feeds an assembler with the lines of blocks that the gate (and exactness) requires."""

    def __init__(self, assembler: _Assembler, crlf: bool = False) -> None:
        self.asm = assembler
        self.line_base = 0  # lines before the current block
        self.serving = False
        self.crlf = crlf  # a Windows file: each line's own CR is dropped
        self.mark = b"\r\r\n" if crlf else b"\r\n"  # the end of a line that continues a record

    def _raw(self, block: bytes, start: int, end: int, line_no: int) -> RawLine:
        raw = block[start:end]
        cut = len(raw) > MAX_LINE
        return RawLine(_decode(raw[:MAX_LINE] if cut else raw, self.crlf), line_no, truncated=cut)

    def _follow(self, block: bytes, pos: int, number: int) -> tuple[int, int]:
        """Feed lines from `pos` (line `number`) while the assembler holds an open record."""
        find = block.find
        for _ in range(MAX_FOLLOW):
            if not self.asm.group or pos >= len(block):
                break
            end = find(b"\n", pos)
            self.asm.feed(self._raw(block, pos, end, number))
            pos, number = end + 1, number + 1
        return pos, number

    def _feed_all(self, block: bytes, pos: int, stop: int, number: int) -> tuple[int, int]:
        """Feed every line in block[pos:stop] (stop is a line start)."""
        if stop <= pos:
            return pos, number
        feed, raw = self.asm.feed, self._raw
        crlf = self.crlf
        for line in block[pos:stop - 1].split(b"\n"):
            if len(line) > MAX_LINE:
                feed(RawLine(_decode(line[:MAX_LINE], crlf), number, truncated=True))
            else:
                feed(RawLine(_decode(line, crlf), number))
            number += 1
        return stop, number

    def block(self, block: bytes) -> bytes:
        """Feed what one block needs; return the trailing bytes to prepend to the next block."""
        count = block.count
        pos, next_line = self._follow(block, 0, self.line_base + 1)
        limit = len(block)  # trailing lines that may open a record travel to the next block
        mark, width = self.mark, len(self.mark)
        while limit >= width and block[limit - width:limit] == mark and \
                len(block) - limit < CARRY_MAX:
            limit = block.rfind(b"\n", 0, limit - 1) + 1
            if limit <= pos:
                limit = len(block)
                break
        while pos < limit:
            if not self.serving:  # a server starting: every line is read
                mark = first_serving_mark(block, pos, limit)
                stop = limit if mark < 0 else block.find(b"\n", mark) + 1
                pos, next_line = self._feed_all(block, pos, stop, next_line)
                pos, next_line = self._follow(block, pos, next_line)
                if mark >= 0:
                    self.serving = True
                continue
            pos, next_line = self._gated(block, pos, limit, next_line)
        if pos > limit:
            limit = pos
        self.line_base = next_line - 1
        return block[limit:]

    @staticmethod
    def _candidates(block: bytes, pos: int, limit: int) -> Iterator[int]:
        """Candidate line starts in block[pos:limit], found window by window (a restart mark
        stops the caller early, so the rest of the block is not scanned for nothing)."""
        window = WINDOW_FIRST
        while pos < limit:
            stop = min(limit, pos + window)
            if stop < limit:
                stop = block.find(b"\n", stop - 1) + 1 or limit
            yield from candidate_starts(block, pos, stop)
            pos = stop
            window = min(2 * window, WINDOW)

    def _gated(self, block: bytes, pos: int, limit: int, next_line: int) -> tuple[int, int]:
        """Feed the candidates in block[pos:limit] until a restart mark; return where it stopped."""
        asm, out = self.asm, self.asm.out
        find, rfind, count = block.find, block.rfind, block.count
        mark, width = self.mark, len(self.mark)
        for candidate in self._candidates(block, pos, limit):
            if candidate < pos:
                continue
            start = candidate
            line_no = next_line + count(b"\n", pos, start)
            backed = 0
            while start - width >= pos and block[start - width:start] == mark and \
                    backed < MAX_FOLLOW:  # back to the first line of the candidate's record
                start = max(rfind(b"\n", pos, start - width + 1) + 1, pos)
                line_no -= 1
                backed += 1
            if start > pos:
                self._time_anchor(block, pos, start, line_no)
            emitted = len(out)
            end = find(b"\n", candidate)
            fed, number = self._feed_all(block, start, end + 1, line_no)  # through the candidate
            pos, next_line = self._follow(block, fed, number)
            if any(restart_mark(e.raw) for e in out[emitted:]):
                self.serving = False  # a new server process: read its startup in full
                return pos, next_line
        if pos < limit:
            skipped = count(b"\n", pos, limit)
            self._time_anchor(block, pos, limit, next_line + skipped, candidate=False)
            next_line += skipped
        return max(pos, limit), next_line

    def _time_anchor(self, block: bytes, lo: int, start: int, line_no: int,
                     candidate: bool = True) -> None:
        """Feed the nearest stamped line before `start` (when the line at `start` has none)."""
        if candidate:
            if _STAMPED.match(block, start):  # vLLM's common prefix: the line has its own stamp
                return
            end = block.find(b"\n", start)
            fields = parse_line(_decode(block[start:end][:MAX_LINE], self.crlf))
            if fields.stamp is not None or fields.stamp_full is not None:
                return
        hi = start - 1  # the newline that ends the previous line
        number = line_no - 1
        while hi >= lo and hi > 0:
            begin = max(block.rfind(b"\n", lo, hi) + 1, lo)
            text = _decode(block[begin:hi][:MAX_LINE], self.crlf)
            prev = parse_line(text)
            if prev.stamp is not None or prev.stamp_full is not None:
                self.asm.feed(RawLine(text, number))
                return
            if begin == lo:
                return
            hi, number = begin - 1, number - 1


def fast_events(source: LogSource, options: ParseOptions,
                block_size: int = BLOCK) -> Iterator[LogEvent]:
    """The events of a plain-text source that the analysis needs (see module docstring)."""
    assembler = _Assembler(source, options)
    out = assembler.out
    stream = source.open_binary()
    feeder = _FastFeeder(assembler, source.is_crlf(stream))
    carry = b""
    try:
        for block in iter_blocks(stream, block_size):
            carry = feeder.block(carry + block if carry else block)
            if out:
                yield from out
                out.clear()
        if carry:
            feeder.block(carry)
    except (OSError, EOFError, ValueError) as exc:
        raise InputError(f"cannot read {source.origin}: {exc}") from exc
    finally:
        if stream is not sys.stdin.buffer:
            stream.close()
    assembler.flush()
    yield from out


def analyze_inputs(specs: Sequence[str | LogSource], *, tz: _dt.tzinfo | None = None,
                   year: int | None = None, fast: bool = True, block_size: int = BLOCK) -> dict:
    """Resolve input specs, stream them once, and return the `logs` document."""
    sources: list[LogSource] = []
    for spec in specs:
        sources.extend([spec] if isinstance(spec, LogSource) else resolve_inputs([spec]))
    options = ParseOptions(tz=tz, year=year)
    streams = [fast_events(s, options, block_size) if fast and not s.records
               else source_events(s, options) for s in sources]
    return LogAnalyzer(tz).feed_all(merge_events(streams)).document()


__all__ = ["iter_blocks", "fast_events", "analyze_inputs"]
