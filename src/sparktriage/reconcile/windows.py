"""Delivered vs logged vs counted: reconcile what clients received with what the server says.

Three sources over the same protocol window (docs/logs.md, "Reconciliation"):

* delivered: the protocol's raw request records, token by token with arrival times (bench);
* metrics: `/metrics` counter deltas between scrapes taken right before and right after each
  workload's requests (exact windows; the generation-token delta should equal the delivered
  tokens when nothing else used the server);
* log: the periodic stats windows (~10 s each) that overlap the protocol window.

Window by window, the log's tokens (rate × window length) are compared with the tokens that
arrived inside the window, within a tolerance for the window edges (1 s for log stamps, 0.25 s
for receive times; and any chunk whose request's previous delivery arrived before an edge and
it after, since a burst's tokens may have been produced on either side) and the rate's
rounding. The verdict and its reasons come from fixed rules (docs/logs.md lists them); the
ratio of the log's peak to the delivered mean decode rate is reported with what explains it:
every reason is a typed sentence with the counts it cites (`explain.py`), and the story of the
peak is derived from the peak window's own counts.
"""

from __future__ import annotations

import statistics
from dataclasses import dataclass, field

from sparktriage.bench.records import derive, token_account
from sparktriage.logs.series import StatsWindow
from sparktriage.reconcile.explain import Sentence, peak_sentences, say

VERDICTS = ("client_received_fewer", "chunks_counted", "client_counted_more",
            "log_counts_undelivered", "bursty_delivery", "idle_in_log_windows", "consistent",
            "no_overlap", "not_measured")  # in order of precedence
IDLE_BUSY_FRACTION = 0.9
INSIDE_FRACTION = 0.9  # a log window this much inside the protocol window is judged
RATE_TOLERANCE = 0.15
BURST_FACTOR = 1.5
ONE_DELIVERY_S = 0.001  # chunks of one request this close arrived together (one read, a burst)


@dataclass(frozen=True)
class Arrival:
    """Tokens of one chunk and when they arrived (Unix seconds)."""

    t: float
    tokens: int
    request: int
    # when its request's previous delivery arrived (its send time for the first): the tokens
    # were produced in (after, t], which a burst makes long; the chunks of one delivery (one
    # read, within ONE_DELIVERY_S of each other) share it
    after: float | None = None


@dataclass(frozen=True)
class Delivered:
    """What the client received, reduced to what reconciliation needs."""

    arrivals: list[Arrival]
    spans: list[tuple[float, float, float, float]]  # per request: sent, first token, last token, end
    tokens: int
    chunks: int
    requests: int
    sources: list[str]
    exact: bool
    # the protocol's headline: mean decode rate of one workload's measured requests (the
    # fastest workload, named: never an average over workloads)
    decode_mean: float | None
    decode_workload: str | None = None
    decode_n: int = 0
    decode_by_workload: dict[str, float] = field(default_factory=dict)


def delivered_from_records(records: list[dict]) -> Delivered:
    """Token arrivals of every request record (warm-ups included: the server served them)."""
    arrivals: list[Arrival] = []
    spans = []
    tokens = chunks = 0
    sources = set()
    exact = True
    decode: dict[str, list[float]] = {}
    for index, record in enumerate(r for r in records if r.get("type", "request") == "request"):
        sent = record.get("sent_unix")
        if not isinstance(sent, (int, float)):
            continue
        account = token_account(record)
        metrics = derive(record)
        sources.add(account.source)
        exact = exact and account.exact_timing
        times = [c.get("t") for c in record.get("chunks") or []]
        carrying = [(sent + t, n) for t, n in zip(times, account.per_chunk)
                    if n > 0 and isinstance(t, (int, float))]
        after, previous = sent, None
        for t, n in carrying:
            if previous is not None and t - previous > ONE_DELIVERY_S:
                after = previous  # else the same delivery (one read) as the chunk before
            arrivals.append(Arrival(t, n, index, after))
            previous = t
        tokens += account.total
        chunks += len(carrying)
        end = record.get("t_end")
        end_t = sent + end if isinstance(end, (int, float)) else (carrying[-1][0] if carrying else sent)
        if carrying:
            spans.append((sent, carrying[0][0], carrying[-1][0], end_t))
        if not record.get("warmup") and metrics.status == "ok" and metrics.decode_tok_s:
            decode.setdefault(str(record.get("workload") or "default"), []).append(metrics.decode_tok_s)
    arrivals.sort(key=lambda a: a.t)
    means = {name: statistics.fmean(rates) for name, rates in sorted(decode.items())}
    fastest = max(means, key=means.get) if means else None
    return Delivered(arrivals, spans, tokens, chunks, len(spans), sorted(sources), exact,
                     means.get(fastest) if fastest else None, fastest,
                     len(decode[fastest]) if fastest else 0,
                     {name: round(mean, 3) for name, mean in means.items()})


