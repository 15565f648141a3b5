"""The acceptance counts of one launch, as the depth model reads them (docs/sweep.md, "The depth model").

vLLM's counters over the protocol's windows (`/metrics` deltas: sweep.evidence.acceptance) give, for
one launch at depth k: D drafts (engine steps that proposed tokens), T draft tokens, A accepted
tokens, A_i drafts whose position i was accepted (vLLM increments every position below the
accepted count, so A_i / D is unconditional: P(at least i accepted)) and G output tokens. From
them:

    steps S            = G − A              (every step yields one token plus its accepted drafts)
    tokens per step    = G / S
    drafted share q    = D / S              (ngram proposes nothing where it finds no match)
    rate_i             = A_i / D
    mean draft length  = T / D              (< k: ngram found fewer than k tokens to propose)

Without G (counts from the log's SpecDecoding lines, or a /metrics page without
`vllm:generation_tokens_total`) the steps come from the protocol's stream instead, where one
stream gets one chunk per engine step: S = A / (tokens per chunk − 1) (sweep.evidence.acceptance,
`chunk_steps`). Without either, q is not measured: a drafter that drafts at every step (MTP,
EAGLE, a draft model) has q = 1 by its method, and ngram's no-match share is unknown
(`share_known` false; the depth model then says so and is not used: sweep.model.depth).

The protocol repeats one greedy prompt per workload (temperature 0), so its requests draft the
same tokens every time: `repeats` (the requests the counts sum over) divides the drafts into the
independent trials the counting error is taken over (`independent_drafts`).
"""

from __future__ import annotations

from dataclasses import dataclass


@dataclass(frozen=True)
class Counts:
    """Acceptance counters of one launch (or of several launches of one depth, summed)."""

    depth: int
    drafts: float
    draft_tokens: float
    accepted: float
    per_position: tuple[float, ...]  # A_i: drafts with position i accepted (i from 1)
    generation_tokens: float | None = None
    source: str = "metrics"
    repeats: float = 1.0  # identical greedy requests the counts sum over (their drafts repeat)
    chunk_steps: float | None = None  # S from the stream's chunks when G was not counted
    share_known: bool = True  # False: ngram without G or chunk steps (q cannot be measured)

    @property
    def independent_drafts(self) -> float:
        """The drafts that count as independent trials: a greedy prompt sent `repeats` times
        gives the same drafts every time, so only one request's worth are (the counting error
        of every interval and test is taken over these)."""
        return self.drafts / max(1.0, self.repeats)

    @property
    def steps(self) -> float | None:
        """S: engine steps, from G when counted, else from the stream's chunks (module doc)."""
        if self.generation_tokens is None:
            return self.chunk_steps if self.chunk_steps and self.chunk_steps > 0 else None
        if self.generation_tokens - self.accepted <= 0:
            return None
        return self.generation_tokens - self.accepted

    @property
    def steps_from(self) -> str:
        """Where S (and so q) comes from, in words."""
        if self.generation_tokens is not None:
            return "generated tokens"
        if self.steps is not None:
            return "stream chunks"
        return "every step drafts (the method)" if self.share_known else "not measured"

    @property
    def drafted_share(self) -> float:
        """q: the share of engine steps that drafted (1 when the steps are not known)."""
        steps = self.steps
        return 1.0 if steps is None else min(1.0, self.drafts / steps)

    @property
    def tokens_per_step(self) -> float:
        """Tokens one engine step yields on average (the bonus token included)."""
        steps = self.steps
        if steps is None:
            return 1.0 + self.accepted / self.drafts
        if self.generation_tokens is None:
            return (steps + self.accepted) / steps
        return self.generation_tokens / steps

    @property
    def mean_draft_length(self) -> float | None:
        """T / D (None when the draft tokens were not counted)."""
        return self.draft_tokens / self.drafts if self.draft_tokens > 0 else None

    def rate(self, position: int) -> float:
        """rate_i = A_i / D (position from 1); 0 beyond the counted positions."""
        if position > len(self.per_position):
            return 0.0
        return self.per_position[position - 1] / self.drafts

    def plus(self, other: "Counts") -> "Counts":
        """Two launches of the same depth, counts summed."""
        width = max(len(self.per_position), len(other.per_position))
        pad = lambda c: tuple(c.per_position) + (0.0,) * (width - len(c.per_position))  # noqa: E731
        generated = (None if self.generation_tokens is None or other.generation_tokens is None
                     else self.generation_tokens + other.generation_tokens)
        # a launch whose G was not counted pools by its steps (from chunks) with the other's
        chunk = (self.steps + other.steps if generated is None and self.steps is not None
                 and other.steps is not None else None)
        sources = "+".join(sorted({*self.source.split("+"), *other.source.split("+")}))
        return Counts(self.depth, self.drafts + other.drafts, self.draft_tokens + other.draft_tokens,
                      self.accepted + other.accepted,
                      tuple(a + b for a, b in zip(pad(self), pad(other))), generated, sources,
                      self.repeats + other.repeats, chunk,
                      self.share_known and other.share_known)

    def as_dict(self) -> dict:
        return {"depth": self.depth, "drafts": self.drafts, "draft_tokens": self.draft_tokens,
                "accepted_tokens": self.accepted, "accepted_per_position": list(self.per_position),
                "generation_tokens": self.generation_tokens, "source": self.source,
                "repeats": self.repeats, "chunk_steps": self.chunk_steps,
                "steps_from": self.steps_from,
                "tokens_per_step": round(self.tokens_per_step, 4),
                "drafted_share": round(self.drafted_share, 4),
                "mean_draft_length": (None if self.mean_draft_length is None
                                      else round(self.mean_draft_length, 4))}


def from_acceptance(depth: int, acceptance: dict | None) -> Counts | None:
    """The counts of a launch record's `acceptance` (sweep.evidence.acceptance), None without
    drafts."""
    if not isinstance(acceptance, dict) or not acceptance.get("drafts"):
        return None
    drafts = float(acceptance["drafts"])
    exact = acceptance.get("accepted_per_position")
    if isinstance(exact, list) and exact:
        per_pos = tuple(float(x or 0.0) for x in exact)
    else:
        per_pos = tuple(float(x) * drafts for x in acceptance.get("per_position") or [])
    generated = acceptance.get("generation_tokens")
    repeats = acceptance.get("repeats")
    chunk = acceptance.get("chunk_steps")
    return Counts(depth, drafts, float(acceptance.get("draft_tokens") or 0.0),
                  float(acceptance.get("accepted_tokens") or 0.0), per_pos,
                  float(generated) if isinstance(generated, (int, float)) else None,
                  str(acceptance.get("source") or "metrics"),
                  float(repeats) if isinstance(repeats, (int, float)) and repeats >= 1 else 1.0,
                  float(chunk) if isinstance(chunk, (int, float)) and chunk > 0 else None,
                  acceptance.get("share_known") is not False)


def pooled(counts: list[Counts]) -> Counts | None:
    """The counts of one depth over its launches (None when there are none)."""
    total = None
    for c in counts:
        total = c if total is None else total.plus(c)
    return total
