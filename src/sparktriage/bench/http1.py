"""A lean HTTP/1.1 client for timing streamed responses: timestamp reads, parse later.

The measurement instrument of the protocol. An `asyncio.Protocol` receives each socket read in
`data_received`, stamps it with `time.perf_counter()` and appends it; the only other work done
while the stream runs is locating HTTP chunk boundaries (to know when the body ends). SSE and
JSON decoding happen after the stream, attributing each event to the read that completed it.
So a fast stream is never slowed or smeared by the client's own parsing (docs/metrics.md,
"client"). The body is bounded while it arrives (docs/limits.md): `read_body` can cap its bytes,
its longest line and its count of SSE `data:` lines; past a cap the read ends with an
`overlong` or `line-too-long` failure and the connection is closed (each byte is looked at once,
so a huge line costs linear time). Supports http and https (TLS via `ssl`), keep-alive reuse, Content-Length, chunked
and close-delimited bodies; no proxies, no redirects, no compression (`identity` is asked).
"""

from __future__ import annotations

import asyncio
import ssl
import time
from dataclasses import dataclass
from urllib.parse import urlsplit

MAX_HEAD = 64 * 1024


class HTTPFailure(Exception):
    """A transport-level failure; `kind` is connect, timeout, stall, closed, reset or protocol."""

    def __init__(self, kind: str, message: str) -> None:
        super().__init__(message)
        self.kind = kind


@dataclass(frozen=True)
class Head:
    status: int
    reason: str
    headers: dict[str, str]  # lower-case names; repeated headers joined with ", "
    t: float  # perf_counter when the head was complete


@dataclass(frozen=True)
class Body:
    """A received body as (receive time, de-framed bytes) per socket read, and how it ended."""

    pieces: list[tuple[float, bytes]]
    complete: bool
    failure: HTTPFailure | None


class _Connection(asyncio.Protocol):
    def __init__(self) -> None:
        self.transport: asyncio.Transport | None = None
        self.raw = bytearray()
        self.reads: list[tuple[float, int]] = []  # (time, raw length after the read)
        self.lost: BaseException | None = None
        self.eof = False
        self.closed = False
        self._waiter: asyncio.Future | None = None
        self._mode = "idle"
        self.last_activity = time.monotonic()
        self._reset_message()

    def _reset_message(self) -> None:
        self.raw = bytearray()
        self.reads = []
        self.head_end = -1
        self.framing = "none"  # chunked | length | close | none
        self.length = 0
        self.next_header = 0
        self.ranges: list[tuple[int, int]] = []
        self.body_end = -1
        self.frame_error: str | None = None
        self.caps: tuple[int | None, int | None, int | None] = (None, None, None)
        self.over: tuple[str, str] | None = None  # (kind, message) once a cap is passed
        self._range_i = 0  # de-framed content looked at so far: range index, raw position
        self._cursor = 0
        self._line = 0  # bytes of the current (unfinished) line
        self._at_line_start = True
        self.data_lines = 0

    # --- asyncio.Protocol ----------------------------------------------------------------
    def connection_made(self, transport) -> None:
        self.transport = transport

    def data_received(self, data: bytes) -> None:
        t = time.perf_counter()
        self.raw += data
        self.reads.append((t, len(self.raw)))
        self.last_activity = time.monotonic()
        if self._mode == "head":
            if self.raw.find(b"\r\n\r\n") >= 0 or len(self.raw) > MAX_HEAD:
                self._wake()
        elif self._mode == "body":
            self._scan()
            self._bound()
            if self.body_end >= 0 or self.frame_error or self.over:
                self._wake()

    def eof_received(self):
        self.eof = True
        self._wake()
        return False

    def connection_lost(self, exc) -> None:
        self.closed = True
        self.lost = exc
        self._wake()

    def _wake(self) -> None:
        if self._waiter is not None and not self._waiter.done():
            self._waiter.set_result(None)

    # --- framing -------------------------------------------------------------------------
    def _scan(self) -> None:
        raw = self.raw
        if self.framing == "length":
            if len(raw) - self.next_header >= self.length:
                self.body_end = self.next_header + self.length
            return
        if self.framing != "chunked":
            return
        pos = self.next_header
        while pos < len(raw):
            eol = raw.find(b"\r\n", pos)
            if eol < 0:
                if len(raw) - pos > 1024:
                    self.frame_error = "bad chunk header"
                return
            try:
                size = int(bytes(raw[pos:eol]).split(b";")[0].strip(), 16)
            except ValueError:
                self.frame_error = f"bad chunk size line {bytes(raw[pos:eol])[:40]!r}"
                return
            if size == 0:
                end = raw.find(b"\r\n\r\n", eol)
                if end >= 0:
                    self.body_end = end + 4
                return
            self.ranges.append((eol + 2, eol + 2 + size))
            pos = eol + 2 + size + 2
            self.next_header = pos

    def _bound(self) -> None:
        """Check the caps on the de-framed content that arrived since the last call."""
        max_bytes, max_line, max_events = self.caps
        if self.over or (max_bytes is None and max_line is None and max_events is None):
            return
        raw = self.raw
        if max_bytes is not None and len(raw) - self.head_end > max_bytes:
            self.over = ("overlong", f"response body past {max_bytes} bytes")
            return
        ranges = self.ranges if self.framing == "chunked" else [(self.head_end, len(raw))]
        if self.framing != "chunked":
            self._range_i = 0
        while self._range_i < len(ranges):
            a, b = ranges[self._range_i]
            lo, hi = max(a, self._cursor), min(b, len(raw))
            if hi > lo:
                self.data_lines += raw.count(b"\ndata:", lo, hi)
                if self._at_line_start and raw.startswith(b"data:", lo):
                    self.data_lines += 1
                newline = raw.rfind(b"\n", lo, hi)
                self._line = hi - newline - 1 if newline >= 0 else self._line + hi - lo
                self._at_line_start = raw[hi - 1] == 0x0A
                self._cursor = hi
            if hi < b or self.framing != "chunked":
                break
            self._range_i += 1
        if max_line is not None and self._line > max_line:
            self.over = ("line-too-long", f"a line longer than {max_line} bytes")
        elif max_events is not None and self.data_lines > max_events:
            self.over = ("overlong", f"more than {max_events} events")

    # --- waiting -------------------------------------------------------------------------
    async def wait(self, mode: str, done, stall_s: float, deadline: float) -> None:
        """Wait until `done()`; raise HTTPFailure on stall, deadline, reset or close."""
        self._mode = mode
        loop = asyncio.get_running_loop()
        try:
            while not done():
                if self.closed or self.eof:
                    if isinstance(self.lost, ConnectionResetError):
                        raise HTTPFailure("reset", "connection reset by peer")
                    if self.lost is not None:
                        raise HTTPFailure("reset", f"connection lost ({self.lost})")
                    raise HTTPFailure("closed", "server closed the connection")
                if self.frame_error:
                    raise HTTPFailure("protocol", self.frame_error)
                if self.over:
                    raise HTTPFailure(*self.over)
                now = time.monotonic()
                if now >= deadline:
                    raise HTTPFailure("timeout", "request deadline passed")
                if now - self.last_activity >= stall_s:
                    raise HTTPFailure("stall", f"no data for {stall_s:g} s")
                self._waiter = loop.create_future()
                wake_at = min(self.last_activity + stall_s, deadline)
                try:
                    await asyncio.wait_for(self._waiter, max(0.0, wake_at - now))
                except asyncio.TimeoutError:
                    pass
        finally:
            self._mode = "idle"
            self._waiter = None


