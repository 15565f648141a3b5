"""Simulated launches of a speculative sweep with acceptance counts and a step cost (bench_sweep.py).

A scenario is physics, not five rates: per-position acceptance (unconditional, vLLM's rate_i)
of the drafter, a step cost step(k) = t0 · (1 + s · g(k)) with g the Kimi K2 expert union
(384 experts, top-8), and switches that make the depth model wrong on purpose: a kernel-path jump
of the step time from some depth on, per-depth step factors (a slow path at one width: the step
time falls with depth), acceptance that changes with k (the drafter's guesses depend on the
depth), and short drafts (a share of drafts proposes fewer tokens than the depth).

A sweep's prompt (`SweepDraw`) gets one acceptance sample per depth (greedy: every launch of a
depth drafts the same); one launch at depth k then delivers base · TPS_k / step(k) times
(1 + ε), ε ~ N(0, 6.5%) (the seed's launch spread), plus the noise of a 15-request mean (sd 1.5
tok/s per request), as bench_sweep's black-box scenarios.

Routing reuse (issue 38): `reuse` is the share of a token's routed experts that the previous
token of the same sequence already picked (roofline.experts' correlation): the true verify step
reads U(1 + k(1 − reuse)) experts while the model's profile (Kimi K2) assumes independent
routing; the model fits reuse from the ratios measured inside launches. `batched`: one engine
step verifies every running sequence together, each at its own draft length (with ngram the two
sequences of a pair find a match independently), its cost the dense part (1, plus `dense` per
extra verified token) and the routed experts' union over every token of every sequence.

Evidence (`evidence`): "metrics" gives the counts as /metrics does, the generated tokens G
included, so S = G − A; "log" gives them as the log's SpecDecoding lines do (drafts from the
mean acceptance length printed to 2 decimals, per-position rates to 3, no G), beside the
stream's tokens per chunk: what the sweep's evidence (sweep.evidence.acceptance) makes of that is
the launch's counts, and the step and pair ratios are measured or refused on those counts as
sweep.evidence.steptimes and sweep.evidence.pairtimes do, while the steps themselves follow the
physics.
"""

from __future__ import annotations

import math
import sys
from dataclasses import dataclass, field, replace
from pathlib import Path

import numpy as np

sys.path.insert(0, str(Path(__file__).resolve().parents[1] / "src"))

from sparktriage.roofline import experts as expert_union  # noqa: E402
from sparktriage.sweep.evidence import acceptance, steptimes  # noqa: E402
from sparktriage.sweep.evidence.counts import Counts, from_acceptance  # noqa: E402
from sparktriage.sweep.evidence.steptimes import StepRatio  # noqa: E402
from sparktriage.sweep.model.stepfit import StepShape  # noqa: E402

CV = 0.065
STEP_CV = 0.15
WITHIN_SD = 1.5
REQUESTS = 15
PAIRS = 2  # pairs of concurrent requests in a launch's two-stream phase
TOKENS = 256
SHAPE = StepShape("expert-union", 384, 8, 0.0, "kimi-k2")