def _at_edge(a: Arrival, edge: float, edge_s: float) -> bool:
    """Whether a chunk's tokens may belong on either side of a window edge: it arrived within
    the stamps' uncertainty of it, or its request's previous delivery arrived before the edge
    and it after (a burst: the tokens it carries were produced somewhere in between)."""
    return abs(a.t - edge) <= edge_s or (a.after is not None and a.after < edge < a.t)


def _overlap(a0: float, a1: float, b0: float, b1: float) -> float:
    return max(0.0, min(a1, b1) - max(a0, b0))


def _window_row(w: StatsWindow, d: Delivered, protocol: list[tuple[float, float]],
                edge_s: float) -> dict:
    start, end = w.start, w.t
    length = max(end - start, 1e-9)
    # After hidden idle windows the start is estimated (end - interval); the real window is at
    # least that long and the hidden windows before it carried no tokens, so arrivals up to
    # half an interval earlier belong to it, and its length is uncertain by as much.
    slack = 0.5 * length if w.start_estimated else 0.0
    got = [a for a in d.arrivals if start - slack < a.t <= end]
    delivered = sum(a.tokens for a in got)
    logged = w.generation * length
    busy = sum(_overlap(first, last, start, end) for _, first, last, _ in d.spans)
    in_flight = sum(_overlap(sent, stop, start, end) for sent, _, _, stop in d.spans)
    inside = sum(_overlap(p0, p1, start, end) for p0, p1 in protocol)
    edge_tokens = [a.tokens for a in d.arrivals
                   if _at_edge(a, start, edge_s) or _at_edge(a, end, edge_s)]
    tolerance = sum(edge_tokens) + 0.05 * length + 2 + w.generation * slack
    row = {
        "start": start, "end": end, "seconds": round(length, 3), "engine": w.engine,
        "logged_tok_s": w.generation, "logged_tokens": round(logged, 1),
        "delivered_tokens": delivered, "delivered_tok_s": round(delivered / length, 3),
        "difference_tokens": round(logged - delivered, 1), "tolerance_tokens": round(tolerance, 1),
        "decode_busy_fraction": round(min(1.0, busy / length), 3),
        "in_flight_fraction": round(min(1.0, in_flight / length), 3),
        "inside_protocol_fraction": round(min(1.0, inside / length), 3),
        "running": w.parts.get("running"), "start_estimated": w.start_estimated, "reasons": [],
    }
    if w.start_estimated:
        row["reasons"].append("the stats line before this window was hidden (idle), so its start "
                              "is estimated and its length uncertain by half an interval")
    if inside <= 0:
        row["verdict"] = "outside"
    elif logged - delivered > tolerance:
        row["verdict"] = "log_counts_undelivered"
        row["reasons"].append(f"the log counts {logged - delivered:.0f} tokens more than arrived "
                              f"in this window")
    elif delivered - logged > tolerance:
        row["verdict"] = "client_received_more"
        row["reasons"].append(f"{delivered - logged:.0f} more tokens arrived than the log counts "
                              "(clock offset or a window boundary)")
    else:
        row["verdict"] = "consistent"
    if inside > 0 and row["inside_protocol_fraction"] < INSIDE_FRACTION:
        row["reasons"].append("the window extends beyond the protocol window (other traffic or "
                              "idle time, and the negotiation requests, fall into it)")
    if inside > 0 and row["in_flight_fraction"] < IDLE_BUSY_FRACTION:
        row["reasons"].append(f"a request was in flight during {100 * row['in_flight_fraction']:.0f}% "
                              "of the window: idle time dilutes the logged rate")
    elif inside > 0 and row["decode_busy_fraction"] < IDLE_BUSY_FRACTION:
        row["reasons"].append(f"tokens were arriving during {100 * row['decode_busy_fraction']:.0f}% "
                              "of the window (waiting for first tokens, or tokens arriving in bursts)")
    return row


