"""What a probe run collected, and the shared readers the signal families use.

`Capabilities` records what the server accepted (prompt logprobs and their cap, generation
logprobs, token ids, chat); every reduction is written down as a limitation. `Observations`
holds every reply by request id together with the plan's passages, probes and prompts.
`scored_passage()` turns the reply to a passage into the scored positions and bytes.
"""

from __future__ import annotations

import math
from dataclasses import dataclass, field

from sparktriage.probe import logprobs as lp
from sparktriage.probe.api import Reply
from sparktriage.probe.knowns import KnownProbe
from sparktriage.probe.passages import SKIP_TOKENS, Passage


@dataclass
class Capabilities:
    """What the server accepted, found by negotiation before the probe."""

    prompt_logprobs: int = 0  # top-k per prompt position (0: not available)
    prompt_logprobs_via: str | None = None  # "prompt_logprobs" / "echo" / None
    logprobs: int = 0  # top-k per generated token (0: not available)
    token_ids: bool = False  # return_token_ids honoured
    chat: bool = True  # /v1/chat/completions usable (a chat template exists)
    completions: bool = True
    max_model_len: int | None = None
    limitations: list[str] = field(default_factory=list)

    def as_dict(self) -> dict:
        return {"prompt_logprobs": self.prompt_logprobs, "prompt_logprobs_via": self.prompt_logprobs_via,
                "logprobs": self.logprobs, "token_ids": self.token_ids, "chat": self.chat,
                "completions": self.completions, "max_model_len": self.max_model_len}


@dataclass
class Observations:
    """Replies by request id, with what each request was about."""

    caps: Capabilities
    passages: list[Passage]
    probes: list[KnownProbe]
    open_prompts: list[str]
    replies: dict[str, Reply] = field(default_factory=dict)

    def get(self, rid: str) -> Reply | None:
        return self.replies.get(rid)


@dataclass(frozen=True)
class ScoredPassage:
    name: str
    kind: str
    positions: tuple[lp.Position, ...]  # the scored ones
    token_ids: tuple[int, ...]  # every prompt token id (empty when unknown)
    scored_bytes: int

    @property
    def nll(self) -> float:
        """Mean negative log-likelihood per scored token (nats); NaN if any value is missing."""
        if not self.positions:
            return math.nan
        return -sum(p.logprob for p in self.positions) / len(self.positions)

    @property
    def bits_per_byte(self) -> float:
        if not self.positions or self.scored_bytes <= 0:
            return math.nan
        return -sum(p.logprob for p in self.positions) / math.log(2) / self.scored_bytes

    @property
    def top1(self) -> float:
        ranks = [p for p in self.positions if p.top]
        if not ranks:
            return math.nan
        return sum(1 for p in ranks if p.top[0][0] == p.token) / len(ranks)


def _token_bytes(text: str) -> int:
    return len(text.encode("utf-8"))


def scored_passage(passage: Passage, reply: Reply | None, k: int) -> ScoredPassage | None:
    """The scored positions of a passage reply (prompt_logprobs or echo form), or None."""
    if reply is None or not reply.ok:
        return None
    choice = reply.choice
    ids = choice.get("prompt_token_ids") or reply.doc.get("prompt_token_ids")
    ids = [int(i) for i in ids] if isinstance(ids, list) and all(isinstance(i, int) for i in ids) else None
    if choice.get("prompt_logprobs") is not None:
        positions = lp.from_prompt_logprobs(choice["prompt_logprobs"], ids, k)
        texts = [p.text for p in positions]
    else:  # echo + logprobs: the first token has no logprob
        echoed = lp.from_completion_logprobs(choice.get("logprobs"))
        prompt_len = len(ids) if ids else None
        echoed = echoed[:prompt_len] if prompt_len else echoed[:-1]  # drop the generated token
        positions = echoed[1:]
        texts = [p.text for p in positions]
    if not positions:
        return None
    # Byte offset of each position's token inside the passage (the first token is position 0).
    first_len = max(0, _token_bytes(passage.text) - sum(_token_bytes(t) for t in texts))
    offsets, at = [], first_len
    for t in texts:
        offsets.append(at)
        at += _token_bytes(t)
    if passage.score_from:
        start = len(passage.text[:passage.score_from].encode("utf-8"))
        keep = [i for i, off in enumerate(offsets) if off >= start]
    else:
        keep = list(range(SKIP_TOKENS, len(positions)))
    chosen = tuple(positions[i] for i in keep)
    nbytes = sum(_token_bytes(texts[i]) for i in keep)
    return ScoredPassage(passage.name, passage.kind, chosen, tuple(ids or ()), nbytes)
