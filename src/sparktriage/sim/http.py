"""Just enough HTTP/1.1 for the simulator: read requests, frame responses.

Requests: request line, headers, and a body given by Content-Length or chunked transfer
encoding; keep-alive unless the client says `Connection: close`. Responses: a status line and
headers; streamed bodies use chunked transfer encoding (as uvicorn does for vLLM), one HTTP
chunk per SSE event. Anything malformed raises `HTTPParseError`, answered with a 400.
"""

from __future__ import annotations

import asyncio
from dataclasses import dataclass
from urllib.parse import parse_qs, urlsplit

MAX_HEAD = 64 * 1024
MAX_BODY = 32 * 1024 * 1024

REASONS = {200: "OK", 400: "Bad Request", 401: "Unauthorized", 404: "Not Found",
           405: "Method Not Allowed", 413: "Payload Too Large", 422: "Unprocessable Entity",
           429: "Too Many Requests", 500: "Internal Server Error", 502: "Bad Gateway",
           503: "Service Unavailable", 504: "Gateway Timeout"}


class HTTPParseError(ValueError):
    """The bytes received are not an acceptable HTTP/1.1 request."""


@dataclass(frozen=True)
class Request:
    """One parsed HTTP request."""

    method: str
    path: str
    query: dict[str, list[str]]
    headers: dict[str, str]  # lower-case names
    body: bytes
    keep_alive: bool


async def read_request(reader: asyncio.StreamReader) -> Request | None:
    """The next request on a connection, or None when the client closed it cleanly."""
    try:
        head = await reader.readuntil(b"\r\n\r\n")
    except asyncio.IncompleteReadError as exc:
        if not exc.partial.strip():
            return None
        raise HTTPParseError("connection closed inside the request head") from exc
    except asyncio.LimitOverrunError as exc:
        raise HTTPParseError("request head too large") from exc
    if len(head) > MAX_HEAD:
        raise HTTPParseError("request head too large")
    lines = head.decode("latin-1").split("\r\n")
    parts = lines[0].split(" ")
    if len(parts) != 3 or not parts[2].startswith("HTTP/1."):
        raise HTTPParseError(f"bad request line {lines[0][:80]!r}")
    method, target, version = parts
    headers: dict[str, str] = {}
    for line in lines[1:]:
        if not line:
            continue
        name, sep, value = line.partition(":")
        if not sep or not name or name != name.strip():
            raise HTTPParseError(f"bad header line {line[:80]!r}")
        headers[name.lower()] = value.strip()
    body = await _read_body(reader, headers)
    connection = headers.get("connection", "").lower()
    keep_alive = connection != "close" if version == "HTTP/1.1" else connection == "keep-alive"
    url = urlsplit(target)
    return Request(method, url.path or "/", parse_qs(url.query), headers, body, keep_alive)


async def _read_body(reader: asyncio.StreamReader, headers: dict[str, str]) -> bytes:
    try:
        if "chunked" in headers.get("transfer-encoding", "").lower():
            body = b""
            while True:
                size_line = await reader.readuntil(b"\r\n")
                size = int(size_line.split(b";")[0].strip() or b"x", 16)
                if size == 0:
                    await reader.readuntil(b"\r\n")  # trailers are not supported; expect none
                    return body
                body += await reader.readexactly(size + 2)
                body = body[:-2]
                if len(body) > MAX_BODY:
                    raise HTTPParseError("request body too large")
        length = int(headers.get("content-length", "0") or "0")
    except ValueError as exc:
        raise HTTPParseError("bad body length") from exc
    except (asyncio.IncompleteReadError, asyncio.LimitOverrunError) as exc:
        raise HTTPParseError("connection closed inside the request body") from exc
    if length < 0 or length > MAX_BODY:
        raise HTTPParseError("bad body length")
    try:
        return await reader.readexactly(length) if length else b""
    except asyncio.IncompleteReadError as exc:
        raise HTTPParseError("connection closed inside the request body") from exc


def head(status: int, headers: dict[str, str]) -> bytes:
    """Status line and headers, ending with the blank line."""
    lines = [f"HTTP/1.1 {status} {REASONS.get(status, 'Status')}"]
    lines += [f"{name}: {value}" for name, value in headers.items()]
    return ("\r\n".join(lines) + "\r\n\r\n").encode("latin-1")


def whole(status: int, body: bytes, content_type: str, keep_alive: bool) -> bytes:
    """A complete response with a Content-Length body."""
    return head(status, {"content-type": content_type, "content-length": str(len(body)),
                         "connection": "keep-alive" if keep_alive else "close",
                         "server": "sparktriage-sim"}) + body


def stream_head(keep_alive: bool) -> bytes:
    """Head of an event-stream response with chunked transfer encoding."""
    return head(200, {"content-type": "text/event-stream; charset=utf-8", "cache-control": "no-cache",
                      "transfer-encoding": "chunked", "server": "sparktriage-sim",
                      "connection": "keep-alive" if keep_alive else "close"})


def chunk(data: bytes) -> bytes:
    """One HTTP chunk (empty data would end the body, so it is not allowed here)."""
    return b"%x\r\n%s\r\n" % (len(data), data)


LAST_CHUNK = b"0\r\n\r\n"
