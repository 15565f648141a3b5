"""Incremental Server-Sent Events decoder (the subset OpenAI-compatible servers use).

Bytes arrive in arbitrary pieces; `feed()` returns the complete events they finish. Only the
`data` field matters for these servers; `event`, `id` and `retry` fields and comment lines are
accepted and ignored. Lines may end in LF, CRLF or CR. An event's data lines are joined with LF.
"""

from __future__ import annotations

MAX_EVENT_BYTES = 64 * 1024 * 1024  # one event larger than this is not a sane chunk


class SSEError(ValueError):
    """The byte stream is not valid Server-Sent Events."""


class SSEDecoder:
    """Turns a byte stream into a list of event data strings, piece by piece."""

    def __init__(self) -> None:
        self._buffer = b""
        self._data: list[str] = []
        self._event_bytes = 0
        self.saw_any_field = False

    def feed(self, piece: bytes) -> list[str]:
        """Consume bytes; return the data of every event completed by them."""
        self._buffer += piece
        events: list[str] = []
        while True:
            cut, width = _next_line_end(self._buffer)
            if cut < 0:
                if len(self._buffer) > MAX_EVENT_BYTES:
                    raise SSEError(f"a line longer than {MAX_EVENT_BYTES} bytes")
                return events
            raw, self._buffer = self._buffer[:cut], self._buffer[cut + width :]
            event = self._line(raw)
            if event is not None:
                events.append(event)

    def close(self) -> list[str]:
        """End of stream: a final event without its blank line still counts."""
        events = []
        if self._buffer.endswith(b"\r"):  # a CR held back in case an LF followed: a line end
            events.extend(self.feed(b"\n"))
        if self._buffer:
            event = self._line(self._buffer)
            self._buffer = b""
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
        try:
            line = raw.decode("utf-8")
        except UnicodeDecodeError as exc:
            raise SSEError(f"invalid UTF-8 in the event stream at byte {exc.start}") from exc
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


def _next_line_end(buffer: bytes) -> tuple[int, int]:
    """Index and width of the first line terminator (LF, CRLF or CR), or (-1, 0)."""
    lf = buffer.find(b"\n")
    cr = buffer.find(b"\r")
    if cr < 0:
        return lf, 1 if lf >= 0 else 0
    if lf >= 0 and lf < cr:
        return lf, 1
    if cr == len(buffer) - 1:
        return -1, 0  # a CR at the end may be the first half of CRLF: wait for more
    if buffer[cr + 1 : cr + 2] == b"\n":
        return cr, 2
    return cr, 1
