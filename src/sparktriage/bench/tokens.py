"""Delivered-token accounting for one streamed request: pick the best exact source.

Sources, best first (design §6): per-chunk token ids, per-chunk logprob entries, deltas of the
cumulative continuous usage. A source is usable when every chunk that visibly carries output
(text, reasoning, or a count from another source) carries it too. Every usable source is
totalled, and the totals (and the final `usage`) are compared: any difference is recorded as a
disagreement. Without any per-chunk source the final usage gives the exact total but not its
split over chunks (`exact_timing` false); with nothing at all, chunks with text are counted,
which is the mistake this tool exists to avoid, so the result says so (`source="chunks"`).
"""

from __future__ import annotations

from dataclasses import dataclass, field

EXACT_SOURCES = ("token_ids", "logprobs", "continuous_usage")


@dataclass(frozen=True)
class TokenAccount:
    """How many tokens each chunk carried, and how sure we are."""

    source: str  # token_ids | logprobs | continuous_usage | final_usage | chunks | none
    per_chunk: tuple[int, ...]  # tokens per raw chunk (same order as the record's chunks)
    total: int
    exact_timing: bool  # per-chunk counts are exact, so rates are exact
    totals: dict = field(default_factory=dict)  # total by every source that was present
    disagreements: tuple[str, ...] = ()


def _visible(chunk: dict) -> bool:
    return bool(chunk.get("text")) or bool(chunk.get("reasoning"))


def _counts(chunks: list[dict], source: str) -> list[int] | None:
    """Per-chunk counts from one source, or None when the source is incomplete."""
    counts: list[int] = []
    previous_usage = 0
    for chunk in chunks:
        if source == "token_ids":
            value = chunk.get("ids")
            count = len(value) if isinstance(value, list) else None
        elif source == "logprobs":
            count = chunk.get("lp")
        else:
            usage = chunk.get("usage")
            if usage is None:
                count = None
            else:
                count = usage - previous_usage
                previous_usage = usage
                if count < 0:
                    return None  # cumulative usage went backwards: not a usable source
        if count is None:
            if _visible(chunk):
                return None
            count = 0
        counts.append(count)
    return counts


def account(chunks: list[dict], final_usage: int | None) -> TokenAccount:
    """Count delivered tokens for the content chunks of one request."""
    usable: dict[str, list[int]] = {}
    for source in EXACT_SOURCES:
        if any(c.get(_FIELD[source]) is not None for c in chunks):
            counts = _counts(chunks, source)
            if counts is not None:
                usable[source] = counts
    totals = {source: sum(counts) for source, counts in usable.items()}
    if final_usage is not None:
        totals["final_usage"] = final_usage
    disagreements = _disagreements(usable, totals)
    for source in EXACT_SOURCES:
        if source in usable:
            counts = usable[source]
            return TokenAccount(source, tuple(counts), sum(counts), True, totals, disagreements)
    if final_usage is not None:
        # Exact total, unknown split: one token per visible chunk, the rest on the first.
        counts = [1 if _visible(c) else 0 for c in chunks]
        if any(counts):
            first = counts.index(1)
            counts[first] += max(0, final_usage - sum(counts))
        return TokenAccount("final_usage", tuple(counts), final_usage, False, totals, disagreements)
    counts = [1 if _visible(c) else 0 for c in chunks]
    totals["chunks"] = sum(counts)
    source = "chunks" if any(counts) else "none"
    return TokenAccount(source, tuple(counts), sum(counts), False, totals, disagreements)


_FIELD = {"token_ids": "ids", "logprobs": "lp", "continuous_usage": "usage"}


def _disagreements(usable: dict[str, list[int]], totals: dict[str, int]) -> tuple[str, ...]:
    notes = []
    names = list(totals)
    for i, a in enumerate(names):
        for b in names[i + 1 :]:
            if totals[a] != totals[b]:
                notes.append(f"{a} counts {totals[a]} tokens but {b} counts {totals[b]}")
    sources = list(usable)
    for i, a in enumerate(sources):
        for b in sources[i + 1 :]:
            if totals[a] == totals[b] and usable[a] != usable[b]:
                notes.append(f"{a} and {b} agree on the total but split it differently over chunks")
    return tuple(notes)
