"""Find out what the server accepts before the probe, and write every reduction down.

Short requests, each stepping down when refused: generation logprobs (top-5, then the cap the
error names, then none), token ids, prompt logprobs (top-20, the cap, 5, 1; then `echo` with
logprobs; then none), chat (a server without a chat template refuses it). An HTTP 5xx on a
logprob request while the plain request works is recorded for the sanity family: it is what
NaN logits do to vLLM's logprob serialization.
"""

from __future__ import annotations

import re

import httpx

from sparktriage.errors import EndpointError, UsageError
from sparktriage.probe.api import Reply, call
from sparktriage.probe.observations import Capabilities

PROMPT_K, GEN_K = 20, 5
TEST_PROMPT = "One, two, three, four, five, six, seven,"


def _cap_from(reply: Reply) -> int | None:
    """The maximum a refusal names ("... greater than max allowed: 5"), if any."""
    text = reply.error or ""
    if "logprob" not in text.lower():
        return None
    numbers = [int(n) for n in re.findall(r"\b\d+\b", text.split(":", 1)[-1])]
    return numbers[-1] if numbers else None


class Negotiation:
    def __init__(self, client: httpx.AsyncClient, model: str, timeout_s: float) -> None:
        self.client, self.model, self.timeout_s = client, model, timeout_s
        self.replies: list[Reply] = []
        self.only_with_logprobs: dict[str, bool] = {}

    async def _send(self, rid: str, path: str, **fields) -> Reply:
        body = {"model": self.model, "temperature": 0, **fields}
        reply = await call(self.client, f"N:{rid}", path, body, self.timeout_s)
        self.replies.append(reply)
        return reply

    async def run(self, max_model_len: int | None) -> Capabilities:
        caps = Capabilities(max_model_len=max_model_len)
        plain = await self._send("plain", "/v1/completions", prompt=TEST_PROMPT, max_tokens=2)
        if plain.status == 404:
            caps.completions = False
            caps.limitations.append("no /v1/completions: likelihood and completions probes skipped")
        elif plain.status in (401, 403):
            raise EndpointError(f"/v1/completions: {plain.error}", hint="pass --api-key or set OPENAI_API_KEY")
        elif not plain.ok:
            raise EndpointError(f"the server could not answer a 2-token completion: {plain.error}")
        if caps.completions:
            await self._generation_logprobs(caps)
            await self._prompt_logprobs(caps)
        await self._chat(caps)
        if not caps.completions and not caps.chat:
            raise UsageError("the server offers neither /v1/completions nor a usable /v1/chat/completions")
        return caps

    async def _generation_logprobs(self, caps: Capabilities) -> None:
        k = GEN_K
        for attempt in range(4):
            reply = await self._send(f"gen-logprobs-{attempt}", "/v1/completions", prompt=TEST_PROMPT,
                                     max_tokens=2, logprobs=k, return_token_ids=True)
            if reply.ok:
                caps.logprobs = k
                caps.token_ids = isinstance(reply.choice.get("token_ids"), list)
                return
            if reply.status is not None and reply.status >= 500:
                self.only_with_logprobs[reply.id] = True
                caps.limitations.append("generation logprobs fail with HTTP 5xx: decode-vs-prefill check skipped")
                return
            cap = _cap_from(reply)
            if cap is not None and 0 < cap < k:
                k = cap
                continue
            break
        reply = await self._send("gen-ids", "/v1/completions", prompt=TEST_PROMPT, max_tokens=2,
                                 return_token_ids=True)
        caps.token_ids = reply.ok and isinstance(reply.choice.get("token_ids"), list)
        caps.limitations.append("generation logprobs refused: sanity and decode-vs-prefill checks reduced")

    async def _prompt_logprobs(self, caps: Capabilities) -> None:
        tried = []
        k = PROMPT_K
        while k >= 1 and k not in tried:
            tried.append(k)
            reply = await self._send(f"prompt-logprobs-{k}", "/v1/completions", prompt=TEST_PROMPT, max_tokens=1,
                                     prompt_logprobs=k, **({"return_token_ids": True} if caps.token_ids else {}))
            if reply.ok and isinstance(reply.choice.get("prompt_logprobs"), list):
                caps.prompt_logprobs, caps.prompt_logprobs_via = k, "prompt_logprobs"
                if k < PROMPT_K:
                    caps.limitations.append(f"prompt logprobs capped at top-{k}: KL estimates are coarser")
                return
            if reply.status is not None and reply.status >= 500:
                self.only_with_logprobs[reply.id] = True
                caps.limitations.append("prompt logprobs fail with HTTP 5xx: likelihood family skipped")
                return
            if reply.ok:  # accepted but ignored
                break
            cap = _cap_from(reply)
            k = cap if cap is not None and cap < k else {20: 5, 5: 1}.get(k, 0)
        k = min(caps.logprobs or GEN_K, GEN_K)
        reply = await self._send("echo-logprobs", "/v1/completions", prompt=TEST_PROMPT, max_tokens=1,
                                 echo=True, logprobs=k)
        lp = reply.choice.get("logprobs") if reply.ok else None
        if isinstance(lp, dict) and len(lp.get("tokens") or []) > 2:
            caps.prompt_logprobs, caps.prompt_logprobs_via = k, "echo"
            caps.limitations.append("prompt_logprobs refused: passages scored through echo + logprobs")
            return
        caps.limitations.append("the server returns no prompt logprobs: likelihood and baseline comparison skipped")

    async def _chat(self, caps: Capabilities) -> None:
        reply = await self._send("chat", "/v1/chat/completions", max_tokens=2,
                                 messages=[{"role": "user", "content": "Say hello."}])
        if reply.ok:
            return
        caps.chat = False
        why = reply.error or "no answer"
        if "template" in why.lower():
            caps.limitations.append("no chat template: chat probes skipped, generations sent as completions")
        else:
            caps.limitations.append(f"chat refused ({why[:120]}): chat probes skipped")
