"""Blocks of whole lines from a binary stream, read into one reusable buffer (no copy per block).

`BlockReader` yields ``(buf, start, end)``: ``buf[start:end]`` is the next block, a run of whole
lines each ending in a newline. After each block the consumer sets `consumed` (start <= consumed
<= end): the bytes ``buf[consumed:end]`` are not done with and come first in the next block (the
fast path carries the trailing lines of a record that may continue). After the last block, a
carry left over is yielded once more as a block of its own.

The blocks are exactly those of the earlier ``iter_blocks(stream)`` + ``carry + block`` scheme
(tests compare the two): the stream is read `block` bytes at a time; a block ends at the last
newline read so far; a line with no newline within `max_line` bytes is cut there (one byte over,
plus a newline, so the reader flags it truncated) and the rest of it skipped; a last line without
a newline gets one. The buffer holds one read plus the unfinished line and the carry, so memory
does not grow with the stream. Only the rare cases (a cut line, a carry out of one) copy.
"""

from __future__ import annotations

from typing import BinaryIO, Iterator

from sparktriage.logs.sources import MAX_LINE

BLOCK = 4 << 20


def _fill(stream: BinaryIO, view: memoryview) -> int:
    """Read until `view` is full or the stream ends (what ``read(n)`` does); bytes read."""
    got = 0
    readinto = getattr(stream, "readinto", None)
    while got < len(view):
        if readinto is not None:
            n = readinto(view[got:])
        else:
            chunk = stream.read(len(view) - got)
            n = len(chunk)
            view[got:got + n] = chunk
        if not n:
            break
        got += n
    return got


class BlockReader:
    """See the module docstring."""

    def __init__(self, stream: BinaryIO, block: int = BLOCK, max_line: int = MAX_LINE) -> None:
        self.stream = stream
        self.block = max(1, block)
        self.max_line = max_line
        self.consumed = 0

    def __iter__(self) -> Iterator[tuple[bytes | bytearray, int, int]]:
        block, max_line = self.block, self.max_line
        buf = self._buf = bytearray(block + 1)
        head = tail = filled = 0  # [head, tail): carry; [tail, filled): the unfinished line
        extra = b""  # a carry held outside the buffer (after a cut line); then head == tail
        skipping = False
        while True:
            if head:  # keep what is not done with at the front
                buf[:filled - head] = buf[head:filled]
                tail, filled, head = tail - head, filled - head, 0
            if len(buf) < filled + block + 1:
                buf.extend(bytes(filled + block + 1 - len(buf)))
            with memoryview(buf) as view:
                got = _fill(self.stream, view[filled:filled + block])
            if not got:
                break
            new, filled = filled, filled + got
            if skipping:
                cut = buf.find(b"\n", new, filled)
                if cut < 0:
                    filled = new
                    continue
                del buf[new:cut + 1]
                filled -= cut + 1 - new
                skipping = False
            last = buf.rfind(b"\n", tail, filled)
            if last >= 0:
                extra, head = yield from self._emit(buf, head, last + 1, extra)
                tail = last + 1
            if filled - tail > max_line:  # a line too long: its head, then skip the rest
                cut_line = bytes(buf[head:tail + max_line + 1]) + b"\n"
                extra, _ = yield from self._emit(cut_line, 0, len(cut_line), extra)
                head = tail = filled
                skipping = True
        if filled > tail and not skipping:  # a last line without a newline
            buf[filled:filled + 1] = b"\n"
            filled += 1
            extra, head = yield from self._emit(buf, head, filled, extra)
            tail = filled
        if extra:  # what the last block left over, once more on its own
            self.consumed = len(extra)
            yield extra, 0, len(extra)
        elif tail > head:
            self.consumed = tail
            yield buf, head, tail

    def _emit(self, buf, start: int, end: int, extra: bytes):
        """Yield one block (after the carry held outside the buffer, if any). Returns the new
        outside carry and where the carry in the buffer starts (end when there is none)."""
        if extra or buf is not self._buf:
            joined = extra + bytes(buf[start:end])
            self.consumed = len(joined)
            yield joined, 0, len(joined)
            return joined[min(max(self.consumed, 0), len(joined)):], end
        self.consumed = end
        yield buf, start, end
        return b"", min(max(self.consumed, start), end)


__all__ = ["BlockReader", "BLOCK"]
