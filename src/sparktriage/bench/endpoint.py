"""Find out who is at an endpoint: an OpenAI-compatible server, which model, which count sources.

`discover()` asks `/v1/models` (and `/version` when present) and fails with one line when the
server cannot be reached or is not OpenAI-compatible. `negotiate()` sends one short request per
API with every exact token-count source switched on and steps down when the server refuses an
option (strict servers reject unknown fields with 400/422); it reports which sources appeared.
"""

from __future__ import annotations

import json
from dataclasses import dataclass, field
from typing import Callable

import httpx

from sparktriage.bench.client import (
    ClientSettings, Reply, error_message, normalize_base_url, request, stream_request,
)
from sparktriage.bench.http1 import Client, HTTPFailure
from sparktriage.bench.records import derive
from sparktriage.bench.workload import Workload
from sparktriage.errors import EndpointError, UsageError

# Tried in order; each step drops options a strict server may refuse.
_OPTION_LADDER = (
    ("token_ids+usage+logprobs", {"return_token_ids": True, "continuous_usage": True, "logprobs": True}),
    ("usage+logprobs", {"return_token_ids": False, "continuous_usage": True, "logprobs": True}),
    ("final-usage+logprobs", {"return_token_ids": False, "continuous_usage": False, "logprobs": True}),
    ("final-usage", {"return_token_ids": False, "continuous_usage": False, "logprobs": False}),
    ("plain", None),
)


@dataclass(frozen=True)
class Server:
    """What `/v1/models` and `/version` said."""

    base_url: str
    models: tuple[str, ...]
    version: str | None
    max_model_len: int | None = None


@dataclass
class Capabilities:
    """Which request options a server accepted for one API, and which sources came back."""

    api: str
    accepted: str  # name of the ladder step the server accepted
    extras: dict = field(default_factory=dict)  # request fields used for protocol requests
    sources: tuple[str, ...] = ()  # exact sources seen: token_ids, logprobs, continuous_usage, final_usage
    ignore_eos_ok: bool | None = None
    notes: list[str] = field(default_factory=list)
    dropped: tuple[str, ...] = ()  # workload fields the server refused (ignore_eos)

    def body(self, workload: Workload, model: str) -> dict:
        """The request body of a protocol request in the accepted shape."""
        return {k: v for k, v in workload.body(model, self.extras).items() if k not in self.dropped}

    @property
    def exact(self) -> bool:
        return any(s in self.sources for s in ("token_ids", "logprobs", "continuous_usage"))

    def as_dict(self) -> dict:
        return {
            "api": self.api,
            "accepted": self.accepted,
            "extras": self.extras,
            "sources": list(self.sources),
            "exact": self.exact,
            "ignore_eos_honoured": self.ignore_eos_ok,
            "dropped": list(self.dropped),
            "notes": list(self.notes),
        }


async def _get(client: Client | httpx.AsyncClient, settings: ClientSettings, path: str) -> Reply:
    """GET a small JSON document with either client; transport failures raise HTTPFailure."""
    if isinstance(client, Client):
        return await request(client, settings, "GET", path)
    try:
        response = await client.get(path)
    except httpx.ConnectError as exc:
        raise HTTPFailure("connect", _connect_reason(exc)) from exc
    except httpx.TimeoutException as exc:
        raise HTTPFailure("timeout", "no answer in time") from exc
    except httpx.HTTPError as exc:
        raise HTTPFailure("protocol", " ".join(str(exc).split()) or type(exc).__name__) from exc
    return Reply(response.status_code, response.headers.get("content-type", ""), response.content)


def _connect_reason(exc: BaseException) -> str:
    """'connection refused' when that is the cause anywhere in the chain, else the message."""
    seen: BaseException | None = exc
    while seen is not None:
        if isinstance(seen, ConnectionRefusedError) or "refused" in str(seen).lower():
            return "connection refused"
        seen = seen.__cause__ or seen.__context__
    return " ".join(str(exc).split()) or type(exc).__name__


async def discover(client: Client | httpx.AsyncClient, target: ClientSettings | str) -> Server:
    """Ask `/v1/models`; raise EndpointError for unreachable or non-OpenAI servers.

    `client` is the measuring client (`make_stream_client`) or an httpx client
    (`make_http_client`); `target` is the client settings or just the base URL.
    """
    settings = target if isinstance(target, ClientSettings) else ClientSettings(str(target))
    shown = normalize_base_url(settings.base_url)
    try:
        reply = await _get(client, settings, "/v1/models")
    except HTTPFailure as exc:
        if exc.kind == "connect":
            raise EndpointError(
                f"cannot connect to {shown}: {exc}",
                hint="is the server running and ready? vLLM refuses connections until startup completes",
            ) from exc
        if exc.kind in ("stall", "timeout"):
            raise EndpointError(f"{shown} did not answer GET /v1/models in time") from exc
        raise EndpointError(f"cannot talk to {shown}: {exc}") from exc
    if reply.status in (401, 403):
        raise EndpointError(
            f"{shown} refused GET /v1/models ({error_message(reply.status, reply.body)})",
            hint="pass --api-key or set OPENAI_API_KEY",
        )
    if reply.status != 200:
        raise EndpointError(
            f"{shown} does not look like an OpenAI-compatible server: GET /v1/models answered "
            f"{error_message(reply.status, reply.body)}"
        )
    try:
        doc = json.loads(reply.body)
        data = doc["data"]
        ids = tuple(str(m["id"]) for m in data)
    except (ValueError, KeyError, TypeError, RecursionError) as exc:  # a server's body
        what = "an HTML page" if b"<html" in reply.body[:512].lower() else "no model list"
        raise EndpointError(
            f"{shown} does not look like an OpenAI-compatible server: GET /v1/models returned {what}"
        ) from exc
    max_len = None
    if data and isinstance(data[0], dict) and isinstance(data[0].get("max_model_len"), int):
        max_len = data[0]["max_model_len"]
    version = None
    try:
        answer = await _get(client, settings, "/version")
        if answer.status == 200:
            found = json.loads(answer.body).get("version")
            version = str(found) if found else None
    except (HTTPFailure, ValueError, AttributeError, RecursionError):
        version = None
    return Server(shown, ids, version, max_len)


