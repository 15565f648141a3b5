"""The simulated OpenAI-compatible server: a small asyncio HTTP/1.1 server with exact pacing.

Routes: `GET /v1/models`, `POST /v1/completions`, `POST /v1/chat/completions` (streaming and
not), `GET /health`, `GET /version`, and for tests `GET /sim/trace[?since=N]` (every send),
`GET /sim/truth[?since=N]` (the ground truth per request), `POST /sim/reset`, `GET /sim/config`. Each response follows a plan (plan.py) whose steps are
sent at `received + step.at`: the loop sleeps until about `spin_s` before the deadline and
busy-waits the rest. The write buffer limit is zero, so a step counts as sent only once the
kernel has taken all its bytes; that moment (`time.perf_counter`, CLOCK_MONOTONIC, the same
clock a client on this machine reads) is recorded in the trace as the ground truth.
"""

from __future__ import annotations

import asyncio
import json
import signal
import socket
import struct
import time
from dataclasses import asdict
from pathlib import Path

from sparktriage.sim import http
from sparktriage.sim.plan import BadRequest, RequestSpec, StreamPlan, plan_stream, read_request
from sparktriage.sim.scenario import SCHEMA_VERSION, SimConfig
from sparktriage.sim.toy import Toy
from sparktriage.sim.truth import truth
from sparktriage.sim.encode import Renderer, error_document, tokenize_document
from sparktriage.store.documents import RecordWriter

HTML_PAGE = b"<!DOCTYPE html><html><head><title>Welcome</title></head><body><h1>It works</h1></body></html>"
_JSON = "application/json"
_BLOCK_S = 0.0015  # below this distance to a deadline, stop yielding to the event loop


class _Gone(Exception):
    """The client closed the connection while we were sending."""


def _streamed(request: http.Request) -> bool:
    """Whether a completion request asks for a stream (the toy model answers only whole
    replies; streamed ones go to the timing simulator, so a sweep measures rates on a server
    whose probe and greedy requests the toy answers)."""
    try:
        body = json.loads(request.body or b"null")
    except ValueError:
        return False
    return isinstance(body, dict) and body.get("stream") is True


