"""What `selfcheck` asks the server before measuring anything (docs/selfcheck.md "Before measuring").

`run_preflight` returns `preflight.json`:

  server      what the server states about itself: `/v1/models` (model ids, max_model_len,
              owned_by, root), `/version`
  metrics     a `/metrics` snapshot: requests running and waiting, preemptions, the speculative
              counters and vLLM's `*_config_info` labels (None without metrics)
  readiness   one short non-streamed chat (a plain completion when chat is refused) within a
              stated deadline: did content come back, on which channel (content or reasoning
              only), with a finish reason and the model id asked for
  fields      the same request with an invented field: 200 means the server accepts anything,
              so a field it does not implement (`ignore_eos`) may be silently ignored

Nothing here raises for what the server does: every answer, timeout and refusal is recorded
for `findings.py` to judge. Bodies are read with a size cap and every request has a deadline,
so a server that never answers costs at most the deadline.
"""

from __future__ import annotations

import asyncio
import time
from dataclasses import dataclass

import httpx

from sparktriage.bench.client import ClientSettings, make_http_client
from sparktriage.errors import SparktriageError
from sparktriage.metrics.prometheus import Scrape, scrape
from sparktriage.store.documents import loads_bounded

BODY_MAX_BYTES = 1 << 20  # a short answer; anything larger is not one
READY_PROMPT = "Reply with the single word: ready."
READY_MAX_TOKENS = 16
INVENTED_FIELD = "sparktriage_invented_field"  # no server implements it
RUNNING = "vllm:num_requests_running"
WAITING = "vllm:num_requests_waiting"
PREEMPTIONS = "vllm:num_preemptions_total"
SPEC_COUNTERS = ("vllm:spec_decode_num_drafts_total", "vllm:spec_decode_num_draft_tokens_total",
                 "vllm:spec_decode_num_accepted_tokens_total")
_INFO_MAX_LABELS = 200


@dataclass(frozen=True)
class PreflightSettings:
    endpoint: str
    model: str | None = None
    api_key: str | None = None
    metrics: str | None = ""  # "" = the endpoint's /metrics; None = none
    answer_deadline_s: float = 120.0  # the readiness request must be answered within this


async def _call(client: httpx.AsyncClient, method: str, path: str, body: dict | None,
                deadline_s: float) -> dict:
    """One request under a whole-request deadline; the outcome as a record, never an error."""
    start = time.monotonic()

    async def send() -> tuple[int, bytes]:
        async with client.stream(method, path, json=body) as response:
            data = bytearray()
            async for block in response.aiter_raw(65536):
                data += block
                if len(data) > BODY_MAX_BYTES:
                    raise _TooLarge()
            return response.status_code, bytes(data)

    try:
        status, data = await asyncio.wait_for(send(), deadline_s)
    except asyncio.TimeoutError:
        return {"outcome": "no_answer", "elapsed_s": round(time.monotonic() - start, 3),
                "reason": f"no answer within {deadline_s:g} s"}
    except _TooLarge:
        return {"outcome": "bad_body", "elapsed_s": round(time.monotonic() - start, 3),
                "reason": f"answer larger than {BODY_MAX_BYTES >> 10} KiB"}
    except httpx.HTTPError as exc:
        return {"outcome": "transport", "elapsed_s": round(time.monotonic() - start, 3),
                "reason": f"{type(exc).__name__}: " + (" ".join(str(exc).split())[:300]
                                                       or "the connection ended before an answer")}
    record = {"outcome": "answered", "status": status, "elapsed_s": round(time.monotonic() - start, 3)}
    try:
        record["json"] = loads_bounded(data.decode("utf-8", errors="replace"), path)
    except (ValueError, SparktriageError):  # not JSON, or nested past the limit
        record["text"] = data[:300].decode("utf-8", errors="replace")
    return record


class _TooLarge(Exception):
    pass


def _answer(record: dict, model: str, api: str) -> dict:
    """The readiness verdict's facts from a whole-answer reply."""
    doc = record.get("json")
    facts = {"api": api, "outcome": record["outcome"], "status": record.get("status"),
             "elapsed_s": record.get("elapsed_s"), "reason": record.get("reason"),
             "model_asked": model, "model_answered": None, "finish_reason": None,
             "content_chars": None, "reasoning_chars": None, "completion_tokens": None}
    if record["outcome"] != "answered":
        return facts
    if not isinstance(doc, dict):
        facts.update(outcome="bad_body", reason="the answer is not a JSON object")
        return facts
    if record.get("status") != 200:
        error = doc.get("error")
        message = error.get("message") if isinstance(error, dict) else error or doc.get("detail")
        facts.update(outcome="refused", reason=" ".join(str(message).split())[:300])
        return facts
    choices = doc.get("choices")
    choice = choices[0] if isinstance(choices, list) and choices and isinstance(choices[0], dict) else {}
    if api == "chat":
        message = choice.get("message") if isinstance(choice.get("message"), dict) else {}
        content = message.get("content")
        reasoning = message.get("reasoning_content") or message.get("reasoning")
    else:
        content, reasoning = choice.get("text"), None
    usage = doc.get("usage") if isinstance(doc.get("usage"), dict) else {}
    tokens = usage.get("completion_tokens")
    facts.update(model_answered=doc.get("model") if isinstance(doc.get("model"), str) else None,
                 finish_reason=choice.get("finish_reason") if isinstance(choice.get("finish_reason"), str) else None,
                 content_chars=len(content.strip()) if isinstance(content, str) else 0,
                 reasoning_chars=len(reasoning.strip()) if isinstance(reasoning, str) else 0,
                 completion_tokens=tokens if isinstance(tokens, int) else None)
    return facts


