"""One shape for the three ways servers return log-probabilities.

`Position` is one scored token: the token (an id when known, else its text), its log-probability
and the top-k alternatives sorted best first. Sources: `prompt_logprobs` (vLLM: a list aligned
with the prompt, first entry null, each `{id: {logprob, rank, decoded_token}}`), completions
`logprobs` (`tokens`, `token_logprobs`, `top_logprobs` dicts keyed by text) and chat
`logprobs.content` (`[{token, logprob, top_logprobs: [{token, logprob}]}]`). Values may be NaN,
infinite or missing: they are kept as NaN so that the sanity family can count them. vLLM clamps
-inf to -9999.0; such values are kept as they are.
"""

from __future__ import annotations

import math
from dataclasses import dataclass

NAN = float("nan")


@dataclass(frozen=True)
class Position:
    token: int | str
    logprob: float  # NaN when the server gave none, NaN or a non-number
    top: tuple[tuple[int | str, float], ...]  # best first
    text: str = ""  # decoded text of the token when known
    rank: int | None = None


def _num(value) -> float:
    if isinstance(value, bool) or not isinstance(value, (int, float)):
        return NAN
    return float(value)


def _sorted_top(items: list[tuple[int | str, float]]) -> tuple[tuple[int | str, float], ...]:
    return tuple(sorted(items, key=lambda kv: -kv[1] if math.isfinite(kv[1]) else math.inf))


def from_prompt_logprobs(entries: list, token_ids: list[int] | None, k: int) -> list[Position]:
    """Positions 1.. of a prompt (position 0 has no context and no entry)."""
    out: list[Position] = []
    for i, entry in enumerate(entries or []):
        if i == 0 or not isinstance(entry, dict):
            continue
        actual_id = token_ids[i] if token_ids and i < len(token_ids) else None
        top, actual, text, rank = [], None, "", None
        for key, info in entry.items():
            info = info if isinstance(info, dict) else {"logprob": info}
            try:
                tid = int(key)
            except ValueError:
                tid = key
            lp = _num(info.get("logprob"))
            r = info.get("rank")
            if actual_id is None and actual is None:
                actual_id = tid  # vLLM lists the prompt token first
            if tid == actual_id:
                actual, text, rank = lp, str(info.get("decoded_token") or ""), r if isinstance(r, int) else None
            if isinstance(r, int) and r <= k:
                top.append((tid, lp))
        out.append(Position(actual_id if actual_id is not None else -1,
                            NAN if actual is None else actual, _sorted_top(top), text, rank))
    return out


def from_completion_logprobs(lp: dict | None, token_ids: list[int] | None = None) -> list[Position]:
    """Positions of generated (or echoed) tokens from a completions `logprobs` object."""
    if not isinstance(lp, dict):
        return []
    tokens = lp.get("tokens") or []
    values = lp.get("token_logprobs") or []
    tops = lp.get("top_logprobs") or []
    out = []
    for i, token in enumerate(tokens):
        top_raw = tops[i] if i < len(tops) and isinstance(tops[i], dict) else {}
        top = _sorted_top([(str(t), _num(v)) for t, v in top_raw.items()])
        tid = token_ids[i] if token_ids and i < len(token_ids) else str(token)
        value = values[i] if i < len(values) else None
        out.append(Position(tid, _num(value), top, str(token)))
    return out


def from_chat_logprobs(lp: dict | None, token_ids: list[int] | None = None) -> list[Position]:
    """Positions of generated tokens from a chat `logprobs.content` list."""
    content = (lp or {}).get("content") if isinstance(lp, dict) else None
    if not isinstance(content, list):
        return []
    out = []
    for i, item in enumerate(content):
        if not isinstance(item, dict):
            continue
        top = _sorted_top([(str(t.get("token")), _num(t.get("logprob")))
                           for t in item.get("top_logprobs") or [] if isinstance(t, dict)])
        tid = token_ids[i] if token_ids and i < len(token_ids) else str(item.get("token"))
        out.append(Position(tid, _num(item.get("logprob")), top, str(item.get("token") or "")))
    return out


def token_id(token: int | str) -> int | None:
    """The id of a token given as an int or as vLLM's `token_id:<n>` text."""
    if isinstance(token, int):
        return token
    if isinstance(token, str) and token.startswith("token_id:"):
        try:
            return int(token.split(":", 1)[1])
        except ValueError:
            return None
    return None