class SimServer:
    """One simulated server; `run()` serves until `stop()` or SIGTERM/SIGINT."""

    def __init__(self, config: SimConfig, host: str = "127.0.0.1", port: int = 0,
                 trace_path: Path | None = None, spin_s: float = 0.00015) -> None:
        self.config = config
        self.host, self.port = host, port
        self.spin_s = spin_s
        self.trace: list[dict] = []
        self._counts: dict[str, int] = {}
        self._next_id = 0
        self._writer = RecordWriter(trace_path) if trace_path else None
        self._server: asyncio.base_events.Server | None = None
        self._stopped: asyncio.Event | None = None
        self._toy = Toy(config.toy) if config.toy is not None else None
        self.in_flight = 0
        self.streaming = 0  # streamed responses open now (a step taken beside another is a pair step)
        self._drafts: dict[int, int] = {}  # open streams of a batched engine: the draft each verifies
        self._live: list[dict] = []
        self.toy_requests: list[dict] = []
        self._open: set[asyncio.Task] = set()  # connection handlers still running

    # --- lifecycle -------------------------------------------------------------------------
    async def start(self) -> str:
        """Bind and listen; return the base URL."""
        self._stopped = asyncio.Event()
        self._server = await asyncio.start_server(self._connection, self.host, self.port,
                                                  limit=http.MAX_HEAD, backlog=256)
        self.port = self._server.sockets[0].getsockname()[1]
        return f"http://{self.host}:{self.port}"

    def stop(self) -> None:
        if self._stopped is not None:
            self._stopped.set()

    async def run(self, ready_file: Path | None = None, on_ready=None) -> None:
        url = await self.start()
        loop = asyncio.get_running_loop()
        for sig in (signal.SIGTERM, signal.SIGINT):
            try:
                loop.add_signal_handler(sig, self.stop)
            except (NotImplementedError, RuntimeError):  # not the main thread
                pass
        if ready_file is not None:
            tmp = ready_file.with_name(ready_file.name + ".tmp")
            tmp.write_text(url + "\n")
            tmp.replace(ready_file)
        if on_ready is not None:
            on_ready(url)
        assert self._stopped is not None and self._server is not None
        await self._stopped.wait()
        self._server.close()
        # Connections still open (a client held by `never_answer`, an idle keep-alive) end
        # here, inside the loop, rather than as coroutines destroyed with it.
        for task in list(self._open):
            task.cancel()
        await asyncio.gather(*self._open, return_exceptions=True)
        if self._writer:
            self._writer.close()

    # --- connections -----------------------------------------------------------------------
    async def _connection(self, reader: asyncio.StreamReader, writer: asyncio.StreamWriter) -> None:
        task = asyncio.current_task()
        if task is not None:
            self._open.add(task)
            task.add_done_callback(self._open.discard)
        writer.transport.set_write_buffer_limits(high=0)
        sock = writer.get_extra_info("socket")
        if sock is not None:
            sock.setsockopt(socket.IPPROTO_TCP, socket.TCP_NODELAY, 1)
        try:
            while True:
                try:
                    request = await http.read_request(reader)
                except http.HTTPParseError as exc:
                    await self._send(writer, http.whole(400, json.dumps(error_document(400, str(exc))).encode(),
                                                        _JSON, False))
                    break
                if request is None:
                    break
                keep = await self._dispatch(request, writer)
                if not keep or not request.keep_alive:
                    break
        except (_Gone, ConnectionError):
            pass
        finally:
            if not writer.transport.is_closing():
                writer.close()

    async def _send(self, writer: asyncio.StreamWriter, data: bytes) -> float:
        """Write and wait until the kernel has every byte; return the moment it had them.

        When the kernel takes all bytes in the write call itself, that is the moment the call
        began (plus the few microseconds of the call): the time read after the call returns
        can be late by a whole scheduler slice, because waking the reader may preempt us right
        there. When the transport had to buffer, it is the moment the last byte was taken.
        """
        if writer.transport.is_closing():
            raise _Gone()
        t = time.perf_counter()
        writer.write(data)
        if writer.transport.get_write_buffer_size():
            try:
                await writer.drain()
            except ConnectionError as exc:
                raise _Gone() from exc
            t = time.perf_counter()
        if writer.transport.is_closing():
            raise _Gone()
        return t

    async def _json(self, writer, request, status: int, doc, content_type: str = _JSON) -> bool:
        body = doc if isinstance(doc, bytes) else json.dumps(doc).encode()
        await self._send(writer, http.whole(status, body, content_type, request.keep_alive))
        return True

    async def _dispatch(self, request: http.Request, writer: asyncio.StreamWriter) -> bool:
        path, method = request.path.rstrip("/") or "/", request.method
        cfg = self.config
        if path.startswith("/sim/"):
            return await self._control(request, writer, path)
        if path == "/health":
            return await self._json(writer, request, 200, b"")
        if path == "/version":
            return await self._json(writer, request, 200, {"version": cfg.version})
        if path == "/tokenize" and method == "POST":
            return await self._tokenize(request, writer)
        if path.startswith("/v1/") and cfg.api_key is not None:
            if request.headers.get("authorization", "") != f"Bearer {cfg.api_key}":
                return await self._json(writer, request, 401, {"error": "Unauthorized"})
        if path == "/v1/models" and method == "GET":
            if cfg.models_endpoint == "404":
                return await self._json(writer, request, 404, b"Not Found", "text/plain")
            if cfg.models_endpoint == "html":
                return await self._json(writer, request, 200, HTML_PAGE, "text/html; charset=utf-8")
            created = int(time.time())
            data = [{"id": name, "object": "model", "created": created, "owned_by": "sparktriage-sim",
                     "root": name, "parent": None, "max_model_len": cfg.max_model_len} for name in cfg.scenarios]
            return await self._json(writer, request, 200, {"object": "list", "data": data})
        if path in ("/v1/completions", "/v1/chat/completions") and method == "POST":
            if cfg.completions_endpoint == "404":
                return await self._json(writer, request, 404, {"detail": "Not Found"})
            if cfg.completions_endpoint == "html":
                return await self._json(writer, request, 200, HTML_PAGE, "text/html; charset=utf-8")
            if self._toy is not None and not _streamed(request):
                return await self._toy_answer(request, writer, path)
            return await self._completion(request, writer, "completions" if path == "/v1/completions" else "chat")
        if path in ("/v1/models", "/v1/completions", "/v1/chat/completions"):
            return await self._json(writer, request, 405, {"detail": "Method Not Allowed"})
        return await self._json(writer, request, 404, {"detail": "Not Found"})

    async def _tokenize(self, request: http.Request, writer) -> bool:
        return await self._json(writer, request, *tokenize_document(self.config, request.body))

    async def _control(self, request: http.Request, writer, path: str) -> bool:
        if path == "/sim/trace":
            since = int((request.query.get("since") or ["0"])[0] or 0)
            doc = {"schema_version": SCHEMA_VERSION, "kind": "sim-trace", "clock": "CLOCK_MONOTONIC",
                   "unix_minus_clock": time.time() - time.perf_counter(),
                   "requests": [e for e in self.trace if e["n"] >= since]}
            return await self._json(writer, request, 200, doc)
        if path == "/sim/truth":
            since = int((request.query.get("since") or ["0"])[0] or 0)
            doc = {"schema_version": SCHEMA_VERSION, "kind": "sim-truth",
                   "requests": [asdict(truth(e)) for e in self.trace if e["n"] >= since]}
            return await self._json(writer, request, 200, doc)
        if path == "/sim/reset" and request.method == "POST":
            self.trace.clear()
            self._counts.clear()
            return await self._json(writer, request, 200, {"reset": True, "next": self._next_id})
        if path == "/sim/config":
            return await self._json(writer, request, 200, self.config.model_dump(mode="json"))
        return await self._json(writer, request, 404, {"detail": "Not Found"})

    # --- completions -----------------------------------------------------------------------
    async def _toy_answer(self, request: http.Request, writer, path: str) -> bool:
        """A whole (non-streamed) answer of the toy language model (toy.py)."""
        assert self._toy is not None
        try:
            body = json.loads(request.body or b"null")
        except ValueError:
            body = None
        if not isinstance(body, dict):
            return await self._json(writer, request, 400, error_document(400, "request body must be a JSON object"))
        # `busy`: the most requests in flight at once during this one's time (its own included)
        live = {"peak": 0}
        self._live.append(live)
        self.in_flight += 1
        for other in self._live:
            other["peak"] = max(other["peak"], self.in_flight)
        self.toy_requests.append(body)
        try:
            await asyncio.sleep(self._toy.config.delay_s)
            try:
                status, doc = self._toy.handle(path, body, live["peak"])
            except (KeyError, TypeError, ValueError, IndexError) as exc:
                status, doc = 400, error_document(400, f"bad request for the toy model: {exc}")
        finally:
            self.in_flight -= 1
            self._live.remove(live)
        return await self._json(writer, request, status, doc.encode() if isinstance(doc, str) else doc)

    async def _completion(self, request: http.Request, writer, api: str) -> bool:
        received = time.perf_counter()
        n = self._next_id
        self._next_id += 1
        entry = {"n": n, "id": f"cmpl-sim-{n}", "api": api, "path": request.path, "received": received,
                 "status": None, "events": [], "outcome": None, "tokens_sent": 0}
        self.trace.append(entry)
        try:
            return await self._answer(request, writer, api, received, entry)
        except _Gone:
            entry["outcome"] = entry["outcome"] or "client_gone"
            return False
        finally:
            entry["t_end"] = time.perf_counter()
            if self._writer:
                self._writer.append(entry)

    async def _answer(self, request: http.Request, writer, api: str, received: float, entry: dict) -> bool:
        try:
            body = json.loads(request.body or b"null")
        except ValueError:
            body = None
        scenario = None
        try:
            if not isinstance(body, dict):
                raise BadRequest("request body must be a JSON object")
            base = self.config.scenarios.get(body.get("model")) if isinstance(body.get("model"), str) else None
            spec = read_request(api, body, strict=base.strict_fields if base else False)
            if base is None:
                entry.update(status=404, outcome="http_error")
                doc = error_document(404, f"The model `{spec.model}` does not exist.", "NotFoundError")
                return await self._json(writer, request, 404, doc)
            # Requests are counted per model and per override, so that a `sequence` given in a
            # request's `sim` field walks its own entries whatever else the server serves.
            key = spec.model + "\0" + json.dumps(spec.override, sort_keys=True)
            count = self._counts.get(key, 0)
            self._counts[key] = count + 1
            scenario = base.with_overrides(spec.override) if spec.override else base
            scenario = scenario.for_request(count)
        except (BadRequest, ValueError) as exc:
            entry.update(status=400, outcome="http_error")
            message = " ".join(str(exc).split())[:500]
            return await self._json(writer, request, 400, error_document(400, message))
        entry.update(model=spec.model, stream=spec.stream, request=_request_facts(spec))
        if self.config.stream_only and not spec.stream:  # a gateway that refuses whole replies
            entry.update(status=400, outcome="http_error")
            return await self._json(writer, request, 400, error_document(
                400, "this gateway serves streaming requests only (\"stream\": true)"))
        faults = scenario.faults
        if faults.http_status is not None:
            entry.update(status=faults.http_status, outcome="http_error")
            return await self._json(writer, request, faults.http_status,
                                    error_document(faults.http_status, faults.http_message, "SimulatedError"))
        if faults.never_answer:
            return await self._never(writer, entry)
        plan = plan_stream(scenario, spec)
        entry["planned"] = {"tokens": plan.tokens, "finish": plan.finish, "usage": plan.usage_reported,
                           "sizes": [s.count for s in plan.steps if s.kind == "tokens"]}
        renderer = Renderer(self.config, scenario, spec, plan, entry["id"], int(time.time()))
        entry["status"] = 200
        if spec.stream:
            return await self._stream(writer, request, received, plan, renderer, entry)
        return await self._whole(writer, request, received, plan, renderer, entry)

    async def _never(self, writer, entry: dict) -> bool:
        """Hold the request without a byte of answer until the client gives up or we stop."""
        entry["outcome"] = "never_answered"
        while not writer.transport.is_closing() and not (self._stopped and self._stopped.is_set()):
            await asyncio.sleep(0.05)
        return False

    async def _wait_until(self, deadline: float) -> None:
        """Sleep in the loop while the deadline is far, then block, then spin the last bit.

        The loop's own timers have millisecond granularity, so the last `_BLOCK_S` is spent in
        a blocking `time.sleep` (about 0.1 ms precise) and only the last `spin_s` busy-waits.
        """
        delay = deadline - time.perf_counter() - _BLOCK_S
        if delay > 0:
            await asyncio.sleep(delay)
        rest = deadline - time.perf_counter() - self.spin_s
        if rest > 0:
            time.sleep(rest)
        while time.perf_counter() < deadline:
            pass

    async def _stream(self, writer, request, received: float, plan: StreamPlan, renderer: Renderer,
                      entry: dict) -> bool:
        self.streaming += 1
        if plan.batch is not None:
            self._drafts[id(entry)] = 0
        try:
            return await self._stream_steps(writer, request, received, plan, renderer, entry)
        finally:
            self.streaming -= 1
            self._drafts.pop(id(entry), None)

    def _later(self, step, plan: StreamPlan, key: int) -> float:
        """How much later `step` is due than planned: its pair extra while another stream is
        open (the engine step is shared with it, scenario `pair_gap_s`); with a batched engine
        (scenario `batch_step`) the step over every open stream's current draft, this one's
        included, less this one's own step (sim/speculation.py `batch_cost`)."""
        if plan.batch is None:
            return step.pair_extra if self.streaming >= 2 else 0.0
        self._drafts[key] = step.draft
        others = tuple(d for k, d in self._drafts.items() if k != key)
        if not others or step.kind != "tokens":
            return 0.0
        cost, base = plan.batch
        return base * (cost.batch_cost((step.draft,) + others) - cost.batch_cost((step.draft,)))

    async def _stream_steps(self, writer, request, received: float, plan: StreamPlan,
                            renderer: Renderer, entry: dict) -> bool:
        events = entry["events"]
        events.append({"kind": "head", "t": await self._send(writer, http.stream_head(request.keep_alive))})
        steps = plan.steps
        sent = 0
        shift = 0.0  # the pair extras of the steps taken so far
        i = 0
        while i < len(steps):
            step = steps[i]
            data = renderer.render(step, sent)
            shift += self._later(step, plan, id(entry))
            await self._wait_until(received + step.at + shift)
            if step.kind in ("reset", "close"):
                _drop(writer, reset=step.kind == "reset")
                events.append({"kind": step.kind, "t": time.perf_counter(), "at": step.at})
                entry["outcome"] = step.kind
                return False
            # Steps already due (the sender fell behind a very fast schedule) go out in the
            # same write; each is recorded with the moment that write was taken by the kernel.
            batch, parts, size = [step], [http.chunk(data)], len(data)
            sent_after = sent + step.count
            now = time.perf_counter()
            j = i + 1
            while j < len(steps) and size < 65536:
                nxt = steps[j]
                later = self._later(nxt, plan, id(entry))
                if nxt.kind in ("reset", "close") or received + nxt.at + shift + later > now:
                    break
                shift += later
                more = renderer.render(nxt, sent_after)
                parts.append(http.chunk(more))
                size += len(more)
                sent_after += nxt.count
                batch.append(nxt)
                j += 1
            t = await self._send(writer, parts[0] if len(parts) == 1 else b"".join(parts))
            for done in batch:
                event = {"kind": done.kind, "t": t, "at": done.at}
                if done.kind == "tokens":
                    event.update(start=done.start, count=done.count)
                events.append(event)
            sent = sent_after
            entry["tokens_sent"] = sent
            i = j
        await self._send(writer, http.LAST_CHUNK)
        entry["outcome"] = "error_event" if any(e["kind"] == "error" for e in events) else "complete"
        return True

    async def _whole(self, writer, request, received: float, plan: StreamPlan, renderer: Renderer,
                     entry: dict) -> bool:
        last = plan.steps[-1].at if plan.steps else 0.0
        await self._wait_until(received + last)
        kinds = {s.kind for s in plan.steps}
        if kinds & {"reset", "close"}:
            _drop(writer, reset="reset" in kinds)
            entry["outcome"] = "reset" if "reset" in kinds else "close"
            return False
        if "error" in kinds:
            entry.update(status=500, outcome="http_error")
            doc = error_document(500, "simulated engine failure", "InternalServerError")
            return await self._json(writer, request, 500, doc)
        body = json.dumps(renderer.whole()).encode()
        t = await self._send(writer, http.whole(200, body, _JSON, request.keep_alive))
        entry["events"].append({"kind": "response", "t": t, "at": last, "start": 0, "count": plan.tokens})
        entry.update(tokens_sent=plan.tokens, outcome="complete")
        return True


def _request_facts(spec: RequestSpec) -> dict:
    return {"max_tokens": spec.max_tokens, "ignore_eos": spec.ignore_eos, "token_ids": spec.token_ids,
            "logprobs": spec.logprobs, "include_usage": spec.include_usage,
            "continuous_usage": spec.continuous_usage, "prompt_tokens": spec.prompt_tokens,
            "override": spec.override or None}


def _drop(writer: asyncio.StreamWriter, reset: bool) -> None:
    """Close the connection: with a TCP reset (SO_LINGER 0) or a plain FIN."""
    sock = writer.get_extra_info("socket")
    if reset and sock is not None:
        sock.setsockopt(socket.SOL_SOCKET, socket.SO_LINGER, struct.pack("ii", 1, 0))
    writer.transport.abort() if reset else writer.close()


async def serve(config: SimConfig, host: str, port: int, trace_path: Path | None = None,
                ready_file: Path | None = None, on_ready=None, spin_s: float = 0.00015) -> None:
    """Run a simulator until SIGTERM/SIGINT."""
    await SimServer(config, host, port, trace_path, spin_s).run(ready_file, on_ready)