def reconcile(delivered: Delivered, metric_windows: list[dict] | None,
              log_windows: list[StatsWindow] | None, *, log_edge_s: float = 1.0,
              protocol: list[tuple[float, float]] | None = None) -> dict:
    """The reconciliation document (times as Unix seconds; the caller formats them)."""
    protocol = protocol or ([(min(s for s, *_ in delivered.spans), max(e for *_, e in delivered.spans))]
                            if delivered.spans else [])
    reasons: list[dict] = []
    verdicts: list[str] = []

    def reason(sentence: Sentence) -> None:
        reasons.append(sentence.as_dict())

    per_chunk = delivered.tokens / delivered.chunks if delivered.chunks else None
    metrics = _metrics_part(metric_windows, delivered, reason, verdicts)
    log = None
    if log_windows is not None:
        rows = [_window_row(w, delivered, protocol, log_edge_s) for w in log_windows
                if w.start is not None]
        rows = [r for r in rows if r["verdict"] != "outside"]
        log = _log_part(rows, delivered, reason, verdicts)
    if per_chunk is not None and per_chunk > 1.05:
        reason(say("multi_token_chunks",
                   "{tokens} tokens arrived in {chunks} chunks, {per_chunk:.2f} tokens per chunk: a "
                   "benchmark that counts chunks would report {share:.0%} of the real token rate",
                   tokens=delivered.tokens, chunks=delivered.chunks, per_chunk=per_chunk,
                   share=round(1 / per_chunk, 4)))
    if "chunks" in delivered.sources:
        verdicts.insert(0, "chunks_counted")
        reason(say("chunks_counted", "the server gave no per-chunk token count: the {chunks} "
                   "chunks were counted as tokens, which undercounts multi-token chunks",
                   chunks=delivered.chunks))
    _bursts(delivered, metrics, log, reason, verdicts)
    ratio = None
    if log and log["peak_tok_s"] and delivered.decode_mean:
        ratio = round(log["peak_tok_s"] / delivered.decode_mean, 3)
        summary = {"decode_requests": delivered.decode_n, "decode_workload": delivered.decode_workload,
                   "decode_tok_s_mean": delivered.decode_mean,
                   "tokens_per_chunk": per_chunk, "token_sources": delivered.sources}
        for sentence in peak_sentences(log, summary, metrics):
            reason(sentence)
    verdict = next((v for v in VERDICTS if v in verdicts), None)
    if verdict is None:
        verdict = "consistent" if _has_evidence(metrics, log) else "not_measured"
    if verdict == "not_measured":
        reason(_not_measured(metric_windows, log_windows))
    return {
        "kind": "reconcile",
        "verdict": verdict,
        "reasons": reasons,
        "protocol_windows": [{"start": a, "end": b} for a, b in protocol],
        "delivered": {"requests": delivered.requests, "tokens": delivered.tokens,
                      "chunks": delivered.chunks, "tokens_per_chunk": per_chunk,
                      "token_sources": delivered.sources, "exact_timing": delivered.exact,
                      "decode_tok_s_mean": delivered.decode_mean,
                      "decode_workload": delivered.decode_workload,
                      "decode_requests": delivered.decode_n,
                      "decode_tok_s_by_workload": delivered.decode_by_workload},
        "metrics": metrics,
        "log": log,
        "ratio_log_peak_to_delivered_mean": ratio,
    }


def _has_evidence(metrics: dict | None, log: dict | None) -> bool:
    """A verdict needs something on the server's side: a usable counter delta or a log window
    that overlaps the protocol window. Without either there is nothing to be consistent with."""
    counted = metrics is not None and metrics.get("generation_tokens") is not None
    logged = log is not None and bool(log.get("windows"))
    return counted or logged


