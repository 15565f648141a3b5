"""Speculative decoding in the stand-in, step by step: what the depth model of the sweep reads.

With a `step` cost in the scenario's `decode:` block every chunk of a response is one engine step
(one stream), and the gap before it is that step's time:

    plain step (width 1)       base = 1 / rate_tok_s
    verify step of width w     base × (1 + per_token · (w − 1) + routed_share · (r(w) − 1))

with r(w) the expert-union ratio of a mixture-of-experts target (roofline.experts: `experts`,
`experts_per_token`, `correlation`; r(w) = w without them, so routed_share then acts like a
second per-token term). Switches that make the sweep's depth model wrong on purpose:

* `jump: {depth, factor}`: every step that verifies at least `depth` + 1 tokens costs `factor`
  times more (a kernel path or graph-capture bucket switch, by the batch's width);
* `factors: {depth: factor}`: steps verifying exactly `depth` + 1 tokens cost `factor` times
  more (one slow or fast path: the step time can fall with depth);
* `drafts.short_share` / `short_length`: that share of drafts propose only `short_length`
  tokens (ngram found a shorter continuation), so vLLM's draft tokens per draft fall below k;
* `drafts.match`: the share of steps that propose at all (ngram found no match: a plain step);
* `acceptance_by_depth: {k: [...]}` in `decode:`: the per-position acceptance at depth k differs
  from the deepest depth's (the drafter's guesses depend on k).

Routing reuse: `routing_reuse` (the older name `correlation`) is the share of a
token's routed experts that the previous token of the same sequence already picked: a draft of
l tokens reads U(1 + l(1 − reuse)) experts, sequences routing independently of each other.
`batched: true` makes the server one engine loop: a step taken while other streams are open
verifies every open stream's current draft together (`StepCost.batch_cost` over each stream's
own draft length: the dense part and the routed experts' union over every token of every
sequence), instead of the precomputed pair step below (sim/server.py).

While another stream is served at the same time (the sweep's two-stream phase) a step verifies
both sequences' tokens: width 2(length + 1), the expert union over two sequences that route
independently of each other (roofline.experts), the jump and factors by that width
(`StepCost.cost(length, streams=2)`; the server applies it to the steps taken while two streams
are open, sim/server.py).

Acceptance is drawn as a chain: position i is accepted when every earlier one was and a draw falls
under a_i / a_(i−1), so the unconditional share of drafts with position i accepted is a_i, as
vLLM's per-position rate reports. The draws follow the scenario's seed, not the launch: like a
greedy prompt, every launch at a depth gets the same drafts; only the launch spread differs.
"""

from __future__ import annotations

import random
from dataclasses import dataclass

from pydantic import BaseModel, ConfigDict, Field, model_validator

from sparktriage.roofline import experts as expert_union


class _Strict(BaseModel):
    model_config = ConfigDict(extra="forbid", frozen=True)


class Jump(_Strict):
    """Verify steps of drafts at least `depth` long cost `factor` times more."""

    depth: int = Field(ge=1, le=64)
    factor: float = Field(gt=0, le=10)