def choose_model(server: Server, requested: str | None) -> str:
    """The requested model if served, else the only/first one listed."""
    if requested:
        if requested not in server.models:
            listed = ", ".join(server.models) or "none"
            raise UsageError(
                f"model {requested!r} is not served by {server.base_url} (it lists: {listed})"
            )
        return requested
    if not server.models:
        raise EndpointError(f"{server.base_url} lists no models at /v1/models")
    return server.models[0]


def _extras(options: dict | None) -> dict:
    if options is None:
        return {}
    extras: dict = {"stream_options": {"include_usage": True}}
    if options["continuous_usage"]:
        extras["stream_options"]["continuous_usage_stats"] = True
    if options["return_token_ids"]:
        extras["return_token_ids"] = True
    return extras


def _logprob_fields(api: str) -> dict:
    return {"logprobs": 1} if api == "completions" else {"logprobs": True, "top_logprobs": 0}


async def negotiate(client: Client, settings: ClientSettings, workload: Workload, model: str,
                    keep: Callable[[dict], None] | None = None) -> Capabilities:
    """Find the richest accepted option set for this workload's API, with a 4-token request.

    Each probe's raw record (`purpose: negotiate`) is handed to `keep`; the protocol appends
    it to the launch's `negotiation.jsonl`. When every shape is refused with ignore_eos, the ladder is
    tried once more without it: strict OpenAI-style servers reject vLLM's extensions.
    """
    probe = workload.model_copy(update={"max_tokens": 4})
    last_reason = None
    where = f"{normalize_base_url(settings.base_url)}{probe.path}"
    for drop in ((), ("ignore_eos",)) if workload.ignore_eos else ((),):
        for name, options in _OPTION_LADDER:
            extras = _extras(options)
            if options and options["logprobs"]:
                extras.update(_logprob_fields(workload.api))
            body = {k: v for k, v in probe.body(model, extras).items() if k not in drop}
            record = await stream_request(client, settings, probe.path, body, workload=workload.name,
                                          index=-1, warmup=True, purpose="negotiate")
            if keep is not None:
                keep(record)
            status = record["http_status"]
            if status == 404:
                if "model" in (record["reason"] or "").lower():
                    raise UsageError(f"model {model!r} is not served at {where} ({record['reason']})")
                raise EndpointError(f"{where} is not served ({record['reason']}): not an "
                                    f"OpenAI-compatible server for {workload.api} requests")
            if status in (401, 403):
                raise EndpointError(f"{where} refused the request ({record['reason']})",
                                    hint="pass --api-key or set OPENAI_API_KEY")
            if record["status"] == "error" and status in (400, 422):
                last_reason = record["reason"]
                continue
            if record["status"] != "ok":
                raise EndpointError(f"{where} could not stream a short test request: {record['reason']}")
            return _capabilities(workload.api, name, options, drop, record)
    raise EndpointError(f"{where} rejected every request shape tried (last: {last_reason})")


def _capabilities(api: str, name: str, options: dict | None, drop: tuple[str, ...],
                  record: dict) -> Capabilities:
    chunks = record["chunks"]
    sources = []
    if any(c.get("ids") is not None for c in chunks):
        sources.append("token_ids")
    if any(c.get("lp") is not None for c in chunks):
        sources.append("logprobs")
    if any(c.get("usage") is not None for c in chunks):
        sources.append("continuous_usage")
    if record.get("final_usage"):
        sources.append("final_usage")
    extras = _extras(options)
    notes = []
    if drop:
        name += ", without " + ", ".join(drop)
        notes.append("the server refuses ignore_eos: requests may stop early, so output lengths "
                     "can differ between requests")
    # Logprobs cost server time; ask for them only when token ids are not available.
    if "token_ids" not in sources and "logprobs" in sources:
        extras.update(_logprob_fields(api))
    if not any(s in sources for s in ("token_ids", "logprobs", "continuous_usage")):
        if "final_usage" in sources:
            notes.append(
                "no per-chunk token count: totals are exact (final usage) but per-chunk counts, "
                "and so decode rates, are estimates (the total spread evenly over chunks)"
            )
        else:
            notes.append(
                "the server offers no exact token count (no token ids, logprobs or usage): "
                "tokens are counted as chunks, which undercounts multi-token chunks"
            )
    metrics = derive(record)
    ignore_ok = None
    if record.get("ignore_eos") and metrics.token_source not in ("chunks", "none"):
        ignore_ok = metrics.output_tokens >= (record.get("max_tokens") or 0)
        if not ignore_ok:
            notes.append(
                f"ignore_eos not honoured: asked for {record.get('max_tokens')} tokens, got "
                f"{metrics.output_tokens}"
            )
    return Capabilities(api, name, extras, tuple(sources), ignore_ok, notes, drop)
