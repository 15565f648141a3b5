"""What one streamed chunk says about tokens: every exact count source, read defensively.

A chunk of `/v1/completions` or `/v1/chat/completions` can tell how many tokens it carries in
up to three ways (vllm-mechanics §7): per-chunk `token_ids` (vLLM `return_token_ids`), per-chunk
logprobs entries, and the cumulative `usage.completion_tokens` of `continuous_usage_stats`. The
last chunk may carry the final `usage` with empty `choices`. This module only reads; choosing
between sources is `tokens.py`'s job.
"""

from __future__ import annotations

from dataclasses import dataclass
from typing import Any


class ChunkError(ValueError):
    """A chunk is JSON but not a completion chunk."""


@dataclass(frozen=True)
class ChunkInfo:
    """Token facts of one chunk; None means the chunk did not carry that source."""

    ids: list[int] | None  # token ids of this chunk (delta)
    logprobs: int | None  # number of logprob entries (= tokens) in this chunk
    usage: int | None  # cumulative completion tokens so far (continuous usage)
    final: bool  # no choices: the trailing usage-only chunk
    text: str  # content delta
    reasoning: str  # reasoning delta (reasoning models)
    finish_reason: str | None
    error: str | None  # a mid-stream error event


def _usage_tokens(chunk: dict) -> int | None:
    usage = chunk.get("usage")
    if isinstance(usage, dict):
        value = usage.get("completion_tokens")
        if isinstance(value, int) and not isinstance(value, bool) and value >= 0:
            return value
    return None


def _logprob_count(choice: dict) -> int | None:
    logprobs = choice.get("logprobs")
    if not isinstance(logprobs, dict):
        return None
    tokens = logprobs.get("tokens")  # completions
    if isinstance(tokens, list):
        return len(tokens)
    content = logprobs.get("content")  # chat
    if isinstance(content, list):
        return len(content)
    return None  # e.g. chat `{"content": null}`: no count from this chunk


def _error_text(error: Any) -> str:
    if isinstance(error, dict):
        message = error.get("message") or error.get("type") or error
        return str(message)
    return str(error)


def read_chunk(chunk: Any) -> ChunkInfo:
    """Extract the token facts of a decoded JSON chunk (completions or chat)."""
    if not isinstance(chunk, dict):
        raise ChunkError(f"chunk is a JSON {type(chunk).__name__}, not an object")
    if "error" in chunk and "choices" not in chunk:
        return ChunkInfo(None, None, None, False, "", "", None, _error_text(chunk["error"]))
    choices = chunk.get("choices")
    if choices is None:
        raise ChunkError("chunk has neither 'choices' nor 'error'")
    if not isinstance(choices, list):
        raise ChunkError("chunk 'choices' is not a list")
    usage = _usage_tokens(chunk)
    if not choices:
        return ChunkInfo(None, None, usage, True, "", "", None, None)
    choice = choices[0]
    if not isinstance(choice, dict):
        raise ChunkError("chunk choice is not an object")
    ids = choice.get("token_ids")
    if isinstance(ids, list):
        if not all(isinstance(i, int) and not isinstance(i, bool) for i in ids):
            raise ChunkError("chunk 'token_ids' holds something other than integers")
    else:
        ids = None
    delta = choice.get("delta")
    if isinstance(delta, dict):  # chat
        text = delta.get("content") or ""
        reasoning = delta.get("reasoning") or delta.get("reasoning_content") or ""
    else:
        text = choice.get("text") or ""
        reasoning = ""
    return ChunkInfo(
        ids=ids,
        logprobs=_logprob_count(choice),
        usage=usage,
        final=False,
        text=text if isinstance(text, str) else str(text),
        reasoning=reasoning if isinstance(reasoning, str) else str(reasoning),
        finish_reason=finish if isinstance(finish := choice.get("finish_reason"), str) else None,
        error=None,
    )
