"""Delivered-token accounting for one streamed request: pick the best exact source.

Sources, best first (design §6): per-chunk token ids, per-chunk logprob entries, deltas of the
cumulative continuous usage. A source is usable when every chunk that visibly carries output
(text, reasoning, or a count from another source) carries it too, and (for usage) when it never
goes backwards. Every usable source is totalled, and the totals and the final `usage` are
compared: any difference is recorded as a disagreement, and so is a source that was present but
unusable. Without any per-chunk source the final usage gives the exact total but not its split
over chunks (`exact_timing` false): the total is spread evenly over the chunks that carry text,
which is right when chunks are alike and far better than one token per chunk. With nothing at
all, chunks with text are counted, which is the mistake this tool exists to avoid, so the
result says so (`source="chunks"`).
"""

from __future__ import annotations

from dataclasses import dataclass, field

EXACT_SOURCES = ("token_ids", "logprobs", "continuous_usage")
_FIELD = {"token_ids": "ids", "logprobs": "lp", "continuous_usage": "usage"}


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


def _counts(chunks: list[dict], source: str) -> tuple[list[int] | None, str | None]:
    """Per-chunk counts from one source, or (None, why) when the source is unusable."""
    counts: list[int] = []
    previous_usage = 0
    missing = 0
    for number, chunk in enumerate(chunks):
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
                if count < 0:
                    return None, (f"continuous usage went backwards ({previous_usage} → {usage} "
                                  f"at chunk {number + 1}): not used")
                previous_usage = usage
        if count is None:
            if _visible(chunk):
                missing += 1
            count = 0
        counts.append(count)
    if missing:
        return None, f"{source} missing on {missing} chunks that carry text: not used"
    return counts, None


def _spread(chunks: list[dict], total: int) -> list[int]:
    """An exact total spread evenly over the chunks with text (later chunks take the rest)."""
    visible = [i for i, c in enumerate(chunks) if _visible(c)]
    counts = [0] * len(chunks)
    if not visible:
        return counts
    base, extra = divmod(total, len(visible))
    for rank, i in enumerate(visible):
        counts[i] = base + (1 if rank >= len(visible) - extra else 0)
    return counts


def account(chunks: list[dict], final_usage: int | None) -> TokenAccount:
    """Count delivered tokens for the content chunks of one request."""
    usable: dict[str, list[int]] = {}
    notes: list[str] = []
    for source in EXACT_SOURCES:
        if any(c.get(_FIELD[source]) is not None for c in chunks):
            counts, why = _counts(chunks, source)
            if counts is not None:
                usable[source] = counts
            elif not (source == "continuous_usage" and _usage_only_on_last(chunks)):
                notes.append(why or f"{source} unusable")
    if final_usage is None and "continuous_usage" not in usable and _usage_only_on_last(chunks):
        final_usage = chunks[-1]["usage"]  # some servers put the final usage on the last chunk
    totals = {source: sum(counts) for source, counts in usable.items()}
    if final_usage is not None:
        totals["final_usage"] = final_usage
    disagreements = tuple(notes) + _disagreements(usable, totals)
    for source in EXACT_SOURCES:
        if source in usable:
            counts = usable[source]
            return TokenAccount(source, tuple(counts), sum(counts), True, totals, disagreements)
    visible = sum(1 for c in chunks if _visible(c))
    if final_usage is not None and final_usage >= visible:
        counts = _spread(chunks, final_usage)
        return TokenAccount("final_usage", tuple(counts), final_usage, False, totals, disagreements)
    if final_usage is not None:
        disagreements += (f"final usage counts {final_usage} tokens but {visible} chunks carry text",)
    counts = [1 if _visible(c) else 0 for c in chunks]
    totals["chunks"] = sum(counts)
    source = "chunks" if any(counts) else "none"
    return TokenAccount(source, tuple(counts), sum(counts), False, totals, disagreements)


def _usage_only_on_last(chunks: list[dict]) -> bool:
    """True when only the last chunk carries usage (a final usage in the last content chunk)."""
    if not chunks or chunks[-1].get("usage") is None:
        return False
    return all(c.get("usage") is None for c in chunks[:-1]) and len(chunks) > 1


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
