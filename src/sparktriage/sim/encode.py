"""Render planned steps as the bytes an OpenAI-compatible server (vLLM flavour) would send.

Token `j` of every response has a deterministic id in `[first_token_id, vocab_size)` and the
text ` t<id>`, so the ids are valid for the bundled tiny model's vocabulary and a client's
counts can be checked exactly. Chunks follow vLLM's shapes (vllm-mechanics §7): completions
`choices[0].text`, chat `choices[0].delta`, `token_ids` for `return_token_ids`, logprobs
entries, cumulative `usage` for continuous usage, a trailing `choices: []` usage chunk.
"""

from __future__ import annotations

import json

from sparktriage.sim.plan import RequestSpec, Step, StreamPlan
from sparktriage.sim.scenario import Scenario, SimConfig

MALFORMED_EVENT = b'data: {"id": "truncated", "choices": [{"text": "cut\n\n'


def _dumps(doc: dict) -> bytes:
    return json.dumps(doc, separators=(",", ":"), ensure_ascii=False).encode("utf-8")


def sse(doc: dict) -> bytes:
    """One SSE event carrying a JSON document."""
    return b"data: " + _dumps(doc) + b"\n\n"


def error_document(status: int, message: str, kind: str = "BadRequestError") -> dict:
    """An OpenAI-style error body."""
    return {"error": {"object": "error", "message": message, "type": kind, "param": None, "code": status}}


def token_id(config: SimConfig, scenario: Scenario, j: int) -> int:
    """The id of the j-th output token (deterministic per scenario seed)."""
    span = config.vocab_size - config.first_token_id
    seed = scenario.seed
    if scenario.diverge_at is not None and j >= scenario.diverge_at:
        seed += 7  # a different greedy continuation from this position on
    return config.first_token_id + (seed * 1_000_003 + j * 7919 + 11) % span


def token_text(scenario: Scenario, token: int) -> str:
    """The text of one output token: ` t<id>`, or the scenario's garbage string."""
    return scenario.garbage_text if scenario.garbage_text is not None else f" t{token}"


