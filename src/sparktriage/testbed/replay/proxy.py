"""The recording proxy: forwards every request to a real server and keeps the exchange.

`RecordingProxy(upstream)` is a `LoopbackServer` (127.0.0.1, a port the kernel picks) that
sends each request on its own connection to `upstream` (with a JSON content type and accept
header, whatever the client sent: what is recorded does not depend on the client), reads the whole response (capped at
`limits.RESPONSE_MAX_BYTES`; a streamed body is kept as its whole byte stream, its timing is
not), answers the client with it and appends the `Exchange`. A request the upstream could not
answer (connection refused, timeout, a body over the cap) is answered 502 and kept in
`failures`, never in the recording; `recording()` refuses to build one when there are any.
"""

from __future__ import annotations

import http.client
import threading
from urllib.parse import urlsplit

from sparktriage.errors import EndpointError
from sparktriage.limits import RESPONSE_MAX_BYTES
from sparktriage.testbed.replay.exchanges import Exchange, Recording, canonical_body, describe, response_headers
from sparktriage.testbed.replay.server import LoopbackServer, Response

FORWARDED_HEADERS = {"Content-Type": "application/json", "Accept": "application/json"}


class RecordingProxy(LoopbackServer):
    """Forward to `upstream` (an http:// base URL) and record (module doc)."""

    def __init__(self, upstream: str, timeout_s: float = 300.0) -> None:
        parts = urlsplit(upstream)
        if parts.scheme != "http" or not parts.hostname:
            raise EndpointError(f"the recording proxy forwards to http:// servers only, not {upstream!r}")
        self._host, self._port, self._timeout_s = parts.hostname, parts.port or 80, timeout_s
        self._lock = threading.Lock()
        self._seen: list[tuple[int, Exchange]] = []
        self._arrivals = 0
        self.failures: list[str] = []
        super().__init__(self._forward)

    def _forward(self, method: str, path: str, body: bytes) -> Response:
        with self._lock:
            order, self._arrivals = self._arrivals, self._arrivals + 1
        request = canonical_body(body)
        conn = http.client.HTTPConnection(self._host, self._port, timeout=self._timeout_s)
        try:
            conn.request(method, path, body=body or None, headers=dict(FORWARDED_HEADERS))
            answer = conn.getresponse()
            data = answer.read(RESPONSE_MAX_BYTES + 1)
            if len(data) > RESPONSE_MAX_BYTES:
                raise OSError(f"response body over {RESPONSE_MAX_BYTES} bytes")
            status, kept = answer.status, response_headers(answer.getheaders())
        except (OSError, http.client.HTTPException) as exc:
            why = f"{describe((method, path, request))}: {type(exc).__name__}: {exc}"
            with self._lock:
                self.failures.append(why)
            return 502, (("content-type", "text/plain"),), f"recording proxy: {why}\n".encode()
        finally:
            conn.close()
        with self._lock:
            self._seen.append((order, Exchange(method, path, request, status, kept, data)))
        return status, kept, data

    def exchanges(self) -> list[Exchange]:
        """What was recorded so far, in the order the requests arrived."""
        with self._lock:
            return [ex for _, ex in sorted(self._seen, key=lambda item: item[0])]

    def recording(self, meta: dict) -> Recording:
        """The recording of this session; EndpointError when any request was not answered."""
        if self.failures:
            raise EndpointError(f"{len(self.failures)} request(s) were not answered by {self._host}:{self._port}: "
                                f"{self.failures[0]}")
        return Recording(meta, self.exchanges())