class Client:
    """Streams requests to one server, keeping one idle connection for reuse."""

    def __init__(self, base_url: str, headers: dict[str, str], connect_timeout_s: float = 10.0,
                 verify: bool = True) -> None:
        url = urlsplit(base_url)
        if url.scheme not in ("http", "https") or not url.hostname:
            raise ValueError(f"not an http(s) URL: {base_url!r}")
        self.host = url.hostname
        self.port = url.port or (443 if url.scheme == "https" else 80)
        self.prefix = url.path.rstrip("/")
        self.ssl: ssl.SSLContext | None = None
        if url.scheme == "https":
            self.ssl = ssl.create_default_context()
            if not verify:
                self.ssl.check_hostname = False
                self.ssl.verify_mode = ssl.CERT_NONE
        host_header = url.netloc.rpartition("@")[2]
        self.headers = {"Host": host_header, "User-Agent": "sparktriage", "Accept-Encoding": "identity",
                        **headers}
        self.connect_timeout_s = connect_timeout_s
        self._idle: _Connection | None = None

    async def _connect(self) -> _Connection:
        loop = asyncio.get_running_loop()
        try:
            _, conn = await asyncio.wait_for(
                loop.create_connection(_Connection, self.host, self.port, ssl=self.ssl,
                                       server_hostname=self.host if self.ssl else None),
                self.connect_timeout_s)
        except asyncio.TimeoutError as exc:
            raise HTTPFailure("connect", f"no connection within {self.connect_timeout_s:g} s") from exc
        except ConnectionRefusedError as exc:
            raise HTTPFailure("connect", "connection refused") from exc
        except (OSError, ssl.SSLError) as exc:
            raise HTTPFailure("connect", " ".join(str(exc).split()) or type(exc).__name__) from exc
        return conn

    def _request_bytes(self, method: str, path: str, body: bytes, extra: dict[str, str]) -> bytes:
        headers = {**self.headers, **extra, "Content-Length": str(len(body))}
        lines = [f"{method} {self.prefix}{path} HTTP/1.1"] + [f"{k}: {v}" for k, v in headers.items()]
        return ("\r\n".join(lines) + "\r\n\r\n").encode("latin-1") + body

    async def send(self, method: str, path: str, body: bytes, headers: dict[str, str],
                   stall_s: float, deadline: float) -> tuple[_Connection, float, Head]:
        """Send a request; return the connection, the send time and the response head."""
        data = self._request_bytes(method, path, body, headers)
        for attempt in (0, 1):
            conn, reused = (self._idle, True) if self._idle is not None else (await self._connect(), False)
            self._idle = None
            if conn.closed or conn.eof:
                conn.transport.close()
                continue
            conn._reset_message()
            t0 = time.perf_counter()
            conn.transport.write(data)
            conn.last_activity = time.monotonic()
            try:
                await conn.wait("head", lambda: conn.raw.find(b"\r\n\r\n") >= 0 or len(conn.raw) > MAX_HEAD,
                                stall_s, deadline)
            except HTTPFailure as exc:
                conn.transport.close()
                if reused and not conn.raw and exc.kind in ("closed", "reset") and attempt == 0:
                    continue  # the server had closed the idle connection: retry on a new one
                raise
            return conn, t0, _parse_head(conn, method)
        raise HTTPFailure("closed", "server closed the connection")  # pragma: no cover

    async def read_body(self, conn: _Connection, stall_s: float, deadline: float,
                        limit: int | None = None, *, max_bytes: int | None = None,
                        max_line: int | None = None, max_events: int | None = None) -> Body:
        """Read the body; timestamps are kept per read. Returns even when the stream fails.

        `limit` stops quietly after that many bytes (error bodies); `max_bytes`, `max_line` and
        `max_events` (SSE data lines) end the read with an `overlong`/`line-too-long` failure."""
        failure = None
        conn.caps = (max_bytes, max_line, max_events)
        done = (lambda: conn.body_end >= 0) if limit is None else (
            lambda: conn.body_end >= 0 or len(conn.raw) - conn.head_end >= limit)
        try:
            conn._scan()
            conn._bound()
            await conn.wait("body", done, stall_s, deadline)
        except HTTPFailure as exc:
            if conn.framing == "close" and exc.kind == "closed":
                conn.body_end = len(conn.raw)
            else:
                failure = exc
        if failure is not None and failure.kind in ("overlong", "line-too-long"):
            conn.body_end = -1
        pieces = _pieces(conn)
        reusable = (failure is None and conn.body_end == len(conn.raw) and conn.framing != "close"
                    and not conn.closed and not conn.eof and limit is None
                    and conn.headers.get("connection", "").lower() != "close")
        if reusable:
            self._idle = conn
        else:
            conn.transport.close()
        return Body(pieces, failure is None and conn.body_end >= 0, failure)

    async def aclose(self) -> None:
        if self._idle is not None:
            self._idle.transport.close()
            self._idle = None

    async def __aenter__(self) -> "Client":
        return self

    async def __aexit__(self, *exc) -> None:
        await self.aclose()


