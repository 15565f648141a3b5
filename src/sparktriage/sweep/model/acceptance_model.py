"""Acceptance at every depth from counts: AL(k) and tokens per step, with intervals, and two checks.

vLLM's per-position rates are unconditional (rate_i = P(at least i drafts accepted):
sweep.evidence.counts), so one launch at the deepest depth K gives the mean acceptance length of
every shallower depth,

    AL(k) = 1 + Σ_{i ≤ k} rate_i              (per drafted step)
    TPS(k) = 1 + q · Σ_{i ≤ k} rate_i          (per engine step; q the drafted share)

as long as the drafter's i-th guess does not depend on k (ngram and chain drafters propose the
first k tokens of what they would propose at K). A depth measured itself uses its own counts.

Counting error: the positions' counts are nested binomials, Var(Σ_{i≤k} rate_i) =
(Σ_i s_i(1 − s_i) + 2 Σ_{i<j≤k} s_j(1 − s_i)) / D. For a depth read off the reference, D is one
request's drafts (a greedy prompt repeated gives the same drafts: sweep.evidence.counts
`independent_drafts`; which positions the drafter reaches at another depth varies with them). A
depth measured itself has no counting error when its counts repeat one greedy prompt (they are
what the prompt gets there, at every launch), else D is all its drafts. Intervals are normal, 95%.

Checks (each rejects the depth model, docs/sweep.md):
* `drafter`: a depth measured itself and the reference agree position by position (two-proportion
  z-tests, Bonferroni over every compared position at the look's level); a difference means the drafter's
  guesses depend on k and AL(k) cannot be read off the deepest launch.
* `short_drafts`: the mean draft length T / D is at least k·(1 − 5%) at every launched depth;
  shorter drafts (ngram found fewer than k tokens to propose) verify fewer tokens than the step
  model assumes.
"""

from __future__ import annotations

import math
from dataclasses import dataclass
from statistics import NormalDist

from sparktriage.sweep.evidence.counts import Counts

Z95 = 1.959964
ALPHA = 0.05
SHORT_TOLERANCE = 0.05


@dataclass(frozen=True)
class Check:
    """One test of the depth model's assumptions: passed or not, why, and the figures."""

    name: str
    passed: bool | None  # None: could not be run (nothing to compare yet)
    reason: str
    figures: dict

    def as_dict(self) -> dict:
        return {"name": self.name, "passed": self.passed, "reason": self.reason,
                "figures": self.figures}


def _sum_var(c: Counts, k: int, trials: float) -> float:
    s = [c.rate(i) for i in range(1, k + 1)]
    var = sum(x * (1.0 - x) for x in s)
    var += 2.0 * sum(s[j] * (1.0 - s[i]) for i in range(k) for j in range(i + 1, k))
    return max(0.0, var) / trials


@dataclass(frozen=True)
class AcceptanceModel:
    """Acceptance per depth: from a depth's own counts, else from the reference (deepest) depth."""

    reference: Counts  # pooled counts of the deepest launched depth
    own: dict[int, Counts]  # pooled counts of every launched depth ≥ 1

    def _source(self, depth: int) -> Counts:
        return self.own.get(depth) or self.reference

    def _var(self, depth: int) -> float:
        """Counting variance of Σ_{i≤k} rate_i. A depth measured itself: none when its counts
        repeat one greedy prompt (they are what this prompt gets at that depth, the same at every
        launch), else over all its drafts. A depth read off the reference: over one request's
        drafts (which positions the drafter reaches at another depth varies with them)."""
        c = self._source(depth)
        if depth in self.own:
            return 0.0 if c.repeats > 1 else _sum_var(c, depth, c.drafts)
        return _sum_var(c, depth, c.independent_drafts)

    def covers(self, depth: int) -> bool:
        return depth == 0 or depth in self.own or depth <= self.reference.depth

    def acceptance_length(self, depth: int) -> float:
        if depth == 0:
            return 1.0
        c = self._source(depth)
        return 1.0 + sum(c.rate(i) for i in range(1, depth + 1))

    def acceptance_interval(self, depth: int) -> tuple[float, float]:
        value = self.acceptance_length(depth)
        if depth == 0:
            return value, value
        half = Z95 * math.sqrt(self._var(depth))
        return value - half, value + half

    def tokens_per_step(self, depth: int) -> float:
        if depth == 0:
            return 1.0
        if depth in self.own:
            return self.own[depth].tokens_per_step
        c = self.reference
        return 1.0 + c.drafted_share * sum(c.rate(i) for i in range(1, depth + 1))

    def drafted_share(self, depth: int) -> float:
        """q at `depth` (≥ 1): its own counts', else the reference's."""
        return self._source(depth).drafted_share

    def log_sd(self, depth: int) -> float:
        """Counting sd of log TPS(depth)."""
        if depth == 0:
            return 0.0
        c = self._source(depth)
        return c.drafted_share * math.sqrt(self._var(depth)) / self.tokens_per_step(depth)

    def source(self, depth: int) -> str:
        if depth == 0:
            return "none (no speculation)"
        return "own counts" if depth in self.own else f"depth {self.reference.depth}'s counts"


