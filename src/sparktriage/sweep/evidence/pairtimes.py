"""A launch's step with two streams against its step with one (sweep.running.pair_phase's records).

With one stream every engine step sends one chunk, so the mean gap between the chunks of the
protocol's measured requests is the launch's mean step time t₁. In the two-stream phase both
requests of a pair are served by the same steps: while both are open, the gap between one
stream's chunks is the time of a step that verifies both sequences, t₂. Their ratio
π = t₂ / t₁ is measured inside one launch (the launch's spread scales both and cancels), and
under the step-cost curve (sweep.model.stepfit) it is (1 + s·g₂(k)) / (1 + s·g(k)), g₂ the cost of
verifying k + 1 tokens of each of two sequences (sweep.model.ratiofit, kind "pair").

Only the gaps while both streams of a pair were open count (a stream that finishes first leaves
the other alone). Standard error: each phase's gap spread over its count (the pair's steps once,
not once per stream), with the floor of sweep.evidence.steptimes.

Not measured (`StepRatio.reason`) at a depth ≥ 1 whose drafter left plain steps (ngram finding
no match): t₁ then mixes plain and verify steps in the launch's own shares, the pair's steps in
others, and the verify ratio of sweep.evidence.steptimes measures that launch directly. Nor when the
phase did not run, when too few steps of either kind arrived, when chunks were coalesced, or when
the stream carries no exact per-chunk token count.
"""

from __future__ import annotations

import itertools
import math
from pathlib import Path

from sparktriage.bench.records import token_account
from sparktriage.errors import SparktriageError
from sparktriage.store.documents import read_records
from sparktriage.sweep.evidence.counts import from_acceptance
from sparktriage.sweep.running.pair_phase import FILE
from sparktriage.sweep.evidence.steptimes import (FLOOR, MAX_COALESCED, MAX_RECORDS, MIN_PLAIN_SHARE,
                                         MIN_STEPS, StepRatio, moments)


def _chunk_times(record: dict) -> list[float] | None:
    """Absolute times of the token-carrying chunks after the first (None when not exact)."""
    tokens = token_account(record)
    if not tokens.exact_timing:
        return None
    start = record.get("sent_unix")
    if not isinstance(start, (int, float)):
        return None
    times = [float(start) + float(c["t"]) for c, n in zip(record.get("chunks") or [], tokens.per_chunk)
             if n > 0 and isinstance(c, dict) and isinstance(c.get("t"), (int, float))]
    return times


EDGE_S = 1e-6  # two streams' chunk times agree to the clock's rounding, not exactly


def _gaps(times: list[float], low: float = -math.inf, high: float = math.inf) -> list[float]:
    return [b - a for a, b in zip(times, times[1:]) if a >= low - EDGE_S and b <= high + EDGE_S]


def _one_stream(records: list[dict], workload: str) -> tuple[list[float], bool]:
    """The gaps of the protocol's measured ok requests of `workload`; whether any was exact."""
    out: list[float] = []
    exact = False
    for record in records:
        if (record.get("type", "request") != "request" or record.get("workload") != workload
                or record.get("warmup") or record.get("status") != "ok"):
            continue
        times = _chunk_times(record)
        if times is None:
            continue
        exact = True
        out.extend(_gaps(times))
    return out, exact


def _two_streams(records: list[dict]) -> tuple[list[float], int]:
    """The gaps of each ok pair's streams while both were open; the count of distinct steps."""
    by_pair: dict[int, dict[int, list[float]]] = {}
    for record in records:
        if record.get("phase") != "pair" or record.get("status") != "ok":
            continue
        times = _chunk_times(record)
        if times and isinstance(record.get("pair"), int) and record.get("stream") in (0, 1):
            by_pair.setdefault(record["pair"], {})[record["stream"]] = times
    gaps: list[float] = []
    steps = 0
    for streams in by_pair.values():
        if len(streams) != 2:
            continue
        low = max(t[0] for t in streams.values())
        high = min(t[-1] for t in streams.values())
        pair = [_gaps(t, low, high) for t in streams.values()]
        gaps.extend(pair[0] + pair[1])
        steps += min(len(p) for p in pair)
    return gaps, steps