@dataclass(frozen=True)
class Physics:
    """One scenario (see module doc). `rates` are the drafter's at the deepest depth."""

    base: float  # depth-0 rate, tok/s
    rates: tuple[float, ...]  # unconditional per-position acceptance s_1..s_K
    slope: float
    jump: tuple[int, float] | None = None  # (from depth, factor on the step time)
    step_factor: dict = field(default_factory=dict)  # depth -> factor on the step time
    shallow: float = 1.0  # rates at depth k are rates × shallow^(K − k)
    short_share: float = 0.0  # share of drafts that come short ...
    short_length: int = 1  # ... proposing this many tokens
    match: float = 1.0  # q: share of steps that draft (ngram found a match); rates are per draft
    step_cv: float = STEP_CV  # sd of one step's time inside a launch, relative
    jump_by_draft: bool = False  # the jump follows each sequence's draft length, not the batch width
    reuse: float = 0.0  # true routing reuse within a sequence (the model's profile says 0)
    dense: float = 0.0  # dense cost of each extra verified token, share of a plain step
    batched: bool = False  # pair steps: each sequence drafts on its own (see module doc)
    evidence: str = "metrics"  # or "log": the counts the sweep reads (module doc)

    @property
    def depths(self) -> tuple[int, ...]:
        return tuple(range(len(self.rates) + 1))

    def rates_at(self, k: int) -> list[float]:
        factor = self.shallow ** (len(self.rates) - k)
        return [min(1.0, r * factor) for r in self.rates[:k]]

    def lengths(self, k: int) -> list[tuple[float, int]]:
        """(share of drafts, draft length) at depth k."""
        if not k:
            return []
        if self.short_share and self.short_length < k:
            return [(1.0 - self.short_share, k), (self.short_share, self.short_length)]
        return [(1.0, k)]

    def h(self, width_depth: int) -> float:
        return self.batch((width_depth,), jumps=False)

    def batch(self, lengths: tuple[int, ...], jumps: bool = True) -> float:
        """One engine step verifying a draft of each length (one per sequence) relative to a
        plain step of one: 1 + dense · (width − 1) + slope · (U(Σ (1 + l(1 − reuse))) / U(1) − 1),
        sequences routing independently of each other; with `jumps`, a kernel-path jump and a
        width's factor by the batch's width (or, `jump_by_draft`, the longest draft)."""
        width = sum(l + 1 for l in lengths)
        effective = sum(1.0 + l * (1.0 - self.reuse) for l in lengths)
        union = expert_union.union(SHAPE.experts, SHAPE.experts_per_token, effective) / \
            expert_union.union(SHAPE.experts, SHAPE.experts_per_token, 1.0)
        value = 1.0 + self.dense * (width - 1) + self.slope * (union - 1.0)
        if not jumps:
            return value
        if self.jump and (max(lengths) if self.jump_by_draft else width - 1) >= self.jump[0]:
            value *= self.jump[1]
        return value * self.step_factor.get(width - 1, 1.0)

    def verify(self, k: int) -> float:
        """Mean time of a verify step at depth k relative to a plain step."""
        if not k:
            return 1.0
        value = sum(share * self.h(length) for share, length in self.lengths(k))
        if self.jump and k >= self.jump[0]:
            value *= self.jump[1]
        return value * self.step_factor.get(k, 1.0)

    def pair_verify(self, k: int) -> float:
        """Mean time of a step of two streams at depth k (each verifying k + 1 tokens, routing
        independently) relative to a plain step of one: a kernel-path jump or a width's factor
        applies by the batch's width, 2(k + 1)."""
        return self.batch((k, k))

    def pair_mean(self, k: int, q: float) -> float:
        """A two-stream step's mean at depth k, steps drafting at share q: both sequences draft
        together (the server's precomputed pair step), or, `batched`, each on its own."""
        if not self.batched:
            return (1.0 - q) * self.batch((0, 0)) + q * self.batch((k, k))
        return ((1.0 - q) ** 2 * self.batch((0, 0)) + 2.0 * q * (1.0 - q) * self.batch((k, 0))
                + q * q * self.batch((k, k)))

    def step(self, k: int) -> float:
        """Mean step time at depth k relative to a plain step (plain steps where ngram found
        no match, verify steps otherwise)."""
        return 1.0 if not k else (1.0 - self.match) + self.match * self.verify(k)

    def accepted_mean(self, k: int) -> float:
        s = self.rates_at(k)
        return sum(share * sum(s[:length]) for share, length in self.lengths(k))

    def tps(self, k: int) -> float:
        return 1.0 + self.match * self.accepted_mean(k)

    def truth(self) -> dict[int, float]:
        return {k: self.base * self.tps(k) / self.step(k) for k in self.depths}

    def launch_sd(self, k: int) -> float:
        """sd of one launch's delivered rate at depth k (the launch spread and request noise;
        the acceptance is the same at every launch of a depth)."""
        mu = self.truth()[k]
        return math.sqrt((mu * CV) ** 2 + WITHIN_SD ** 2 / REQUESTS)