def _parse_head(conn: _Connection, method: str) -> Head:
    while True:
        end = conn.raw.find(b"\r\n\r\n")
        if end < 0:
            raise HTTPFailure("protocol", "response head too large")
        lines = bytes(conn.raw[:end]).decode("latin-1").split("\r\n")
        parts = lines[0].split(" ", 2)
        if len(parts) < 2 or not parts[0].startswith("HTTP/") or not parts[1].isdigit():
            raise HTTPFailure("protocol", f"not an HTTP response: {lines[0][:60]!r}")
        status = int(parts[1])
        headers: dict[str, str] = {}
        for line in lines[1:]:
            name, _, value = line.partition(":")
            key = name.strip().lower()
            headers[key] = f"{headers[key]}, {value.strip()}" if key in headers else value.strip()
        t = next((t for t, n in conn.reads if n >= end + 4), time.perf_counter())
        if 100 <= status < 200:  # informational: drop it and read the real head
            rest = conn.raw[end + 4:]
            conn._reset_message()
            conn.raw += rest
            conn.reads.append((t, len(conn.raw)))
            if conn.raw.find(b"\r\n\r\n") < 0:
                raise HTTPFailure("protocol", "informational response without a final one")
            continue
        break
    conn.head_end = conn.next_header = end + 4
    conn.headers = headers
    if method == "HEAD" or status in (204, 304):
        conn.framing, conn.length = "length", 0
    elif "chunked" in headers.get("transfer-encoding", "").lower():
        conn.framing = "chunked"
    elif headers.get("content-length", "").strip().isdigit():
        conn.framing, conn.length = "length", int(headers["content-length"])
    else:
        conn.framing = "close"
    return Head(status, parts[2] if len(parts) > 2 else "", headers, t)


def _pieces(conn: _Connection) -> list[tuple[float, bytes]]:
    """De-framed body bytes per socket read, with that read's receive time."""
    raw, start = conn.raw, conn.head_end
    if conn.framing == "chunked":
        ranges = conn.ranges
    else:
        stop = conn.body_end if conn.body_end >= 0 else len(raw)
        ranges = [(start, stop)]
    pieces: list[tuple[float, bytes]] = []
    previous = 0
    r = 0
    for t, end in conn.reads:
        if end <= start:
            previous = end
            continue
        lo = max(previous, start)
        parts = []
        while r < len(ranges) and ranges[r][0] < end:
            a, b = max(ranges[r][0], lo), min(ranges[r][1], end, len(raw))
            if b > a:
                parts.append(raw[a:b])
            if ranges[r][1] <= end:
                r += 1
            else:
                break
        if parts:
            pieces.append((t, bytes(b"".join(parts))))
        previous = end
    return pieces