def measure(depth: int, requests: list[dict], pairs: list[dict], workload: str) -> StepRatio:
    """π of one launch from its protocol records and its pair records (module doc)."""
    one, exact = _one_stream(requests, workload)
    two, steps = _two_streams(pairs)
    # StepRatio's fields: verify_* carry the two-stream step, plain_* and one_token_chunks the
    # one-stream one (as_dict names them so)
    figures = dict(verify_chunks=steps, one_token_chunks=len(one))
    if not exact:
        return StepRatio(depth, None, None, reason="the stream carries no exact per-chunk token "
                         "count (token ids, logprobs or continuous usage): chunks are not known "
                         "to be steps", **figures)
    zero = sum(1 for g in one + two if g <= 0)
    if one + two and zero / len(one + two) > MAX_COALESCED:
        return StepRatio(depth, None, None, reason=f"{zero} of {len(one + two)} chunks arrived in "
                         "the same read as the one before (steps coalesced): the gaps are not "
                         "step times", **figures)
    one, two = [g for g in one if g > 0], [g for g in two if g > 0]
    if len(one) < MIN_STEPS or steps < MIN_STEPS:
        return StepRatio(depth, None, None, reason=f"too few steps ({len(one)} with one stream, "
                         f"{steps} with two open; {MIN_STEPS} each needed)", **figures)
    mean_1, var_1 = moments(one)
    mean_2, var_2 = moments(two)
    var = var_1 / (mean_1 * mean_1 * len(one)) + var_2 / (mean_2 * mean_2 * steps)
    return StepRatio(depth, math.log(mean_2 / mean_1), math.sqrt(var + FLOOR * FLOOR), mean_2,
                     mean_1, **figures)


def as_dict(ratio: StepRatio) -> dict:
    """A launch record's `pair_ratio` (read back by sweep.evidence.steptimes.from_dict)."""
    return {"depth": ratio.depth, "measured": ratio.measured,
            "ratio": None if ratio.log_ratio is None else round(math.exp(ratio.log_ratio), 5),
            "log_ratio": ratio.log_ratio, "log_sd": ratio.log_sd,
            "two_stream_step_ms": None if ratio.verify_s is None else round(ratio.verify_s * 1e3, 4),
            "one_stream_step_ms": None if ratio.plain_s is None else round(ratio.plain_s * 1e3, 4),
            "two_stream_steps": ratio.verify_chunks, "one_stream_gaps": ratio.one_token_chunks,
            "reason": ratio.reason}


def from_launch(path: Path, depth: int, workload: str, acceptance: dict | None) -> StepRatio | None:
    """The launch folder's π (None when it ran no two-stream phase)."""
    if not (path / FILE).exists():
        return None
    if depth:
        counts = from_acceptance(depth, acceptance)
        if counts is None or counts.steps is None:
            return StepRatio(depth, None, None, reason="no acceptance counts with a step count (no "
                             "generated-token count, no exact chunk counts): whether the drafter "
                             "drafted at every step is not known")
        if 1.0 - counts.drafted_share >= MIN_PLAIN_SHARE:
            return StepRatio(depth, None, None, reason=f"the drafter proposed at "
                             f"{counts.drafted_share:.0%} of steps: the one-stream step mixes plain "
                             "and verify steps (the verify ratio measures this launch)")
    try:
        requests = list(itertools.islice(read_records(path / "requests.jsonl"), MAX_RECORDS))
        pairs = list(itertools.islice(read_records(path / FILE), MAX_RECORDS))
    except SparktriageError as exc:
        return StepRatio(depth, None, None, reason=f"{exc}")
    return measure(depth, requests, pairs, workload)