class SweepDraw:
    """One simulated sweep's prompt: the acceptance each depth gets, drawn once per depth.

    The protocol repeats one greedy prompt, so every launch at depth k sees the same drafts:
    one request's D = tokens / TPS drafts, drawn as nested binomials (position i given i − 1,
    short drafts as their own share), counted over the 15 requests and the warm-up
    (`repeats` = 16). The depth's true rate is the realized one, base · TPS_k / step(k): what
    this prompt gets, and what a decision is judged against."""

    def __init__(self, physics: Physics, seed: int) -> None:
        self.physics, self.seed = physics, seed
        self._counts: dict[int, Counts] = {}
        self._seen: dict[int, Counts | None] = {}

    def counts(self, k: int) -> Counts:
        """What the server counted at depth k (the physics)."""
        if k not in self._counts:
            self._counts[k] = self._draw(k)
        return self._counts[k]

    def evidence(self, k: int) -> Counts | None:
        """The counts the sweep reads at depth k (≥ 1): the server's with /metrics; from the
        log, what sweep.evidence.acceptance derives from the log's printed figures and the stream's
        tokens per chunk (None when the log line would carry no drafts)."""
        if self.physics.evidence == "metrics":
            return self.counts(k)
        if k not in self._seen:
            self._seen[k] = self._from_log(self.counts(k))
        return self._seen[k]

    @staticmethod
    def _from_log(c: Counts) -> Counts | None:
        length = round(1.0 + c.accepted / c.drafts, 2)
        window = {"drafts_estimated": c.accepted / (length - 1.0) if length > 1.0 else None,
                  "drafted": c.draft_tokens, "accepted": c.accepted,
                  "per_position": [round(a / c.drafts, 3) for a in c.per_position]}
        found = acceptance.from_log({"spec_decode": {"windows_detail": [window]}})
        if found is None or not found.get("drafts"):
            return None
        # every request repeats one greedy prompt: the stream's tokens per chunk is G / S
        check = acceptance.cross_check(found, round(c.tokens_per_step, 4))
        # looked up, so that the same scenarios run against a tree without it (the benchmark's
        # comparison with the code that took every step to draft)
        derive = getattr(acceptance, "steps_without_g", None)
        record = {**found, "repeats": c.repeats, "check": check,
                  **(derive(found, check, "ngram") if derive else {})}
        return from_acceptance(c.depth, record)

    def _draw(self, k: int) -> Counts:
        rng = np.random.default_rng([self.seed, k, 7919])
        p = self.physics
        steps = max(1, int(round(TOKENS / p.tps(k))))
        drafts = steps if p.match >= 1.0 else max(1, int(rng.binomial(steps, p.match)))
        s = p.rates_at(k)
        per_pos = [0.0] * k
        draft_tokens, left = 0.0, drafts
        kinds = p.lengths(k)
        for index, (share, length) in enumerate(kinds):
            n = left if index == len(kinds) - 1 else int(rng.binomial(drafts, share))
            left -= n
            draft_tokens += n * length
            alive, previous = n, 1.0
            for i in range(length):
                q = 0.0 if previous <= 0 else min(1.0, s[i] / previous)
                alive = int(rng.binomial(alive, q)) if alive else 0
                per_pos[i] += alive
                previous = s[i]
        r = float(REQUESTS + 1)
        accepted = sum(per_pos)
        return Counts(k, drafts * r, draft_tokens * r, accepted * r, tuple(x * r for x in per_pos),
                      (max(steps, drafts) + accepted) * r, "simulated", r)

    def tps(self, k: int) -> float:
        return 1.0 if k == 0 else self.counts(k).tokens_per_step

    def step(self, k: int) -> float:
        """This prompt's mean step at depth k: its own share of drafting steps."""
        if not k:
            return 1.0
        q = self.counts(k).drafted_share
        return (1.0 - q) + q * self.physics.verify(k)

    def truth(self) -> dict[int, float]:
        p = self.physics
        return {k: p.base * self.tps(k) / self.step(k) for k in p.depths}

    def launch(self, rng, k: int) -> tuple[float, Counts | None]:
        """One launch at depth k: its delivered rate (launch spread, request noise) and counts.
        `rng`: a random.Random of the arm's own sweep."""
        p = self.physics
        mean = p.base * self.tps(k) / self.step(k)
        rate = mean * (1.0 + rng.gauss(0.0, CV)) + rng.gauss(0.0, WITHIN_SD / math.sqrt(REQUESTS))
        return rate, (self.evidence(k) if k else None)

    def pair(self, rng, k: int, pairs: int = PAIRS) -> StepRatio | None:
        """The launch's two-stream phase (`pairs` pairs of requests) over its one-stream steps,
        as sweep.evidence.pairtimes measures it: None at a depth whose drafter left 5% of plain
        steps or more (its verify ratio measures it); each phase's mean gap over its steps, each
        step off by step_cv, the launch's own drafted share q weighting plain and verify steps in
        both phases."""
        p = self.physics
        q = self.counts(k).drafted_share if k else 0.0
        if k:
            seen = self.evidence(k)
            if seen is None or seen.steps is None:  # sweep.evidence.pairtimes: q not known
                return StepRatio(k, None, None, reason="no step count")
            if 1.0 - seen.drafted_share >= steptimes.MIN_PLAIN_SHARE:
                return None
        steps = max(1, int(round(TOKENS / self.tps(k))))
        n_1, n_2 = steps * REQUESTS, steps * pairs
        one = (1.0 - q) + q * p.verify(k)
        two = p.pair_mean(k, q)
        mean_1 = one * (1.0 + rng.gauss(0.0, p.step_cv / math.sqrt(n_1)))
        mean_2 = two * (1.0 + rng.gauss(0.0, p.step_cv / math.sqrt(n_2)))
        sd = math.sqrt(p.step_cv ** 2 / n_1 + p.step_cv ** 2 / n_2 + steptimes.FLOOR ** 2)
        return StepRatio(k, math.log(mean_2 / mean_1), sd, mean_2, mean_1, n_2, n_1)

    def ratio(self, rng, k: int) -> StepRatio | None:
        """The launch's verify-to-plain step ratio as sweep.evidence.steptimes measures it from its
        chunks: the two groups' mean gaps (multi-token chunks: verify steps that accepted
        something; one-token chunks: plain steps and empty verify steps) over REQUESTS requests,
        each step's time off by step_cv. The launch factor scales both groups and cancels."""
        if not k:
            return None
        p, c, seen = self.physics, self.counts(k), self.evidence(k)
        if seen is None:
            return None
        if seen.steps is None:  # sweep.evidence.steptimes: the share of drafting steps is not known
            return StepRatio(k, None, None, reason="no step count")
        if 1.0 - seen.drafted_share < steptimes.MIN_PLAIN_SHARE:  # no plain step to compare with
            return steptimes.from_groups(k, (p.verify(k), 0.0, 0), (1.0, 0.0, 0),
                                         seen.drafted_share, seen.rate(1))
        per_request = c.repeats
        steps = (c.generation_tokens - c.accepted) / per_request  # type: ignore[operator]
        q, a1 = c.drafted_share, c.rate(1)
        n_v = int(round(c.per_position[0] / per_request * REQUESTS)) if c.per_position else 0
        n_1 = int(round(steps * REQUESTS)) - n_v
        t_v = p.verify(k)
        plain, empty = 1.0 - q, q * (1.0 - a1)
        if n_v < 2 or n_1 < 2 or plain + empty <= 0:
            return steptimes.from_groups(k, (t_v, 0.0, n_v), (1.0, 0.0, max(0, n_1)),
                                         seen.drafted_share, seen.rate(1))
        w = empty / (plain + empty)
        m_1 = (1.0 - w) + w * t_v
        var_v = (p.step_cv * t_v) ** 2
        var_1 = (1.0 - w) * p.step_cv ** 2 + w * (p.step_cv * t_v) ** 2 + w * (1.0 - w) * (t_v - 1.0) ** 2
        mean_v = t_v + rng.gauss(0.0, math.sqrt(var_v / n_v))
        within_1 = (1.0 - w) * p.step_cv ** 2 + w * (p.step_cv * t_v) ** 2  # the mix is counted
        mean_1 = m_1 + rng.gauss(0.0, math.sqrt(within_1 / n_1))
        return steptimes.from_groups(k, (mean_v, var_v, n_v), (mean_1, var_1, n_1),
                                     seen.drafted_share, seen.rate(1))