def _not_measured(metric_windows: list[dict] | None, log_windows: list | None) -> Sentence:
    failed = sum(1 for w in metric_windows or [] if w.get("error"))
    if not metric_windows:
        scrapes = "no /metrics scrape was taken"
    else:
        errors = sorted({str(w.get("error")) for w in metric_windows if w.get("error")})
        scrapes = ("every /metrics scrape failed (" + "; ".join(errors) + ")" if errors and
                   all(w.get("error") for w in metric_windows)
                   else "the /metrics scrapes had no generation-token counter")
    log = "no server log was given" if log_windows is None else "the log had no stats window"
    counted = " ({failed} of {windows} workload windows)" if metric_windows else ""
    return say("not_measured",
               "not measured: {scrapes}" + counted + " and {log}, so nothing on the server's side "
               "can be compared with the tokens delivered (give --log FILE, or a reachable "
               "--metrics URL)", scrapes=scrapes, log=log, windows=len(metric_windows or []),
               failed=failed)


def _bursts(delivered: Delivered, metrics: dict | None, log: dict | None, reason, verdicts) -> None:
    """A single stream cannot receive tokens faster than the server makes them: when the
    client's decode rate is far above the server's, the stream arrived in bursts (a loaded
    client or a buffering proxy), and the server-side rates are the ones to believe."""
    if not delivered.decode_mean:
        return
    server = (metrics or {}).get("server_decode_tok_s")
    # without metrics: the log's tokens over the time requests were in flight (no idle dilution)
    flying = [r["logged_tokens"] / (r["in_flight_fraction"] * r["seconds"])
              for r in (log or {}).get("windows", []) if r["in_flight_fraction"] >= 0.2]
    peak = max(flying) if flying else None
    ceiling = server if server else peak
    if ceiling and delivered.decode_mean > BURST_FACTOR * ceiling:
        verdicts.append("bursty_delivery")
        source = ("the server's own per-request decode rate" if server
                  else "the log's rate while requests were in flight")
        reason(say("bursty_delivery", "clients measured {mean:.1f} tok/s per request, "
                   "{factor:.1f}x {source} {ceiling:.1f} tok/s: tokens reached the client in "
                   "bursts (a loaded client or a buffering proxy), so the per-request decode rate "
                   "overstates the server; believe the server-side rates here",
                   mean=delivered.decode_mean, factor=round(delivered.decode_mean / ceiling, 3),
                   source=source, ceiling=ceiling))


def _metrics_part(windows: list[dict] | None, delivered: Delivered, reason, verdicts) -> dict | None:
    if not windows:
        return None
    usable = [w for w in windows if w.get("generation_tokens") is not None]
    if not usable and all(w.get("error") for w in windows):
        reason(say("metrics_failed", "all {windows} /metrics windows failed: {errors}",
                   windows=len(windows),
                   errors="; ".join(sorted({str(w['error']) for w in windows}))))
        return {"windows": windows, "generation_tokens": None}
    if not usable:
        reason(say("metrics_missing", "the {windows} /metrics windows had no "
                   "vllm:generation_tokens_total (stats disabled with --disable-log-stats, or not "
                   "a vLLM server)", windows=len(windows)))
        return {"windows": windows, "generation_tokens": None}
    generated = sum(w["generation_tokens"] for w in usable)
    received = sum(w["delivered_tokens"] for w in usable)
    diff = generated - received
    aborted = sum(w.get("requests_finished", {}).get("abort", 0) for w in usable)
    if any(w.get("reset") for w in usable):
        reason(say("counter_reset", "a counter went down between scrapes in {resets} window(s): "
                   "the server restarted", resets=sum(1 for w in usable if w.get("reset"))))
    if diff == 0:
        reason(say("metrics_match", "the server's generation-token counter rose by "
                   "{generated:.0f} over the protocol windows: exactly the {delivered} tokens "
                   "delivered", generated=generated, delivered=received))
    elif diff > 0:
        verdicts.append("client_received_fewer")
        extra = "; {aborted:.0f} requests were aborted" if aborted else ""
        reason(say("client_received_fewer", "the server generated {generated:.0f} tokens but "
                   "clients received {delivered}: {difference:.0f} never arrived (aborted or "
                   "dropped requests, or another client using the server)" + extra,
                   generated=generated, delivered=received, difference=diff,
                   **({"aborted": aborted} if aborted else {})))
    else:
        verdicts.append("client_counted_more")
        reason(say("client_counted_more", "clients counted {delivered} tokens but the server "
                   "generated {generated:.0f}: the client's count is wrong or a counter was reset",
                   delivered=received, generated=generated))
    spec = [w["spec_decode"] for w in usable if w.get("spec_decode")]
    tpot = [w["histograms"].get("vllm:request_time_per_output_token_seconds")
            for w in usable if w.get("histograms")]
    tpot = [h for h in tpot if h and h.get("count")]
    server = None
    if tpot:
        seconds = sum(h["sum"] for h in tpot) / sum(h["count"] for h in tpot)
        server = round(1 / seconds, 3) if seconds > 0 else None
    return {"windows": windows, "generation_tokens": generated, "delivered_tokens": received,
            "difference_tokens": diff, "server_decode_tok_s": server,
            "spec_decode": _sum_spec(spec)}


