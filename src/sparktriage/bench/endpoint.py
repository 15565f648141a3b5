"""Find out who is at an endpoint: an OpenAI-compatible server, which model, which count sources.

`discover()` asks `/v1/models` (and `/version` when present) and fails with one line when the
server cannot be reached or is not OpenAI-compatible. `negotiate()` sends one short request per
API with every exact token-count source switched on and steps down when the server refuses an
option (strict servers reject unknown fields with 400/422); it reports which sources appeared.
"""

from __future__ import annotations

from dataclasses import dataclass, field

import httpx

from sparktriage.bench.client import ClientSettings, error_message, normalize_base_url, stream_request
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
            "notes": list(self.notes),
        }


async def discover(client: httpx.AsyncClient, base_url: str) -> Server:
    """Ask `/v1/models`; raise EndpointError for unreachable or non-OpenAI servers."""
    shown = normalize_base_url(base_url)
    try:
        response = await client.get("/v1/models")
    except httpx.ConnectError as exc:
        raise EndpointError(
            f"cannot connect to {shown}: {_reason(exc)}",
            hint="is the server running and ready? vLLM refuses connections until startup completes",
        ) from exc
    except httpx.TimeoutException as exc:
        raise EndpointError(f"{shown} did not answer GET /v1/models in time") from exc
    except httpx.HTTPError as exc:
        raise EndpointError(f"cannot talk to {shown}: {_reason(exc)}") from exc
    if response.status_code in (401, 403):
        raise EndpointError(
            f"{shown} refused GET /v1/models ({error_message(response.status_code, response.content)})",
            hint="pass --api-key or set OPENAI_API_KEY",
        )
    if response.status_code != 200:
        raise EndpointError(
            f"{shown} does not look like an OpenAI-compatible server: GET /v1/models answered "
            f"{error_message(response.status_code, response.content)}"
        )
    try:
        doc = response.json()
        data = doc["data"]
        ids = tuple(str(m["id"]) for m in data)
    except (ValueError, KeyError, TypeError) as exc:
        raise EndpointError(
            f"{shown} does not look like an OpenAI-compatible server: GET /v1/models did not "
            "return a model list"
        ) from exc
    max_len = None
    if data and isinstance(data[0], dict) and isinstance(data[0].get("max_model_len"), int):
        max_len = data[0]["max_model_len"]
    version = None
    try:
        reply = await client.get("/version")
        if reply.status_code == 200:
            version = str(reply.json().get("version")) or None
    except (httpx.HTTPError, ValueError, AttributeError):
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


async def negotiate(
    client: httpx.AsyncClient, settings: ClientSettings, workload: Workload, model: str
) -> Capabilities:
    """Find the richest accepted option set for this workload's API, with a 4-token request."""
    probe = workload.model_copy(update={"max_tokens": 4})
    last_reason = None
    for name, options in _OPTION_LADDER:
        extras = _extras(options)
        if options and options["logprobs"]:
            extras.update(_logprob_fields(workload.api))
        record = await stream_request(
            client, settings, probe.path, probe.body(model, extras), workload=workload.name,
            index=-1, warmup=True, purpose="negotiate",
        )
        status = record["http_status"]
        if status == 404:
            raise UsageError(f"{probe.path}: {record['reason']}")
        if status in (401, 403):
            raise EndpointError(f"{probe.path}: {record['reason']}", hint="pass --api-key or set OPENAI_API_KEY")
        if record["status"] == "error" and status in (400, 422):
            last_reason = record["reason"]
            continue
        if record["status"] != "ok":
            raise EndpointError(
                f"{settings.base_url}{probe.path} could not stream a short test request: {record['reason']}"
            )
        return _capabilities(workload.api, name, options, record)
    raise EndpointError(
        f"{settings.base_url}{probe.path} rejected every request shape tried (last: {last_reason})"
    )


def _capabilities(api: str, name: str, options: dict | None, record: dict) -> Capabilities:
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
    # Logprobs cost server time; ask for them only when token ids are not available.
    if "token_ids" not in sources and "logprobs" in sources:
        extras.update(_logprob_fields(api))
    if not any(s in sources for s in ("token_ids", "logprobs", "continuous_usage")):
        if "final_usage" in sources:
            notes.append(
                "no per-chunk token count: totals are exact (final usage) but decode rates "
                "assume one token per chunk"
            )
        else:
            notes.append(
                "the server offers no exact token count (no token ids, logprobs or usage): "
                "tokens are counted as chunks, which undercounts multi-token chunks"
            )
    metrics = derive(record)
    ignore_ok = None
    if record.get("ignore_eos"):
        ignore_ok = metrics.output_tokens >= (record.get("max_tokens") or 0)
        if not ignore_ok:
            notes.append(
                f"ignore_eos not honoured: asked for {record.get('max_tokens')} tokens, got "
                f"{metrics.output_tokens}"
            )
    return Capabilities(api, name, extras, tuple(sources), ignore_ok, notes)


def _reason(exc: Exception) -> str:
    text = str(exc) or type(exc).__name__
    if "refused" in text.lower():
        return "connection refused"
    return " ".join(text.split())[:200]