class Renderer:
    """Turns the steps of one response into bytes, keeping the held-back text state."""

    def __init__(self, config: SimConfig, scenario: Scenario, spec: RequestSpec, plan: StreamPlan,
                 response_id: str, created: int) -> None:
        self.config, self.scenario, self.spec, self.plan = config, scenario, spec, plan
        self.id, self.created = response_id, created
        self._held = ""
        self._token_chunks = 0
        self._first_tokens = True
        chat = spec.api == "chat"
        self._object = "chat.completion.chunk" if chat else "text_completion"
        src = scenario.sources
        self.send_ids = spec.token_ids and src.token_ids
        self.send_logprobs = spec.logprobs and src.logprobs
        self.send_continuous = spec.continuous_usage and src.continuous_usage
        self._prefix = 'data: {"id":%s,"object":"%s","created":%d,"model":%s,"choices":[{"index":0,' % (
            json.dumps(response_id), self._object, created, json.dumps(spec.model))

    def ids(self, start: int, count: int) -> list[int]:
        return [token_id(self.config, self.scenario, j) for j in range(start, start + count)]

    def _usage(self, completion: int) -> dict:
        prompt = self.spec.prompt_tokens
        return {"prompt_tokens": prompt, "completion_tokens": completion, "total_tokens": prompt + completion}

    def _logprobs(self, ids: list[int], texts: list[str]) -> dict:
        if self.spec.api == "chat":
            return {"content": [{"token": t, "logprob": -0.5, "bytes": list(t.encode()), "top_logprobs": []}
                                for t in texts]}
        offsets, at = [], 0
        for t in texts:
            offsets.append(at)
            at += len(t)
        return {"text_offset": offsets, "token_logprobs": [-0.5] * len(ids), "tokens": texts,
                "top_logprobs": [{t: -0.5} for t in texts]}

    def _envelope(self, choice: dict | None, usage: dict | None) -> dict:
        doc = {"id": self.id, "object": self._object, "created": self.created, "model": self.spec.model,
               "choices": [choice] if choice is not None else []}
        if usage is not None:
            doc["usage"] = usage
        return doc

    def render(self, step: Step, sent_before: int) -> bytes:
        """Bytes of one step; `sent_before` is the number of tokens already sent."""
        kind = step.kind
        if kind == "tokens":
            return self._tokens(step)
        if kind == "role":
            choice = {"index": 0, "delta": {"role": "assistant", "content": ""}, "logprobs": None,
                      "finish_reason": None}
            doc = self._envelope(choice, self._usage(0) if self.send_continuous else None)
            if self.send_ids:
                doc["prompt_token_ids"] = list(range(3, 3 + self.spec.prompt_tokens))
            return sse(doc)
        if kind == "usage":
            return sse(self._envelope(None, self._usage(self.plan.usage_reported or 0)))
        if kind == "done":
            return b"data: [DONE]\n\n"
        if kind == "error":
            return sse(error_document(500, f"simulated engine failure after {sent_before} tokens",
                                      "InternalServerError"))
        if kind == "malformed":
            return MALFORMED_EVENT
        return b""  # reset / close carry no bytes

    def _tokens(self, step: Step) -> bytes:
        ids = self.ids(step.start, step.count)
        texts = [token_text(self.scenario, i) for i in ids]
        self._token_chunks += 1
        every = self.scenario.empty_text_every
        text = self._held + "".join(texts)
        if every and self._token_chunks % every == 0 and step.finish is None:
            self._held, text = text, ""
        else:
            self._held = ""
        # Hot path at high rates: the JSON is assembled from pre-encoded parts. Texts are
        # " t<digits>" (no escaping needed) unless the scenario sends garbage text.
        quoted = json.dumps(text, ensure_ascii=False) if self.scenario.garbage_text else f'"{text}"'
        channel = "reasoning_content" if self.scenario.answer_channel == "reasoning" else "content"
        key = ('"delta":{"%s":%%s}' % channel) if self.spec.api == "chat" else '"text":%s'
        parts = [self._prefix, key % quoted]
        if self.send_logprobs:
            parts.append(',"logprobs":' + json.dumps(self._logprobs(ids, texts), separators=(",", ":")))
        else:
            parts.append(',"logprobs":null')
        parts.append(',"finish_reason":%s,"stop_reason":null' % (f'"{step.finish}"' if step.finish else "null"))
        if self.send_ids:
            parts.append(',"token_ids":[%s]' % ",".join(map(str, ids)))
            if self._first_tokens and self.spec.api == "completions":
                prompt_ids = ",".join(str(i) for i in range(3, 3 + self.spec.prompt_tokens))
                parts.append(f',"prompt_token_ids":[{prompt_ids}]')
        self._first_tokens = False
        parts.append("}]")
        if self.send_continuous:
            done = step.start + step.count
            prompt = self.spec.prompt_tokens
            parts.append(',"usage":{"prompt_tokens":%d,"completion_tokens":%d,"total_tokens":%d}'
                         % (prompt, done, prompt + done))
        parts.append("}\n\n")
        return ("".join(parts)).encode("utf-8")

    def whole(self) -> dict:
        """The non-streaming response body of the plan."""
        ids = self.ids(0, self.plan.tokens)
        texts = [token_text(self.scenario, i) for i in ids]
        text = "".join(texts)
        if self.spec.api == "chat":
            message = ({"role": "assistant", "content": None, "reasoning_content": text}
                       if self.scenario.answer_channel == "reasoning"
                       else {"role": "assistant", "content": text})
            choice = {"index": 0, "message": message}
            obj = "chat.completion"
        else:
            choice = {"index": 0, "text": text}
            obj = "text_completion"
        choice["logprobs"] = self._logprobs(ids, texts) if self.send_logprobs else None
        choice["finish_reason"] = self.plan.finish
        if self.send_ids:
            choice["token_ids"] = ids
        doc = {"id": self.id, "object": obj, "created": self.created, "model": self.spec.model,
               "choices": [choice]}
        if self.scenario.sources.final_usage:
            doc["usage"] = self._usage(self.plan.tokens + self.scenario.faults.final_usage_offset)
        return doc


def tokenize_document(config: SimConfig, body: bytes | None) -> tuple[int, dict]:
    """vLLM's `/tokenize` answer for the simulator's own text: every output token is one word
    (` t<id>`), so a text's count is its number of words."""
    try:
        doc = json.loads(body or b"null")
    except ValueError:
        doc = None
    prompt = doc.get("prompt") if isinstance(doc, dict) else None
    if not isinstance(prompt, str):
        return 400, error_document(400, "'prompt' must be a string")
    words = prompt.split()
    return 200, {"count": len(words), "max_model_len": config.max_model_len,
                 "tokens": list(range(config.first_token_id, config.first_token_id + len(words)))}
