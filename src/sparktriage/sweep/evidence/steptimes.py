"""Step times measured inside one launch: the cost of a verify step against a plain step.

With one stream every engine step sends one chunk, and the gap before a chunk is that step's time
as the client sees it. With ngram (and any drafter that sometimes proposes nothing) one launch at
depth k runs two kinds of steps:

* plain steps (the drafter found no match): width 1, one token;
* verify steps of width k + 1: 1 + (accepted drafts) tokens.

A chunk of two tokens or more is a verify step that accepted something; a one-token chunk is a
plain step or a verify step that accepted nothing, in shares the launch's counts give (q the
drafted share, a₁ the unconditional rate of position 1: plain 1 − q, empty verify q·(1 − a₁)).
So the verify step's time t_v is the mean gap before multi-token chunks, the plain step's
t_p = (m₁·(1 − q·a₁) − q·(1 − a₁)·t_v) / (1 − q) with m₁ the mean gap before one-token chunks,
and their ratio ρ = t_v / t_p is the step cost at depth k relative to a plain step, measured
inside one launch: the launch-to-launch spread (this launch's nodes, placement, clocks) scales
both and cancels. Its standard error: the delta method over the two groups' means, each with its
steps' own jitter (the one-token chunks' spread less the part their known mix of plain and empty
verify steps explains, never under a quarter of it), with a floor (`FLOOR`: context-length and
scheduling effects the groups do not share).

Not measured (`StepRatio.reason` says why) when the drafter always proposes (q near 1: no plain
step to compare with, as with MTP or EAGLE), when too few steps of either kind arrived, when
chunks were coalesced (several steps in one read: gaps of zero), or when the chunks disagree
with the counts (the multi-token share off the counted q·a₁).
"""

from __future__ import annotations

import itertools
import math
from dataclasses import dataclass
from pathlib import Path

from sparktriage.bench.records import token_account
from sparktriage.errors import SparktriageError
from sparktriage.store.documents import read_records
from sparktriage.sweep.evidence.counts import from_acceptance

FLOOR = 0.01  # sd of log ρ that no number of steps removes
MIN_PLAIN_SHARE = 0.05  # 1 − q below this: too few plain steps to compare with
MIN_STEPS = 30  # steps of each kind (plain estimated from the counts' shares)
MAX_COALESCED = 0.05  # share of gaps of zero (steps read together) beyond which gaps are not steps
SHARE_TOLERANCE = 0.25  # relative disagreement of the multi-token share with q·a₁
MAX_RECORDS = 100_000  # request records read from one launch


@dataclass(frozen=True)
class StepRatio:
    """ρ = verify step / plain step of one launch (log and its sd), or why it is not measured."""

    depth: int
    log_ratio: float | None
    log_sd: float | None
    verify_s: float | None = None
    plain_s: float | None = None
    verify_chunks: int = 0
    one_token_chunks: int = 0
    reason: str | None = None

    @property
    def measured(self) -> bool:
        return self.log_ratio is not None and self.log_sd is not None

    def as_dict(self) -> dict:
        return {"depth": self.depth, "measured": self.measured,
                "ratio": None if self.log_ratio is None else round(math.exp(self.log_ratio), 5),
                "log_ratio": self.log_ratio,
                "log_sd": self.log_sd,
                "verify_step_ms": None if self.verify_s is None else round(self.verify_s * 1e3, 4),
                "plain_step_ms": None if self.plain_s is None else round(self.plain_s * 1e3, 4),
                "verify_chunks": self.verify_chunks, "one_token_chunks": self.one_token_chunks,
                "reason": self.reason}


def from_dict(found: object) -> "StepRatio | None":
    """The ratio of a launch record's `step_ratio` (None when absent or malformed)."""
    if not isinstance(found, dict) or not isinstance(found.get("depth"), int):
        return None
    log_ratio, log_sd = found.get("log_ratio"), found.get("log_sd")
    ok = (isinstance(log_ratio, (int, float)) and isinstance(log_sd, (int, float))
          and math.isfinite(log_ratio) and math.isfinite(log_sd) and log_sd > 0)
    return StepRatio(found["depth"], float(log_ratio) if ok else None,  # type: ignore[arg-type]
                     float(log_sd) if ok else None,  # type: ignore[arg-type]
                     reason=None if ok else str(found.get("reason") or "not measured"))


def moments(values: list[float]) -> tuple[float, float]:
    mean = sum(values) / len(values)
    var = sum((v - mean) ** 2 for v in values) / (len(values) - 1) if len(values) > 1 else 0.0
    return mean, var


