"""Non-streaming OpenAI-compatible calls for the probe, parsed leniently and never raising.

A garbage server may answer HTTP 500 to logprob requests, or put `NaN` / `-Infinity` literals in
its JSON: both are evidence, not tool errors. `call()` returns a `Reply` that records the status,
the parsed document (non-finite numbers kept as floats and flagged), the error text and timing.
"""

from __future__ import annotations

import json
import time
from dataclasses import dataclass, field

import httpx

from sparktriage.bench.client import error_message


@dataclass
class Reply:
    """What came back for one request (also the raw record written to disk)."""

    id: str
    path: str
    body: dict
    status: int | None = None
    doc: dict | None = None
    error: str | None = None
    nonfinite: list[str] = field(default_factory=list)  # NaN/Infinity literals seen in the JSON
    elapsed_s: float = 0.0
    text: str | None = None  # the raw body when it was not JSON

    @property
    def ok(self) -> bool:
        return self.status == 200 and isinstance(self.doc, dict) and self.error is None

    @property
    def choice(self) -> dict:
        if not self.ok:
            return {}
        choices = self.doc.get("choices") or []
        return choices[0] if choices and isinstance(choices[0], dict) else {}

    @property
    def tokens(self) -> int:
        """Prompt plus completion tokens the server reports for this request."""
        usage = (self.doc or {}).get("usage") or {}
        total = 0
        for key in ("prompt_tokens", "completion_tokens"):
            value = usage.get(key)
            if isinstance(value, int):
                total += value
        return total

    def record(self) -> dict:
        return {"type": "probe-request", "id": self.id, "path": self.path, "body": self.body,
                "status": self.status, "error": self.error, "nonfinite": self.nonfinite,
                "elapsed_s": round(self.elapsed_s, 4), "response": self.doc,
                "raw": self.text[:2000] if self.text else None}


def parse_lenient(text: str) -> tuple[object, list[str]]:
    """JSON with NaN/Infinity literals allowed; returns the document and the literals seen."""
    seen: list[str] = []

    def constant(name: str) -> float:
        seen.append(name)
        return float(name.replace("Infinity", "inf"))

    return json.loads(text, parse_constant=constant), seen


async def call(client: httpx.AsyncClient, rid: str, path: str, body: dict, timeout_s: float) -> Reply:
    """POST one request; every outcome becomes a Reply."""
    reply = Reply(rid, path, body)
    started = time.perf_counter()
    try:
        response = await client.post(path, json=body, timeout=timeout_s)
    except httpx.TimeoutException:
        reply.error = f"no complete answer within {timeout_s:g} s"
    except httpx.HTTPError as exc:
        reply.error = f"transport error: {' '.join(str(exc).split())[:200] or type(exc).__name__}"
    else:
        reply.status = response.status_code
        raw = response.text
        if response.status_code != 200:
            reply.error = error_message(response.status_code, response.content)
            reply.text = raw
        else:
            try:
                doc, reply.nonfinite = parse_lenient(raw)
            except ValueError:
                reply.error, reply.text = "the answer is not JSON", raw
            else:
                if isinstance(doc, dict):
                    reply.doc = doc
                else:
                    reply.error, reply.text = "the answer is not a JSON object", raw
    reply.elapsed_s = time.perf_counter() - started
    return reply
