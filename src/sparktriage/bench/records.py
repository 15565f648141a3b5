"""Raw request records and the per-request metrics derived from them (design §6).

A raw record is what the client saw, nothing computed: send time, HTTP status, every chunk with
its receive time (seconds after send, monotonic clock) and token facts, the final usage, how
the stream ended. `derive()` turns it into TTFT, decode rate and end-to-end rate, so a change
in a definition never needs a re-measurement.
"""

from __future__ import annotations

from dataclasses import dataclass

from sparktriage.bench.tokens import TokenAccount, account

RECORD_TYPE = "request"
STATUSES = ("ok", "error", "incomplete")


@dataclass(frozen=True)
class RequestMetrics:
    """Per-request numbers derived from a raw record."""

    status: str
    reason: str | None
    output_tokens: int
    ttft_s: float | None
    decode_tok_s: float | None
    e2e_tok_s: float | None
    chunks: int  # chunks that carried at least one token
    max_tokens_per_chunk: int
    first_read_tokens: int  # tokens that arrived with the first one (one read)
    token_source: str
    exact: bool
    token_totals: dict
    disagreements: tuple[str, ...]
    short: bool  # stopped before max_tokens although ignore_eos was asked
    max_gap_s: float | None = None  # longest wait between two chunks after the first token
    asked_tokens: int | None = None  # max_tokens when ignore_eos was asked: what must arrive

    def as_dict(self) -> dict:
        return {
            "status": self.status,
            "reason": self.reason,
            "output_tokens": self.output_tokens,
            "ttft_s": self.ttft_s,
            "decode_tok_s": self.decode_tok_s,
            "e2e_tok_s": self.e2e_tok_s,
            "chunks": self.chunks,
            "max_tokens_per_chunk": self.max_tokens_per_chunk,
            "first_read_tokens": self.first_read_tokens,
            "token_source": self.token_source,
            "exact": self.exact,
            "token_totals": dict(self.token_totals),
            "disagreements": list(self.disagreements),
            "short": self.short,
            "max_gap_s": self.max_gap_s,
            "asked_tokens": self.asked_tokens,
        }


def token_account(record: dict) -> TokenAccount:
    """The token account of a raw record's content chunks."""
    final = record.get("final_usage") or {}
    final_tokens = final.get("completion_tokens") if isinstance(final, dict) else None
    return account(record.get("chunks") or [], final_tokens if isinstance(final_tokens, int) else None)


def derive(record: dict) -> RequestMetrics:
    """Compute TTFT, decode rate and end-to-end rate of one raw request record.

    TTFT: send → arrival of the first chunk carrying a token. Decode rate: tokens delivered
    after that arrival ÷ time from it to the arrival of the last token-carrying chunk.
    End-to-end rate: tokens ÷ (last token arrival − send).

    The first arrival is the whole first read: the client stamps every chunk of one read with
    that read's time, and the chunks that came with the first token (a server or proxy that
    held the stream back, an API process starved of CPU) were produced before anything reached
    the client, so they belong to the wait, not to the decode interval, like the several tokens
    of a multi-token first chunk (design §6). Counting them as decoded in the few milliseconds
    to the next read made a 160 tok/s stream read 19,000 tok/s (docs/metrics.md).
    """
    chunks = record.get("chunks") or []
    tokens = token_account(record)
    carrying = [(c["t"], n) for c, n in zip(chunks, tokens.per_chunk) if n > 0]
    ttft = decode = e2e = None
    first_n = 0
    if carrying:
        first_t, last_t = carrying[0][0], carrying[-1][0]
        first_n = sum(n for t, n in carrying if t <= first_t)  # the first read's tokens
        ttft = first_t
        after = tokens.total - first_n
        if after > 0 and last_t > first_t:
            decode = after / (last_t - first_t)
        if last_t > 0:
            e2e = tokens.total / last_t
    # The longest silence a client sat through once the answer had begun: every chunk counts
    # (a pause may end with a chunk that carries no token, such as the finish or usage chunk).
    times = [c["t"] for c in chunks if isinstance(c.get("t"), (int, float))]
    if carrying:
        times = [t for t in times if t >= carrying[0][0]]
    max_gap = max((b - a for a, b in zip(times, times[1:])), default=None) if carrying else None
    finish = next((c.get("finish") for c in reversed(chunks) if c.get("finish")), None)
    max_tokens = record.get("max_tokens")
    short = bool(
        record.get("ignore_eos")
        and finish == "stop"
        and isinstance(max_tokens, int)
        and tokens.total < max_tokens
    )
    return RequestMetrics(
        status=record.get("status", "error"),
        reason=record.get("reason"),
        output_tokens=tokens.total,
        ttft_s=ttft,
        decode_tok_s=decode,
        e2e_tok_s=e2e,
        chunks=len(carrying),
        max_tokens_per_chunk=max((n for _, n in carrying), default=0),
        first_read_tokens=first_n,
        token_source=tokens.source,
        exact=tokens.exact_timing,
        token_totals=tokens.totals,
        disagreements=tokens.disagreements,
        short=short,
        max_gap_s=max_gap,
        asked_tokens=max_tokens if record.get("ignore_eos") and isinstance(max_tokens, int) else None,
    )