# The six scenarios of bench_sweep's black-box table, as physics: per-position acceptance and a
# step-cost slope fitted to their rates (the two with a sharp peak come out less sharp: a peak
# at depth 2 that steep needs a step cost that jumps, i.e. the model wrong, below).
HOLDS = {
    "depth 2 clearly best": Physics(26.4, (0.42, 0.40, 0.02, 0.01), 0.26),
    "depth 2 best, depth 4 slower than none": Physics(26.4, (0.68, 0.66, 0.42, 0.02), 0.50),
    "speculation loses at every depth": Physics(26.4, (0.18, 0.14, 0.13, 0.05), 0.30),
    "monotone gain": Physics(26.4, (0.50, 0.45, 0.45, 0.43), 0.13),
    "a true tie at the top (1 and 2 within 1%)": Physics(26.4, (0.98, 0.87, 0.555, 0.31), 0.776),
    "field k-curve L-S2": Physics(25.9, (0.68, 0.35, 0.255, 0.255), 0.0),
}
# The model wrong on purpose (sim/ has the same switches: docs/simulator.md).
WRONG = {
    "kernel-path jump from depth 3 (x1.3)": Physics(26.4, (0.50, 0.45, 0.45, 0.43), 0.13,
                                                     jump=(3, 1.3)),
    "kernel-path jump from depth 3 (x1.5, the field's size)": Physics(
        26.4, (0.50, 0.45, 0.45, 0.43), 0.13, jump=(3, 1.5)),
    "graph-capture bucket: width 5 runs as 8 (depth 4 x1.5)":
        Physics(26.4, (0.50, 0.45, 0.45, 0.43), 0.13, step_factor={4: 1.5}),
    "graph-capture bucket: width 5 runs as 8 (depth 4 x1.23)":
        Physics(26.4, (0.50, 0.45, 0.45, 0.43), 0.13, step_factor={4: 1.23}),
    "slow path at width 3 (depth 2 x1.25: step time falls from 2 to 3)":
        Physics(26.4, (0.98, 0.87, 0.555, 0.31), 0.776, step_factor={2: 1.25}),
    "drafter depends on k (rates x1.06 per depth below 4)":
        Physics(26.4, (0.98, 0.87, 0.555, 0.31), 0.776, shallow=1.06),
    "short ngram drafts (40% propose 1 token)": Physics(26.4, (0.50, 0.45, 0.45, 0.43), 0.13,
                                                        short_share=0.4, short_length=1),
    # a path keyed on each sequence's draft length (an attention kernel chosen by query
    # length): the two-stream phase's pairs, whose batch width differs, do not see it
    "kernel-path jump by draft length from depth 3 (x1.3)": Physics(
        26.4, (0.50, 0.45, 0.45, 0.43), 0.13, jump=(3, 1.3), jump_by_draft=True),
    "kernel-path jump by draft length from depth 3 (x1.5)": Physics(
        26.4, (0.50, 0.45, 0.45, 0.43), 0.13, jump=(3, 1.5), jump_by_draft=True),
}

