"""Streaming OpenAI-compatible client that records what arrives, chunk by chunk.

One call sends one request and returns its raw record (records.py): the receive time of every
SSE event (seconds after the request was written, `time.perf_counter`), the token facts of
every chunk, the final usage and how the stream ended. Reading and decoding are separate
(http1.py): during the stream only socket reads are stamped; events are decoded afterwards.
Nothing is dropped: HTTP errors, mid-stream error events, malformed streams, stalls and
dropped connections all come back as records with a status and a reason, carrying whatever
tokens had arrived.
"""

from __future__ import annotations

import json
import time
from dataclasses import dataclass

import httpx

from sparktriage import __version__
from sparktriage.bench.chunks import ChunkError, read_chunk
from sparktriage.bench.http1 import Client, HTTPFailure
from sparktriage.bench.records import RECORD_TYPE
from sparktriage.bench.sse import SSEDecoder, SSEError
from sparktriage.store.documents import escape_surrogates
from sparktriage.limits import LINE_MAX_BYTES, RESPONSE_MAX_BYTES, TOKEN_MARGIN
from sparktriage.store.rundir import SCHEMA_VERSION, utc_now

MAX_ERROR_BODY = 4096


@dataclass(frozen=True)
class ClientSettings:
    """Connection settings of the client (seconds)."""

    base_url: str
    api_key: str | None = None
    connect_timeout_s: float = 10.0
    stall_timeout_s: float = 60.0  # no byte for this long mid-stream: the request stalled
    request_timeout_s: float = 1800.0  # whole request, send to end of stream
    verify_tls: bool = True


def normalize_base_url(url: str) -> str:
    """`http://h:8000`, `http://h:8000/` and `http://h:8000/v1` all mean the same server."""
    url = url.strip().rstrip("/")
    if url.endswith("/v1"):
        url = url[: -len("/v1")]
    if "://" not in url:
        url = "http://" + url
    return url


def _headers(settings: ClientSettings) -> dict[str, str]:
    headers = {"Accept": "text/event-stream, application/json",
               "User-Agent": f"sparktriage/{__version__}"}
    if settings.api_key:
        headers["Authorization"] = f"Bearer {settings.api_key}"
    return headers


def make_stream_client(settings: ClientSettings) -> Client:
    """The measuring client for one server (http1.py; use with `async with`)."""
    return Client(normalize_base_url(settings.base_url), _headers(settings), settings.connect_timeout_s,
                  settings.verify_tls)


def make_http_client(settings: ClientSettings) -> httpx.AsyncClient:
    """A general httpx client for one server, for requests that are not measured (the probe)."""
    timeout = httpx.Timeout(connect=settings.connect_timeout_s, read=settings.stall_timeout_s,
                            write=settings.connect_timeout_s, pool=settings.connect_timeout_s)
    return httpx.AsyncClient(base_url=normalize_base_url(settings.base_url), headers=_headers(settings),
                             timeout=timeout, trust_env=False, verify=settings.verify_tls)


def error_message(status: int, body: bytes) -> str:
    """A one-line reason from an HTTP error response (OpenAI error JSON when present)."""
    text = body[:MAX_ERROR_BODY].decode("utf-8", errors="replace").strip()
    try:
        doc = json.loads(text)
    except (ValueError, RecursionError):
        doc = None
    if isinstance(doc, dict):
        err = doc.get("error", doc)
        if isinstance(err, dict):
            text = str(err.get("message") or err.get("detail") or err)
        else:
            text = str(doc.get("message") or doc.get("detail") or err)
    elif text.lstrip().lower().startswith(("<!doctype html", "<html")):
        text = "an HTML page"
    text = " ".join(text.split())
    return f"HTTP {status}: {text[:300]}" if text else f"HTTP {status}"


@dataclass(frozen=True)
class Reply:
    """A whole (non-streamed) HTTP reply."""

    status: int
    content_type: str
    body: bytes


async def request(client: Client, settings: ClientSettings, method: str, path: str,
                  body: dict | None = None) -> Reply:
    """Send a request and read its whole (size-limited) body; raises HTTPFailure."""
    data = json.dumps(body).encode() if body is not None else b""
    headers = {"Content-Type": "application/json"} if body is not None else {}
    deadline = time.monotonic() + settings.request_timeout_s
    conn, _, head = await client.send(method, path, data, headers, settings.stall_timeout_s, deadline)
    reply = await client.read_body(conn, settings.stall_timeout_s, deadline, limit=16 * 1024 * 1024)
    if reply.failure is not None:
        raise reply.failure
    return Reply(head.status, head.headers.get("content-type", ""), b"".join(p for _, p in reply.pieces))


class _Stream:
    """Accumulates one request's raw record while its events are decoded."""

    def __init__(self, record: dict) -> None:
        self.record = record
        self.events = 0

    def fail(self, status: str, reason: str) -> None:
        if self.record["status"] is None or self.record["status"] == "ok":
            self.record["status"] = status
            self.record["reason"] = reason

    def consume(self, data: str, t: float) -> None:
        self.events += 1
        if data.strip() == "[DONE]":
            self.record["done"] = True
            return
        try:
            doc = json.loads(data.removeprefix("\ufeff"))  # a BOM before the JSON is noise
            doc, escaped = escape_surrogates(doc)  # "\\ud800" or non-UTF-8 bytes: kept escaped
            if escaped:
                self.record["escaped"] = True
            info = read_chunk(doc)
        except RecursionError as exc:
            raise SSEError(f"event {self.events} is nested too deeply") from exc
        except (ValueError, ChunkError) as exc:
            raise SSEError(f"event {self.events} is not a completion chunk: {exc}") from exc
        if self.record["response_id"] is None and isinstance(doc.get("id"), str):
            self.record["response_id"] = doc["id"][:200]
        if info.error is not None:
            self.fail("error", f"server error mid-stream: {info.error[:300]}")
            return
        if info.final:
            usage = doc.get("usage")
            self.record["final_usage"] = usage if isinstance(usage, dict) else None
            self.record["t_final"] = t
            return
        chunk = {"t": t, "ids": info.ids, "lp": info.logprobs, "usage": info.usage,
                 "text": info.text, "finish": info.finish_reason}
        if info.reasoning:
            chunk["reasoning"] = info.reasoning
        self.record["chunks"].append(chunk)


