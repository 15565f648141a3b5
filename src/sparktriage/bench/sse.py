"""Incremental Server-Sent Events decoder (the subset OpenAI-compatible servers use).

Bytes arrive in arbitrary pieces; `feed()` returns the complete events they finish. Only the
`data` field matters for these servers; `event`, `id` and `retry` fields and comment lines are
accepted and ignored. Lines may end in LF, CRLF or CR. An event's data lines are joined with LF.
"""

from __future__ import annotations

from sparktriage.limits import LINE_MAX_BYTES, RESPONSE_MAX_BYTES

MAX_EVENT_BYTES = RESPONSE_MAX_BYTES  # one event larger than this is not a sane chunk
MAX_LINE_BYTES = LINE_MAX_BYTES


class SSEError(ValueError):
    """The byte stream is not valid Server-Sent Events; `kind` names the fault."""

    def __init__(self, message: str, kind: str = "malformed") -> None:
        super().__init__(message)
        self.kind = kind


class SSEDecoder:
    """Turns a byte stream into a list of event data strings, piece by piece.

    Linear in the bytes fed: the buffer grows in place and a line end is searched for only in
    bytes not searched before, so one huge line costs no more than many short ones (and is
    refused past `MAX_LINE_BYTES` with kind `line-too-long`). Bytes that are not UTF-8 are kept
    as surrogate escapes (the record writer stores them escaped, flagged)."""

    def __init__(self) -> None:
        self._buffer = bytearray()
        self._searched = 0  # bytes of the buffer known to hold no line end
        self._data: list[str] = []
        self._event_bytes = 0
        self.saw_any_field = False

    def feed(self, piece: bytes) -> list[str]:
        """Consume bytes; return the data of every event completed by them."""
        buf = self._buffer
        buf += piece
        events: list[str] = []
        pos = 0
        while True:
            cut, width = _next_line_end(buf, max(pos, self._searched))
            if cut < 0:
                if pos:
                    del buf[:pos]
                self._searched = max(0, len(buf) - 1)  # a trailing CR may pair with an LF
                if len(buf) > MAX_LINE_BYTES:
                    raise SSEError(f"a line longer than {MAX_LINE_BYTES} bytes", "line-too-long")
                return events
            raw = bytes(buf[pos:cut])
            pos = cut + width
            self._searched = 0
            event = self._line(raw)
            if event is not None:
                events.append(event)

    def close(self) -> list[str]:
        """End of stream: a final event without its blank line still counts."""
        events = []
        if self._buffer.endswith(b"\r"):  # a CR held back in case an LF followed: a line end
            events.extend(self.feed(b"\n"))
        if self._buffer:
            event = self._line(bytes(self._buffer))
            self._buffer = bytearray()
            if event is not None:
                events.append(event)
        if self._data:
            events.append("\n".join(self._data))
            self._data = []
        return events

    def _line(self, raw: bytes) -> str | None:
        if not raw:
            if not self._data:
                return None
            event, self._data, self._event_bytes = "\n".join(self._data), [], 0
            return event
        line = raw.decode("utf-8", "surrogateescape")
        if line.startswith(":"):
            return None
        name, sep, value = line.partition(":")
        if not sep:
            value = ""
        elif value.startswith(" "):
            value = value[1:]
        if name == "data":
            self.saw_any_field = True
            self._event_bytes += len(raw)
            if self._event_bytes > MAX_EVENT_BYTES:
                raise SSEError(f"an event larger than {MAX_EVENT_BYTES} bytes")
            self._data.append(value)
        elif name in ("event", "id", "retry"):
            self.saw_any_field = True
        else:
            raise SSEError(f"unexpected line in the event stream: {line[:80]!r}")
        return None


def _next_line_end(buffer: bytes | bytearray, start: int = 0) -> tuple[int, int]:
    """Index and width of the first line terminator (LF, CRLF or CR) at or after `start`."""
    lf = buffer.find(b"\n", start)
    cr = buffer.find(b"\r", start, lf if lf >= 0 else len(buffer))
    if cr < 0:
        return lf, 1 if lf >= 0 else 0
    if cr == len(buffer) - 1:
        return -1, 0  # a CR at the end may be the first half of CRLF: wait for more
    if buffer[cr + 1 : cr + 2] == b"\n":
        return cr, 2
    return cr, 1
