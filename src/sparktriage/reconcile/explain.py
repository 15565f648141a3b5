"""Explanation sentences of a reconciliation: typed data, each sentence with the counts it cites.

A sentence is built from a template and the numbers it quotes (`cites`), so that what it says
can be checked against the document's own counts (tests/reconcile/test_explain_consistency.py)
and no two sentences can contradict each other: every explanation of the gap between the log's
peak and the delivered mean is derived from the counts of the window that holds the peak.

What the two figures are (docs/metrics.md, "Delivered vs logged"):

* the log's peak is the **maximum** over its stats windows of (tokens generated in the window,
  all requests together) / (window length);
* the delivered figure is the **mean** over the measured requests of each request's decode rate
  (tokens after the first chunk / time from the first to the last token-carrying chunk).
"""

from __future__ import annotations

from dataclasses import dataclass, field

RATE_TOLERANCE = 0.15
INSIDE_FRACTION = 0.9

Cited = float | int | str | bool | None


@dataclass(frozen=True)
class Sentence:
    """One explanation: a stable code, the words, and every number the words quote."""

    code: str
    text: str
    cites: dict[str, Cited] = field(default_factory=dict)

    def as_dict(self) -> dict:
        return {"code": self.code, "text": self.text, "cites": dict(self.cites)}


def say(code: str, template: str, **cites: Cited) -> Sentence:
    """A sentence whose text is `template` formatted with exactly the numbers it cites."""
    return Sentence(code, template.format(**cites), cites)


def peak_window(log: dict) -> dict | None:
    """The log window that holds the peak (the first of equal rates)."""
    rows = log.get("windows") or []
    return max(rows, key=lambda r: r["logged_tok_s"]) if rows else None


def peak_sentences(log: dict, delivered: dict, metrics: dict | None) -> list[Sentence]:
    """What the ratio of the log's peak to the delivered mean is, and what explains it, from the
    counts of the peak window (and the `/metrics` total when there is one)."""
    peak, mean = log.get("peak_tok_s"), delivered.get("decode_tok_s_mean")
    row = peak_window(log)
    if not peak or not mean or row is None:
        return []
    ratio = round(peak / mean, 3)
    rows = log["windows"]
    out = [say("peak_ratio",
               "the log's peak {peak:.1f} tok/s is the maximum over {windows} stats windows of the "
               "tokens all requests generated per second of window; the delivered {mean:.1f} tok/s "
               "is the mean over {requests} measured {workload} requests of each request's decode "
               "rate; the peak is {ratio:.2f}x the mean",
               peak=peak, windows=len(rows), mean=mean, requests=delivered.get("decode_requests"),
               workload=delivered.get("decode_workload") or "", ratio=ratio)]
    spec = (metrics or {}).get("spec_decode") or {}
    if spec.get("accepted_tokens"):
        out.append(say("spec_accepted",
                       "{accepted:.0f} of the {generated:.0f} generated tokens were accepted "
                       "speculative tokens; the log, /metrics and the client all count them, so "
                       "speculation explains no gap by itself",
                       accepted=spec["accepted_tokens"], generated=metrics["generation_tokens"]))
    if abs(ratio - 1) <= RATE_TOLERANCE:
        out.append(say("peak_agrees", "a ratio of {ratio:.2f} is within {tolerance:.0%} of 1: "
                       "the two agree", ratio=ratio, tolerance=RATE_TOLERANCE))
        return out
    cites = {"logged": row["logged_tokens"], "arrived": row["delivered_tokens"],
             "seconds": row["seconds"]}
    matched = bool(metrics) and metrics.get("difference_tokens") == 0 \
        and metrics.get("generation_tokens") is not None
    if row.get("running") and row["running"] > 1:
        out.append(say("peak_concurrent", "the peak window had {running} requests running at "
                       "once and the log sums them; the delivered rate is one request's",
                       running=row["running"]))
    if "chunks" in (delivered.get("token_sources") or []):
        out.append(say("peak_chunks", "the client counted chunks, not tokens ({per_chunk:.2f} "
                       "tokens per chunk)", per_chunk=delivered.get("tokens_per_chunk") or 1.0))
    judged = [r for r in rows if r["inside_protocol_fraction"] >= INSIDE_FRACTION] or rows
    excess = round(sum(r["logged_tokens"] - r["delivered_tokens"] for r in judged), 1)
    shifted = abs(excess) <= sum(r["tolerance_tokens"] for r in judged)
    if row["verdict"] == "log_counts_undelivered" and matched and not shifted:
        out.append(say("peak_window_log_disagrees",
                       "in the peak window ({seconds:.1f} s) the log counts {logged:.0f} tokens and "
                       "{arrived} arrived in it, {excess:.0f} more over its {judged} windows; the "
                       "/metrics counter rose by exactly the {total:.0f} tokens delivered, so the "
                       "log's rate disagrees with the server's own counter: believe the counter "
                       "(exact), not the log (windowed and rounded)", excess=excess,
                       judged=len(judged), total=metrics["generation_tokens"], **cites))
    elif row["verdict"] == "log_counts_undelivered" and matched:
        out.append(say("peak_window_boundary",
                       "in the peak window ({seconds:.1f} s) the log counts {logged:.0f} tokens and "
                       "{arrived} arrived in it; the /metrics counter rose by exactly the "
                       "{total:.0f} tokens delivered, so the difference arrived outside that window "
                       "(a window edge or a clock offset), not lost",
                       total=metrics["generation_tokens"], **cites))
    elif row["verdict"] == "log_counts_undelivered":
        out.append(say("peak_window_undelivered",
                       "in the peak window ({seconds:.1f} s) the log counts {logged:.0f} tokens but "
                       "only {arrived} arrived in it: the log counts tokens the client did not "
                       "receive in that window", **cites))
    elif row["verdict"] == "consistent" and ratio > 1:
        out.append(say("peak_window_delivered",
                       "in the peak window ({seconds:.1f} s) the log counts {logged:.0f} tokens and "
                       "{arrived} arrived in it: the server did deliver at its peak rate there, and "
                       "the mean over requests includes their slower stretches", **cites))
    if row.get("start_estimated"):
        out.append(say("peak_estimated_start",
                       "the stats line before the peak window was hidden at INFO (an idle window), "
                       "so its start is estimated and its {seconds:.1f} s length is uncertain by "
                       "half of that", seconds=row["seconds"]))
    if row["inside_protocol_fraction"] < INSIDE_FRACTION:
        out.append(say("peak_outside_requests",
                       "{outside:.0%} of the peak window lies outside the protocol's requests",
                       outside=round(1 - row["inside_protocol_fraction"], 3)))
    if ratio < 1 - RATE_TOLERANCE:
        out.append(say("peak_idle", "even the peak window had requests in flight only "
                       "{in_flight:.0%} of its length: every log window includes idle or prefill "
                       "time", in_flight=row["in_flight_fraction"]))
    return out


__all__ = ["Sentence", "say", "peak_sentences", "peak_window"]