class StepCost(_Strict):
    """The cost of an engine step by the width it verifies (see module doc)."""

    per_token: float = Field(0.0, ge=0, le=10, description="cost per extra verified token, share of a plain step")
    routed_share: float = Field(0.0, ge=0, lt=1, description="share of a plain step that reads routed experts")
    experts: int | None = Field(None, ge=1, description="routed experts per layer (MoE target)")
    experts_per_token: int | None = Field(None, ge=1, description="routed experts per token (top-k)")
    correlation: float = Field(0.0, ge=0, lt=1, description="routing correlation between adjacent tokens")
    routing_reuse: float | None = Field(
        None, ge=0, lt=1, description="share of a token's routed experts that the previous token of "
                                      "the same sequence already picked (the name for "
                                      "correlation: give one of the two)")
    batched: bool = Field(False, description="one engine step verifies every open stream's tokens, "
                                             "each at its own draft length (sim/server.py)")
    jump: Jump | None = None
    factors: dict[int, float] = Field(default_factory=dict, description="draft length -> cost factor")

    @model_validator(mode="after")
    def _experts(self) -> "StepCost":
        if (self.experts is None) != (self.experts_per_token is None):
            raise ValueError("give experts and experts_per_token together")
        if self.experts is not None and self.experts_per_token > self.experts:
            raise ValueError("experts_per_token must not exceed experts")
        if any(k < 1 or not 0 < v <= 10 for k, v in self.factors.items()):
            raise ValueError("factors: draft lengths >= 1, factors in (0, 10]")
        if self.routing_reuse is not None and self.correlation:
            raise ValueError("give routing_reuse or correlation, not both (the same share)")
        return self

    @property
    def reuse(self) -> float:
        """The share of a token's routed experts its predecessor in the sequence picked."""
        return self.correlation if self.routing_reuse is None else self.routing_reuse

    def ratio(self, width: int, streams: int = 1) -> float:
        if self.experts and self.experts_per_token:
            return expert_union.ratio(self.experts, self.experts_per_token, width, self.reuse,
                                      streams)
        return float(streams * width)

    def _union(self, lengths: tuple[int, ...]) -> float:
        """Routed experts read by one step over these sequences' drafts, over a plain step's:
        each sequence's tokens reuse `reuse` of their predecessor's, sequences route
        independently of each other (roofline.experts); the width itself without experts."""
        if self.experts and self.experts_per_token:
            effective = sum(1.0 + max(l, 0) * (1.0 - self.reuse) for l in lengths)
            return (expert_union.union(self.experts, self.experts_per_token, effective)
                    / expert_union.union(self.experts, self.experts_per_token, 1.0))
        return float(sum(max(l, 0) + 1 for l in lengths))

    def batch_cost(self, lengths: tuple[int, ...]) -> float:
        """One engine step verifying a draft of each length (one per running sequence; 0: that
        sequence's plain step) relative to a plain step of one: the dense part (1, plus
        per_token for each further verified token) and the routed experts' union over every
        token of every sequence; a jump and the factors by the batch's width."""
        width = sum(max(l, 0) + 1 for l in lengths)
        value = 1.0 + self.per_token * (width - 1) + self.routed_share * (self._union(lengths) - 1.0)
        if self.jump is not None and width - 1 >= self.jump.depth:
            value *= self.jump.factor
        return value * self.factors.get(width - 1, 1.0)

    def cost(self, length: int, streams: int = 1) -> float:
        """A step verifying a draft of `length` tokens (0: a plain step) in each of `streams`
        sequences, relative to a plain step of one."""
        return self.batch_cost((max(length, 0),) * streams)


class Drafts(_Strict):
    """What the drafter proposes per step."""

    match: float = Field(1.0, ge=0, le=1, description="share of steps that propose a draft")
    short_share: float = Field(0.0, ge=0, le=1, description="share of drafts that come short")
    short_length: int = Field(1, ge=1, le=64, description="tokens a short draft proposes")


@dataclass(frozen=True)
class Steps:
    """One launch's engine steps: tokens per chunk, draft length per step, the step costs."""

    sizes: tuple[int, ...]  # first the prefill token, then one entry per decode step
    drafts: tuple[int, ...]  # draft length of each step (0: the step proposed nothing)
    costs: tuple[float, ...]  # relative cost of each step (the prefill entry is 0)
    pair_costs: tuple[float, ...] = ()  # the same steps with a second stream served alongside


def draw_steps(seed: int, depth: int, acceptance: tuple[float, ...], drafts: Drafts,
               step: StepCost | None, count: int) -> Steps:
    """Draw `count` chunks (the prefill token first) at speculative depth `depth`."""
    rng = random.Random(seed)
    accept = list(acceptance[:depth])
    accept += [accept[-1] if accept else 0.0] * (depth - len(accept))
    sizes, lengths, costs, pairs = [1], [0], [0.0], [0.0]
    for _ in range(count - 1):
        length = 0
        if depth and rng.random() < drafts.match:
            length = depth
            if drafts.short_length < depth and rng.random() < drafts.short_share:
                length = drafts.short_length
        accepted, previous = 0, 1.0
        for a in accept[:length]:
            if previous <= 0 or rng.random() >= a / previous:
                break
            accepted += 1
            previous = a
        sizes.append(1 + accepted)
        lengths.append(length)
        costs.append(step.cost(length) if step is not None else 1.0)
        pairs.append(step.cost(length, 2) if step is not None else 1.0)
    return Steps(tuple(sizes), tuple(lengths), tuple(costs), tuple(pairs))