def new_record(path: str, body: dict, **labels) -> dict:
    """An empty raw record for a request about to be sent."""
    return {
        "type": RECORD_TYPE,
        "schema_version": SCHEMA_VERSION,
        **labels,
        "path": path,
        "max_tokens": body.get("max_tokens", body.get("max_completion_tokens")),
        "ignore_eos": bool(body.get("ignore_eos")),
        "sent_at": None,
        "sent_unix": None,
        "http_status": None,
        "response_id": None,
        "t_headers": None,
        "chunks": [],
        "final_usage": None,
        "t_final": None,
        "t_end": None,
        "done": False,
        "events": 0,
        "status": None,
        "reason": None,
    }


async def stream_request(client: Client, settings: ClientSettings, path: str, body: dict,
                         **labels) -> dict:
    """Send one streaming request and return its raw record (never raises for server faults)."""
    record = new_record(path, body, **labels)
    state = _Stream(record)
    data = json.dumps(body).encode()
    record["sent_at"] = utc_now()
    record["sent_unix"] = time.time()
    deadline = time.monotonic() + settings.request_timeout_s
    stall = settings.stall_timeout_s
    t0 = time.perf_counter()
    try:
        conn, t0, head = await client.send("POST", path, data, {"Content-Type": "application/json"},
                                           stall, deadline)
    except HTTPFailure as exc:
        if exc.kind == "connect":
            state.fail("error", f"cannot connect: {exc}")
        elif exc.kind == "stall":
            state.fail("incomplete", f"stalled: no response for {stall:g} s")
        else:
            state.fail("error" if exc.kind == "protocol" else "incomplete", f"no response: {exc}")
        return _finish(state, t0)
    record["http_status"] = head.status
    record["t_headers"] = head.t - t0
    content_type = head.headers.get("content-type", "")
    if head.status != 200:
        reply = await client.read_body(conn, stall, deadline, limit=MAX_ERROR_BODY)
        state.fail("error", error_message(head.status, b"".join(p for _, p in reply.pieces)))
        return _finish(state, t0)
    if "event-stream" not in content_type:
        reply = await client.read_body(conn, stall, deadline, limit=MAX_ERROR_BODY)
        what = "one JSON body" if "json" in content_type else f"{content_type or 'an untyped body'}"
        state.fail("error", f"server answered with {what} instead of an event stream")
        return _finish(state, t0)
    max_tokens = record["max_tokens"]
    events = max_tokens + TOKEN_MARGIN if isinstance(max_tokens, int) and max_tokens > 0 else None
    reply = await client.read_body(conn, stall, deadline, max_bytes=RESPONSE_MAX_BYTES,
                                   max_line=LINE_MAX_BYTES, max_events=events)
    failure = reply.failure
    if failure is not None and failure.kind in ("overlong", "line-too-long"):
        # the server sent more than was asked for: what came is kept, the connection is closed
        state.fail("error", f"{failure.kind}: {failure}")
    _decode(state, reply.pieces, t0)
    if events is not None and len(record["chunks"]) > events:  # the last read overshot the cap
        del record["chunks"][events:]
    n = len(record["chunks"])
    if failure is not None and record["status"] is None:
        if failure.kind == "stall":
            state.fail("incomplete", f"stalled: no data for {stall:g} s after {n} chunks")
        elif failure.kind == "timeout":
            state.fail("incomplete", f"request exceeded {settings.request_timeout_s:g} s")
        elif failure.kind == "protocol":
            state.fail("error", f"malformed HTTP framing after {n} chunks: {failure}")
        else:
            state.fail("incomplete", f"connection closed mid-stream after {n} chunks ({failure})")
    if record["status"] is None:
        finished = any(c.get("finish") for c in record["chunks"])
        if record["done"] or finished:
            record["status"] = "ok"
        else:
            state.fail("incomplete", "stream ended before [DONE] and without a finish_reason")
    return _finish(state, t0)


def _decode(state: _Stream, pieces: list[tuple[float, bytes]], t0: float) -> None:
    """Decode the stamped body pieces into the record; a malformed stream stops decoding."""
    decoder = SSEDecoder()
    try:
        for t, piece in pieces:
            for data in decoder.feed(piece):
                state.consume(data, t - t0)
        t_last = (pieces[-1][0] - t0) if pieces else 0.0
        for data in decoder.close():
            state.consume(data, t_last)
    except SSEError as exc:
        state.fail("error", f"{exc.kind}: {exc}" if exc.kind != "malformed"
                   else f"malformed SSE: {exc}")


def _finish(state: _Stream, t0: float) -> dict:
    state.record["t_end"] = time.perf_counter() - t0
    state.record["events"] = state.events
    return state.record