def _sum_spec(parts: list[dict]) -> dict | None:
    if not parts:
        return None
    drafts = sum(p["drafts"] for p in parts)
    drafted = sum(p["draft_tokens"] for p in parts)
    accepted = sum(p["accepted_tokens"] for p in parts)
    return {"drafts": drafts, "draft_tokens": drafted, "accepted_tokens": accepted,
            "mean_acceptance_length": round(1 + accepted / drafts, 4) if drafts else None,
            "acceptance_rate": round(accepted / drafted, 4) if drafted else None}


def _log_part(rows: list[dict], delivered: Delivered, reason, verdicts) -> dict:
    if not rows:
        reason(say("no_overlap", "none of the log's stats windows overlaps the protocol window "
                   "(stats lines hidden at DEBUG, --disable-log-stats, or a clock/time-zone "
                   "mismatch)"))
        verdicts.append("no_overlap")
        return {"windows": [], "peak_tok_s": None, "mean_tok_s": None}
    full = [r for r in rows if r["inside_protocol_fraction"] >= INSIDE_FRACTION]
    judged = full or rows
    over = [r for r in judged if r["verdict"] == "log_counts_undelivered"]
    if over:
        verdicts.append("log_counts_undelivered")
        reason(say("log_counts_undelivered", "in {over} of {judged} windows the log counts more "
                   "tokens than arrived in them ({difference:.0f} in all)", over=len(over),
                   judged=len(judged),
                   difference=round(sum(r["difference_tokens"] for r in over), 1)))
    rates = [r["logged_tok_s"] for r in rows]
    mean = statistics.fmean(rates)
    judged_mean = statistics.fmean(r["logged_tok_s"] for r in judged)
    busy = statistics.fmean(r["decode_busy_fraction"] for r in judged)
    flight = statistics.fmean(r["in_flight_fraction"] for r in judged)
    if delivered.decode_mean and judged_mean < (1 - RATE_TOLERANCE) * delivered.decode_mean and \
            busy < IDLE_BUSY_FRACTION:
        verdicts.append("idle_in_log_windows")
        what = "idle time between requests" if flight < IDLE_BUSY_FRACTION else \
            "time before first tokens (prefill, queueing) or between bursts"
        reason(say("idle_in_log_windows", "the log's windows include {what}: requests were in "
                   "flight during {in_flight:.0%} and tokens arriving during {busy:.0%} of them, "
                   "so the logged mean {logged_mean:.1f} tok/s is below the delivered decode rate "
                   "{mean:.1f} tok/s", what=what, in_flight=round(flight, 3), busy=round(busy, 3),
                   logged_mean=judged_mean, mean=delivered.decode_mean))
    consistent = sum(1 for r in judged if r["verdict"] == "consistent")
    where = "inside the protocol window" if full else "overlapping the protocol window"
    reason(say("log_windows", "{consistent} of {judged} log windows {where} agree with the "
               "tokens that arrived in them", consistent=consistent, judged=len(judged),
               where=where))
    return {"windows": rows, "peak_tok_s": max(rates), "mean_tok_s": round(mean, 3),
            "mean_tok_s_inside": round(judged_mean, 3), "windows_inside": len(full),
            "mean_decode_busy_fraction": round(busy, 3),
            "mean_in_flight_fraction": round(flight, 3)}


__all__ = ["Arrival", "Delivered", "delivered_from_records", "reconcile", "VERDICTS"]