# Routing reuse the model's profile does not assume (issue 38): consecutive tokens of a sequence
# share a part of their routed experts. Two of them as the held-out stand-in that issue 38 was
# filed on (depth 2 best, about 4% ahead of depths 1 and 3: reuse 0.3, and reuse 0.3 with a
# batched step), two on shapes of HOLDS (monotone gain at 0.15, depth 2 clearly best at 0.5).
# The model holds once it fits the reuse.
REUSE = {
    "routing reuse 0.15 (monotone gain)": Physics(26.4, (0.50, 0.45, 0.45, 0.43), 0.13,
                                                  reuse=0.15),
    "routing reuse 0.3 (depth 2 best, 4% ahead of 1 and 3)": Physics(
        26.4, (0.85, 0.70, 0.45, 0.25), 0.62, reuse=0.3),
    "routing reuse 0.5 (depth 2 clearly best)": Physics(26.4, (0.42, 0.40, 0.02, 0.01), 0.26,
                                                        reuse=0.5),
    "routing reuse 0.3, batched step, dense part 0.03 per token (depth 2 best, 4% ahead)":
        Physics(26.4, (0.90, 0.80, 0.40, 0.20), 0.80, reuse=0.3, dense=0.03, batched=True),
}


def from_the_log(physics: Physics) -> Physics:
    """The scenario with its counts read from the log's SpecDecoding lines (no G)."""
    return replace(physics, evidence="log")


def as_ngram(physics: Physics, match: float = 0.7) -> Physics:
    """The scenario with an ngram drafter that finds a match at a share `match` of steps and
    keeps the same tokens per step and mean step time (its per-draft rates and its verify
    step's slope divided by the share; where a rate would pass 0.99, the share rises until it
    does not): the same true rates, with plain steps inside every speculative launch."""
    q = max(match, max(physics.rates) / 0.99)
    if q >= 1.0:
        return physics
    return replace(physics, rates=tuple(r / q for r in physics.rates), match=q,
                   slope=physics.slope / q, dense=physics.dense / q)
