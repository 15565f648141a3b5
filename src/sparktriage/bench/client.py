"""Streaming OpenAI-compatible client that records what arrives, chunk by chunk.

One call sends one request and returns its raw record (records.py): the receive time of every
SSE event (seconds after send, `time.perf_counter`), the token facts of every chunk, the final
usage and how the stream ended. Nothing is dropped: HTTP errors, mid-stream error events,
malformed streams, stalls and dropped connections all come back as records with a status and
a reason, carrying whatever tokens had arrived.
"""

from __future__ import annotations

import json
import time
from dataclasses import dataclass

import httpx

from sparktriage.bench.chunks import ChunkError, read_chunk
from sparktriage.bench.records import RECORD_TYPE
from sparktriage.bench.sse import SSEDecoder, SSEError
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


def normalize_base_url(url: str) -> str:
    """`http://h:8000`, `http://h:8000/` and `http://h:8000/v1` all mean the same server."""
    url = url.strip().rstrip("/")
    if url.endswith("/v1"):
        url = url[: -len("/v1")]
    if "://" not in url:
        url = "http://" + url
    return url


def make_http_client(settings: ClientSettings) -> httpx.AsyncClient:
    headers = {"Accept": "text/event-stream, application/json"}
    if settings.api_key:
        headers["Authorization"] = f"Bearer {settings.api_key}"
    timeout = httpx.Timeout(
        connect=settings.connect_timeout_s,
        read=settings.stall_timeout_s,
        write=settings.connect_timeout_s,
        pool=settings.connect_timeout_s,
    )
    return httpx.AsyncClient(
        base_url=normalize_base_url(settings.base_url),
        headers=headers,
        timeout=timeout,
        trust_env=False,
    )


def error_message(status: int, body: bytes) -> str:
    """A one-line reason from an HTTP error response (OpenAI error JSON when present)."""
    text = body[:MAX_ERROR_BODY].decode("utf-8", errors="replace").strip()
    try:
        doc = json.loads(text)
    except ValueError:
        doc = None
    if isinstance(doc, dict):
        err = doc.get("error", doc)
        if isinstance(err, dict):
            text = str(err.get("message") or err.get("detail") or err)
        else:
            text = str(doc.get("message") or doc.get("detail") or err)
    text = " ".join(text.split())
    return f"HTTP {status}: {text[:300]}" if text else f"HTTP {status}"


class _Stream:
    """Accumulates one request's raw record while its stream is read."""

    def __init__(self, record: dict) -> None:
        self.record = record
        self.decoder = SSEDecoder()
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
            info = read_chunk(json.loads(data))
        except (ValueError, ChunkError) as exc:
            raise SSEError(f"event {self.events} is not a completion chunk: {exc}") from exc
        if info.error is not None:
            self.fail("error", f"server error mid-stream: {info.error[:300]}")
            return
        if info.final:
            self.record["final_usage"] = _final_usage(data)
            self.record["t_final"] = t
            return
        chunk = {"t": t, "ids": info.ids, "lp": info.logprobs, "usage": info.usage,
                 "text": info.text, "finish": info.finish_reason}
        if info.reasoning:
            chunk["reasoning"] = info.reasoning
        self.record["chunks"].append(chunk)


def _final_usage(data: str) -> dict | None:
    usage = json.loads(data).get("usage")
    return usage if isinstance(usage, dict) else None


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
        "chunks": [],
        "final_usage": None,
        "t_final": None,
        "t_end": None,
        "done": False,
        "events": 0,
        "status": None,
        "reason": None,
    }


async def stream_request(
    client: httpx.AsyncClient, settings: ClientSettings, path: str, body: dict, **labels
) -> dict:
    """Send one streaming request and return its raw record (never raises for server faults)."""
    record = new_record(path, body, **labels)
    state = _Stream(record)
    request = client.build_request("POST", path, json=body)
    record["sent_at"] = utc_now()
    record["sent_unix"] = time.time()
    t0 = time.perf_counter()
    deadline = t0 + settings.request_timeout_s
    try:
        response = await client.send(request, stream=True)
    except httpx.TimeoutException:
        state.fail("error", f"no response within {settings.connect_timeout_s:g} s (connect timeout)")
        return _finish(state, t0)
    except httpx.HTTPError as exc:
        state.fail("error", f"cannot connect: {_describe(exc)}")
        return _finish(state, t0)
    try:
        record["http_status"] = response.status_code
        if response.status_code != 200:
            body_bytes = await _read_limited(response)
            state.fail("error", error_message(response.status_code, body_bytes))
            return _finish(state, t0)
        content_type = response.headers.get("content-type", "")
        if "event-stream" not in content_type and "application/json" in content_type:
            body_bytes = await _read_limited(response)
            state.fail("error", "server answered with one JSON body instead of an event stream")
            return _finish(state, t0)
        async for piece in response.aiter_bytes():
            now = time.perf_counter() - t0
            for data in state.decoder.feed(piece):
                state.consume(data, now)
            if time.perf_counter() > deadline:
                state.fail("incomplete", f"request exceeded {settings.request_timeout_s:g} s")
                break
        else:
            now = time.perf_counter() - t0
            for data in state.decoder.close():
                state.consume(data, now)
    except SSEError as exc:
        state.fail("error", f"malformed SSE: {exc}")
    except httpx.ReadTimeout:
        state.fail(
            "incomplete",
            f"stalled: no data for {settings.stall_timeout_s:g} s after "
            f"{len(record['chunks'])} chunks",
        )
    except (httpx.RemoteProtocolError, httpx.ReadError) as exc:
        state.fail(
            "incomplete",
            f"connection closed mid-stream after {len(record['chunks'])} chunks ({_describe(exc)})",
        )
    except httpx.HTTPError as exc:
        state.fail("incomplete", f"transport error mid-stream: {_describe(exc)}")
    finally:
        await response.aclose()
    if record["status"] is None:
        finished = any(c.get("finish") for c in record["chunks"])
        if record["done"] or finished:
            record["status"] = "ok"
        else:
            state.fail("incomplete", "stream ended before [DONE] and without a finish_reason")
    return _finish(state, t0)


def _finish(state: _Stream, t0: float) -> dict:
    state.record["t_end"] = time.perf_counter() - t0
    state.record["events"] = state.events
    return state.record


async def _read_limited(response: httpx.Response) -> bytes:
    data = b""
    try:
        async for piece in response.aiter_bytes():
            data += piece
            if len(data) >= MAX_ERROR_BODY:
                break
    except httpx.HTTPError:
        pass
    return data


def _describe(exc: Exception) -> str:
    text = str(exc) or type(exc).__name__
    return " ".join(text.split())[:200]
