"""A process's stdout and stderr read as lines by one thread, in the order they were written
as far as two pipes can tell.

Two reader threads, one per pipe, stamp lines in whatever order the scheduler runs them: on a
loaded machine a tqdm bar vLLM writes to stderr after ten log lines on stdout can arrive first,
and the startup timeline (logs/timeline.py, whose phases never go backwards) then skips the
phases those ten lines anchor. Here one thread waits on both pipes and, whenever both hold
data, empties stdout before it reads stderr: everything written to stdout before a stderr line
is in the stdout pipe by the time that line is, so a stderr line never comes out ahead of stdout
written before it. (The converse, stdout written a moment after a stderr line coming out first
when both are pending at once, cannot be told apart with two pipes; vLLM's phase anchors are on
stdout, its stderr carries progress bars and uvicorn's lines.)

A line longer than `max_line` bytes comes out in pieces of `max_line`; a last line without a
newline comes out at end of file. Each line is stamped with the time it was read.
"""

from __future__ import annotations

import os
import selectors
import time
from typing import IO, Callable, Sequence

Emit = Callable[[str, str, float], None]  # (stream name, line without its newline, read time)
_CHUNK = 65536


def pump(streams: Sequence[tuple[str, IO[bytes]]], emit: Emit, max_line: int) -> None:
    """Read every stream to its end; `streams` in priority order (stdout first)."""
    selector = selectors.DefaultSelector()
    pending: dict[int, bytearray] = {}
    for rank, (name, stream) in enumerate(streams):
        fd = stream.fileno()
        os.set_blocking(fd, False)
        selector.register(fd, selectors.EVENT_READ, (rank, name))
        pending[fd] = bytearray()
    try:
        while selector.get_map():
            ready = sorted((key.data, key.fd) for key, _ in selector.select())
            for (_, name), fd in ready:
                if not _drain(fd, name, pending[fd], emit, max_line):
                    selector.unregister(fd)
    finally:
        selector.close()


def _drain(fd: int, name: str, buf: bytearray, emit: Emit, max_line: int) -> bool:
    """Read what the pipe holds now; False at end of file (the rest of `buf` is emitted)."""
    while True:
        try:
            chunk = os.read(fd, _CHUNK)
        except BlockingIOError:
            return True
        except OSError:
            chunk = b""
        if not chunk:
            if buf:
                _emit(name, bytes(buf), emit)
                buf.clear()
            return False
        buf += chunk
        _lines(name, buf, emit, max_line)


def _lines(name: str, buf: bytearray, emit: Emit, max_line: int) -> None:
    start = 0
    while True:
        end = buf.find(b"\n", start, start + max_line)
        if end >= 0:
            _emit(name, bytes(buf[start:end]), emit)
            start = end + 1
        elif len(buf) - start >= max_line:
            _emit(name, bytes(buf[start:start + max_line]), emit)
            start += max_line
        else:
            break
    del buf[:start]


def _emit(name: str, raw: bytes, emit: Emit) -> None:
    emit(name, raw.decode("utf-8", "replace"), time.time())
