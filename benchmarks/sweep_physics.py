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
"""

from __future__ import annotations

import math
import sys
from dataclasses import dataclass, field
from pathlib import Path

import numpy as np

sys.path.insert(0, str(Path(__file__).resolve().parents[1] / "src"))

from sparktriage.sweep.counts import Counts  # noqa: E402
from sparktriage.sweep.stepfit import StepShape  # noqa: E402

CV = 0.065
WITHIN_SD = 1.5
REQUESTS = 15
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
        return 1.0 + self.slope * SHAPE.g(width_depth)

    def step(self, k: int) -> float:
        """Mean step time at depth k relative to a plain step."""
        if not k:
            value = 1.0
        else:
            value = sum(share * self.h(length) for share, length in self.lengths(k))
        if self.jump and k >= self.jump[0]:
            value *= self.jump[1]
        return value * self.step_factor.get(k, 1.0)

    def accepted_mean(self, k: int) -> float:
        s = self.rates_at(k)
        return sum(share * sum(s[:length]) for share, length in self.lengths(k))

    def tps(self, k: int) -> float:
        return 1.0 + self.accepted_mean(k)

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

    def counts(self, k: int) -> Counts:
        if k not in self._counts:
            self._counts[k] = self._draw(k)
        return self._counts[k]

    def _draw(self, k: int) -> Counts:
        rng = np.random.default_rng([self.seed, k, 7919])
        p = self.physics
        drafts = max(1, int(round(TOKENS / p.tps(k))))
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
                      (drafts + accepted) * r, "simulated", r)

    def tps(self, k: int) -> float:
        return 1.0 if k == 0 else self.counts(k).tokens_per_step

    def truth(self) -> dict[int, float]:
        p = self.physics
        return {k: p.base * self.tps(k) / p.step(k) for k in p.depths}

    def launch(self, rng, k: int) -> tuple[float, Counts | None]:
        """One launch at depth k: its delivered rate (launch spread, request noise) and counts.
        `rng`: a random.Random of the arm's own sweep."""
        p = self.physics
        mean = p.base * self.tps(k) / p.step(k)
        rate = mean * (1.0 + rng.gauss(0.0, CV)) + rng.gauss(0.0, WITHIN_SD / math.sqrt(REQUESTS))
        return rate, (self.counts(k) if k else None)


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
}