def _request(api: str, model: str, max_tokens: int) -> tuple[str, dict]:
    if api == "chat":
        return "/v1/chat/completions", {"model": model, "max_tokens": max_tokens, "stream": False,
                                        "messages": [{"role": "user", "content": READY_PROMPT}]}
    return "/v1/completions", {"model": model, "max_tokens": max_tokens, "stream": False,
                               "prompt": READY_PROMPT}


async def _readiness(client: httpx.AsyncClient, model: str, deadline_s: float) -> dict:
    """Chat first (what clients send); a plain completion when chat is refused (no template)."""
    path, body = _request("chat", model, READY_MAX_TOKENS)
    facts = _answer(await _call(client, "POST", path, body, deadline_s), model, "chat")
    if facts["outcome"] == "refused" or (facts["outcome"] == "answered" and facts["status"] == 404):
        path, body = _request("completions", model, READY_MAX_TOKENS)
        plain = _answer(await _call(client, "POST", path, body, deadline_s), model, "completions")
        plain["chat_refused"] = facts["reason"]
        return plain
    return facts


async def _fields(client: httpx.AsyncClient, model: str, api: str, deadline_s: float) -> dict:
    path, body = _request(api, model, 1)
    body[INVENTED_FIELD] = True
    record = await _call(client, "POST", path, body, deadline_s)
    status = record.get("status")
    verdict = ("accepted" if status == 200 else "rejected" if status in (400, 422)
               else "unknown")
    return {"field": INVENTED_FIELD, "api": api, "status": status, "verdict": verdict,
            "reason": record.get("reason")}


def metrics_snapshot(url: str | None, headers: dict | None) -> dict | None:
    """Requests running and waiting, preemptions, speculative counters and config-info labels
    from one `/metrics` page; {"error": ...} when it cannot be read; None without a URL."""
    if not url:
        return None
    try:
        _, page = scrape(url, headers=headers)
    except SparktriageError as exc:
        return {"url": url, "error": exc.one_line()}
    return {"url": url, "t": page.t, "running": page.total(RUNNING), "waiting": page.total(WAITING),
            "preemptions": page.total(PREEMPTIONS),
            "spec": {name: page.total(name) for name in SPEC_COUNTERS},
            "config_info": _config_info(page)}


def _config_info(page: Scrape) -> dict:
    """Labels of vLLM's `*_config_info` gauges (cache, model and parallel configuration)."""
    info: dict[str, dict] = {}
    for (name, labels), _ in page.samples.items():
        if name.endswith("_config_info") and len(info) < 20:
            info[name] = {k: v[:200] for k, v in labels[:_INFO_MAX_LABELS]}
    return info


def metrics_url(settings: PreflightSettings) -> str | None:
    if settings.metrics is None:
        return None
    return settings.metrics or settings.endpoint.rstrip("/") + "/metrics"


async def _server_facts(client: httpx.AsyncClient, deadline_s: float) -> dict:
    facts: dict = {"models": [], "version": None}
    models = await _call(client, "GET", "/v1/models", None, deadline_s)
    data = (models.get("json") or {}).get("data") if isinstance(models.get("json"), dict) else None
    for entry in (data if isinstance(data, list) else [])[:50]:
        if isinstance(entry, dict) and isinstance(entry.get("id"), str):
            facts["models"].append({k: entry.get(k) for k in ("id", "max_model_len", "owned_by", "root")
                                    if isinstance(entry.get(k), (str, int))})
    version = await _call(client, "GET", "/version", None, deadline_s)
    doc = version.get("json")
    if version.get("status") == 200 and isinstance(doc, dict) and isinstance(doc.get("version"), str):
        facts["version"] = doc["version"][:100]
    return facts


async def _preflight(settings: PreflightSettings) -> dict:
    target = ClientSettings(settings.endpoint, api_key=settings.api_key,
                            stall_timeout_s=settings.answer_deadline_s)
    async with make_http_client(target) as client:
        server = await _server_facts(client, min(30.0, settings.answer_deadline_s))
        model = settings.model or next((m["id"] for m in server["models"]), None)
        readiness = fields = None
        if model is not None:
            readiness = await _readiness(client, model, settings.answer_deadline_s)
            if readiness["outcome"] == "answered":
                fields = await _fields(client, model, readiness["api"], settings.answer_deadline_s)
    return {"server": server, "model": model, "readiness": readiness, "fields": fields,
            "answer_deadline_s": settings.answer_deadline_s}


def run_preflight(settings: PreflightSettings) -> dict:
    """Ask the server what it states, snapshot `/metrics`, and send the readiness and
    invented-field requests; `preflight.json` (never raises for the server's behaviour)."""
    headers = {"Authorization": f"Bearer {settings.api_key}"} if settings.api_key else None
    snapshot = metrics_snapshot(metrics_url(settings), headers)
    doc = asyncio.run(_preflight(settings))
    return {"kind": "preflight", **doc, "metrics": snapshot}