def build(own: dict[int, Counts]) -> AcceptanceModel | None:
    """The acceptance model of the pooled counts per depth (None without any counts)."""
    counted = {d: c for d, c in own.items() if d >= 1 and c.drafts > 0}
    if not counted:
        return None
    return AcceptanceModel(counted[max(counted)], counted)


def drafter_check(model: AcceptanceModel, alpha: float = ALPHA) -> Check:
    """Do the per-position rates of every depth measured itself agree with the reference's?"""
    ref = model.reference
    pairs = [(d, i) for d, c in sorted(model.own.items()) if d < ref.depth
             for i in range(1, min(d, len(c.per_position), len(ref.per_position)) + 1)]
    if not pairs:
        return Check("drafter", None, f"no depth below {ref.depth} is measured itself yet", {})
    crit = NormalDist().inv_cdf(1.0 - alpha / (2.0 * len(pairs)))
    worst, rows = None, []
    for d, i in pairs:
        c = model.own[d]
        a, b = c.rate(i), ref.rate(i)
        pooled = (c.per_position[i - 1] + ref.per_position[i - 1]) / (c.drafts + ref.drafts)
        se = math.sqrt(max(pooled * (1.0 - pooled), 1e-12)
                       * (1.0 / c.independent_drafts + 1.0 / ref.independent_drafts))
        z = (a - b) / se
        rows.append({"depth": d, "position": i, "rate": round(a, 4), "reference_rate": round(b, 4),
                     "z": round(z, 3)})
        if worst is None or abs(z) > abs(worst["z"]):
            worst = rows[-1]
    lengths = {str(d): {"measured": round(model.acceptance_length(d), 4),
                        "from_reference": round(1.0 + sum(ref.rate(i) for i in range(1, d + 1)), 4)}
               for d in sorted(model.own) if d < ref.depth}
    figures = {"reference_depth": ref.depth, "critical_z": round(crit, 3), "alpha": alpha,
               "positions": rows,
               "acceptance_length": lengths}
    assert worst is not None
    if abs(worst["z"]) > crit:
        return Check("drafter", False,
                     f"the drafter depends on k: position {worst['position']} is accepted in "
                     f"{worst['rate']:.1%} of drafts at depth {worst['depth']} but "
                     f"{worst['reference_rate']:.1%} at depth {ref.depth} (z = {worst['z']:.1f}, "
                     f"beyond {crit:.2f} for {len(pairs)} comparisons)", figures)
    return Check("drafter", True,
                 f"per-position rates of {len(pairs)} position(s) agree with depth {ref.depth}'s "
                 f"within their counting error (largest |z| {abs(worst['z']):.1f} ≤ {crit:.2f})",
                 figures)


def short_draft_check(model: AcceptanceModel) -> Check:
    """Are drafts as long as the depth (mean draft length ≥ k·(1 − 5%)) at every depth?"""
    rows = {str(d): (None if c.mean_draft_length is None else round(c.mean_draft_length, 3))
            for d, c in sorted(model.own.items())}
    short = [(d, c.mean_draft_length) for d, c in sorted(model.own.items())
             if c.mean_draft_length is not None and c.mean_draft_length < d * (1.0 - SHORT_TOLERANCE)]
    figures = {"mean_draft_length": rows, "tolerance": SHORT_TOLERANCE}
    if not any(v is not None for v in rows.values()):
        return Check("short_drafts", None, "draft tokens were not counted", figures)
    if short:
        d, length = short[0]
        return Check("short_drafts", False,
                     f"drafts come short: {length:.2f} tokens per draft at depth {d} (the drafter "
                     f"found fewer than {d} tokens to propose), so a verify step checks fewer "
                     "tokens than the depth", figures)
    return Check("short_drafts", True, "every draft proposed as many tokens as its depth", figures)
