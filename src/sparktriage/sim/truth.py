"""Ground truth of a simulated response, from the server's trace of what it really sent.

The trace records, for every step, the moment the kernel took its last byte (CLOCK_MONOTONIC).
From it, `truth()` computes what a perfect client on this machine would measure with the
definitions of docs/metrics.md: tokens delivered, the server-side TTFT (request received →
first token chunk sent) and the decode rate (tokens after the first token chunk ÷ time from the
first to the last token chunk).
"""

from __future__ import annotations

from dataclasses import dataclass


@dataclass(frozen=True)
class Truth:
    """What was really sent for one request."""

    id: str
    tokens: int
    chunks: int  # token-carrying chunks
    max_tokens_per_chunk: int
    first_tokens: int  # tokens in the first token chunk
    first_t: float | None  # CLOCK_MONOTONIC send time of the first token chunk
    last_t: float | None
    ttft_server_s: float | None
    decode_tok_s: float | None
    outcome: str | None


def truth(entry: dict) -> Truth:
    """Ground truth of one trace entry (see `GET /sim/trace`)."""
    token_events = [e for e in entry.get("events", []) if e["kind"] in ("tokens", "response")]
    tokens = sum(e["count"] for e in token_events)
    first_t = last_t = ttft = decode = None
    first_n = 0
    if token_events:
        first_t, first_n = token_events[0]["t"], token_events[0]["count"]
        last_t = token_events[-1]["t"]
        ttft = first_t - entry["received"]
        if tokens > first_n and last_t > first_t:
            decode = (tokens - first_n) / (last_t - first_t)
    return Truth(
        id=entry["id"], tokens=tokens, chunks=len(token_events),
        max_tokens_per_chunk=max((e["count"] for e in token_events), default=0),
        first_tokens=first_n, first_t=first_t, last_t=last_t, ttft_server_s=ttft,
        decode_tok_s=decode, outcome=entry.get("outcome"),
    )