def from_groups(depth: int, verify: tuple[float, float, int], single: tuple[float, float, int],
                drafted_share: float, rate_1: float) -> StepRatio:
    """ρ from the two groups' (mean gap, variance, count) and the counts' q and a₁ (module doc)."""
    mean_v, var_v, n_v = verify
    mean_1, var_1, n_1 = single
    figures = dict(verify_chunks=n_v, one_token_chunks=n_1)
    plain = 1.0 - drafted_share
    empty = drafted_share * (1.0 - rate_1)
    if plain < MIN_PLAIN_SHARE:
        return StepRatio(depth, None, None, reason=f"the drafter proposed at {drafted_share:.0%} of "
                         "steps: too few plain steps to compare a verify step with", **figures)
    plain_steps = (n_v + n_1) * plain
    if n_v < MIN_STEPS or plain_steps < MIN_STEPS:
        return StepRatio(depth, None, None, reason=f"too few steps of one kind ({n_v} verify chunks "
                         f"with accepted drafts, about {plain_steps:.0f} plain steps; "
                         f"{MIN_STEPS} each needed)", **figures)
    expected = drafted_share * rate_1
    observed = n_v / (n_v + n_1)
    if expected <= 0 or abs(observed - expected) > SHARE_TOLERANCE * expected:
        return StepRatio(depth, None, None, reason=f"{observed:.1%} of chunks carried accepted drafts "
                         f"where the counts say {expected:.1%}: the chunks are not one per step "
                         "or not from the counted window", **figures)
    t_v = mean_v
    t_p = (mean_1 * (plain + empty) - empty * t_v) / plain
    if t_v <= 0 or t_p <= 0:
        return StepRatio(depth, None, None, reason="the one-token chunks' gaps leave no positive "
                         "plain step time", **figures)
    # the one-token chunks' mix of plain and empty verify steps is the counts' (not sampled):
    # what their mean carries is each step's own jitter, their spread less the mix's part
    w = empty / (plain + empty)
    within_1 = max(var_1 - w * (1.0 - w) * (t_v - t_p) ** 2, 0.25 * var_1)
    d_v = 1.0 / t_v + empty / (plain * t_p)
    d_1 = (plain + empty) / (plain * t_p)
    var = d_v * d_v * var_v / n_v + d_1 * d_1 * within_1 / max(1, n_1)
    return StepRatio(depth, math.log(t_v / t_p), math.sqrt(var + FLOOR * FLOOR), t_v, t_p,
                     **figures)


def gaps(records: list[dict], workload: str) -> tuple[list[float], list[float], int, int, int]:
    """The gaps before multi-token and one-token chunks of the measured ok requests of
    `workload` (after each request's first read), how many gaps were zero, of how many, and
    how many requests were left out because their per-chunk token counts are not exact."""
    multi: list[float] = []
    single: list[float] = []
    zero = total = inexact = 0
    for record in records:
        if (record.get("type", "request") != "request" or record.get("workload") != workload
                or record.get("warmup") or record.get("status") != "ok"):
            continue
        chunks = record.get("chunks") or []
        tokens = token_account(record)
        if not tokens.exact_timing:
            inexact += 1
            continue
        carrying = [(c.get("t"), n) for c, n in zip(chunks, tokens.per_chunk)
                    if n > 0 and isinstance(c, dict)]
        carrying = [(t, n) for t, n in carrying if isinstance(t, (int, float))]
        for (before, _), (t, n) in zip(carrying, carrying[1:]):
            gap = float(t) - float(before)
            total += 1
            if gap <= 0:
                zero += 1
                continue
            (multi if n >= 2 else single).append(gap)
    return multi, single, zero, total, inexact


def measure(depth: int, records: list[dict], workload: str, drafted_share: float,
            rate_1: float) -> StepRatio:
    """One launch's ρ at `depth` from its raw request records and its counts' q and a₁."""
    multi, single, zero, total, inexact = gaps(records, workload)
    if inexact and not total:
        return StepRatio(depth, None, None, reason="the stream carries no exact per-chunk token "
                         "count (token ids, logprobs or continuous usage): a chunk's tokens, and so "
                         "its kind of step, are not known")
    if total and zero / total > MAX_COALESCED:
        return StepRatio(depth, None, None, reason=f"{zero} of {total} chunks arrived in the same "
                         "read as the one before (steps coalesced): the gaps are not step times",
                         verify_chunks=len(multi), one_token_chunks=len(single))
    if not multi or not single:
        return StepRatio(depth, None, None, reason="no gaps before chunks of both kinds",
                         verify_chunks=len(multi), one_token_chunks=len(single))
    mean_v, var_v = moments(multi)
    mean_1, var_1 = moments(single)
    return from_groups(depth, (mean_v, var_v, len(multi)), (mean_1, var_1, len(single)),
                       drafted_share, rate_1)


def from_launch(path: Path, depth: int, workload: str, acceptance: dict | None) -> StepRatio | None:
    """The ratio of one launch folder (its requests.jsonl and its acceptance counts); None at
    depth 0 or without counts."""
    counts = from_acceptance(depth, acceptance) if depth else None
    if counts is None:
        return None
    if counts.steps is None:
        return StepRatio(depth, None, None, reason="no step count with the acceptance counts (no "
                         "generated-token count, no exact chunk counts): the share of drafting "
                         "steps is not known")
    try:
        records = list(itertools.islice(read_records(path / "requests.jsonl"), MAX_RECORDS))
    except SparktriageError as exc:
        return StepRatio(depth, None, None, reason=f"requests.jsonl: {exc}")
    return measure(depth, records, workload, counts.drafted_share, counts.rate(1))
