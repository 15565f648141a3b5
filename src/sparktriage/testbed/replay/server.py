"""Loopback HTTP servers of the test bed: the replay server, and the plumbing the proxy shares.

`LoopbackServer` listens on 127.0.0.1 on a port the kernel picks (no race for a "free" port),
answers from a thread per connection (HTTP/1.1, keep-alive) and hands every request, its body
read with a cap, to a `respond(method, path, body)` callable. A request body over the cap, or
one without a Content-Length, is answered 413/411 and never read.

`ReplayServer` answers from a `Recording`: the n-th request with a key gets the n-th recorded
response, byte for byte. A request it has no recording for (never recorded, or asked more often
than recorded) gets HTTP 500 with a message that says so and is kept in `misses`; `unused()`
lists what was recorded and never asked. A test that replays must assert both are empty: a
5xx is evidence to the probe, so a miss alone would not always fail a verdict.
"""

from __future__ import annotations

import json
import threading
from http.server import BaseHTTPRequestHandler, ThreadingHTTPServer
from typing import Callable

from sparktriage.testbed.replay.exchanges import Exchange, Key, Recording, canonical_body, describe

REQUEST_MAX_BYTES = 4 << 20
Response = tuple[int, tuple[tuple[str, str], ...], bytes]
Respond = Callable[[str, str, bytes], Response]
RERUN = "rerun provision/garbage/record.py (docs/testbed.md, 'Recordings')"


def _handler(respond: Respond) -> type[BaseHTTPRequestHandler]:
    class Handler(BaseHTTPRequestHandler):
        protocol_version = "HTTP/1.1"

        def _answer(self, status: int, headers, body: bytes) -> None:
            self.send_response(status)
            for name, value in headers:
                self.send_header(name, value)
            self.send_header("Content-Length", str(len(body)))
            self.end_headers()
            self.wfile.write(body)

        def _handle(self) -> None:
            length = self.headers.get("Content-Length")
            if length is None and self.command in ("POST", "PUT", "PATCH"):
                self.close_connection = True
                return self._answer(411, (("content-type", "text/plain"),), b"Content-Length required\n")
            size = int(length or 0)
            if size < 0 or size > REQUEST_MAX_BYTES:
                self.close_connection = True
                return self._answer(413, (("content-type", "text/plain"),), b"request body too large\n")
            body = self.rfile.read(size) if size else b""
            self._answer(*respond(self.command, self.path, body))

        do_GET = do_POST = do_PUT = do_DELETE = do_PATCH = _handle

        def log_message(self, format, *args) -> None:  # noqa: A002 - the stdlib's name
            return

    return Handler


class _Server(ThreadingHTTPServer):
    daemon_threads = True
    request_queue_size = 128  # the probe opens up to 32 connections at once


class LoopbackServer:
    """An HTTP server on 127.0.0.1 answering with `respond`; a context manager (stopped on exit)."""

    def __init__(self, respond: Respond) -> None:
        self._server = _Server(("127.0.0.1", 0), _handler(respond))
        self._thread = threading.Thread(target=self._server.serve_forever, name="loopback-http", daemon=True)

    @property
    def base_url(self) -> str:
        return f"http://127.0.0.1:{self._server.server_address[1]}"

    def __enter__(self):
        self._thread.start()
        return self

    def __exit__(self, *exc) -> None:
        self._server.shutdown()
        self._server.server_close()
        self._thread.join(timeout=10)


def miss_response(key: Key) -> Response:
    """The loud answer to a request the recording does not hold."""
    message = f"replay: no recorded response for {describe(key)}; {RERUN}"
    body = json.dumps({"error": {"message": message, "type": "ReplayMiss", "code": 500}}).encode()
    return 500, (("content-type", "application/json"), ("x-replay-miss", "1")), body


class ReplayServer(LoopbackServer):
    """Serves one recording back (module doc); `misses` and `unused()` say what did not match."""

    def __init__(self, recording: Recording) -> None:
        self._queues = recording.queues()
        self._lock = threading.Lock()
        self.misses: list[str] = []
        self.answered = 0
        super().__init__(self._respond)

    def _respond(self, method: str, path: str, body: bytes) -> Response:
        key = (method, path, canonical_body(body))
        with self._lock:
            queue = self._queues.get(key)
            ex: Exchange | None = queue.popleft() if queue else None
            if ex is None:
                self.misses.append(describe(key))
                return miss_response(key)
            self.answered += 1
        return ex.status, ex.headers, ex.body

    def unused(self) -> list[str]:
        """Recorded requests never asked (one line each, with how many answers were left)."""
        with self._lock:
            return [f"{describe(key)} (x{len(q)})" for key, q in sorted(self._queues.items()) if q]
