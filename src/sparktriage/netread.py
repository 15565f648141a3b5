"""A bounded HTTP GET for pages servers hand us whole (`/metrics`, `/health`, `/v1/models`).

The body is streamed and reading stops past `max_bytes` or past the total `timeout_s` (a
server that never ends its page, or trickles it, cannot grow the client or hold it forever).
Limits: docs/limits.md.
"""

from __future__ import annotations

import time

import httpx

from sparktriage.errors import EndpointError, InputError
from sparktriage.limits import METRICS_MAX_BYTES, size_text


def get_bounded(url: str, timeout_s: float = 10.0, headers: dict | None = None,
                max_bytes: int = METRICS_MAX_BYTES, what: str = "page") -> tuple[int, bytes]:
    """(HTTP status, body) of a GET; EndpointError when unreachable or too slow, InputError
    when the body passes `max_bytes`."""
    deadline = time.monotonic() + timeout_s
    body = bytearray()
    try:
        with httpx.stream("GET", url, timeout=timeout_s, headers=headers or {},
                          trust_env=False) as response:
            for block in response.iter_raw(65536):
                body += block
                if len(body) > max_bytes:
                    raise InputError(f"{url}: {what} exceeds the limit of "
                                     f"{size_text(max_bytes)}", hint="see docs/limits.md")
                if time.monotonic() > deadline:
                    raise EndpointError(f"cannot scrape {url}: {what} not complete within "
                                        f"{timeout_s:g} s")
            return response.status_code, bytes(body)
    except httpx.HTTPError as exc:
        raise EndpointError(f"cannot scrape {url}: {str(exc) or type(exc).__name__}") from exc
