"""Family A, logprob sanity: numbers a working model cannot produce.

Strong (garbage) on any of: a NaN, infinite or missing logprob where one was asked for
(F2), a positive logprob, top-k probabilities summing above 1, top-k lists whose values are all
equal (uniform logits, F3: the value is -ln V), HTTP 5xx on requests that ask for logprobs
while the same request without them succeeds (F2), or greedy decoding picking tokens that are
not the most likely on a quarter of the steps. Each of these has no healthy explanation, so this
family alone can call garbage.
"""

from __future__ import annotations

import math

from sparktriage.probe import logprobs as lp
from sparktriage.probe.family import GARBAGE, FamilyResult, fmt
from sparktriage.probe.observations import Observations, scored_passage

UNIFORM_SPREAD = 1e-4  # nats between the best and the k-th logprob
TIE = 1e-3  # nats: a greedy choice this close to the best is a tie, not a violation


def _positions(obs: Observations) -> tuple[list[lp.Position], list[lp.Position]]:
    """(every returned position, the greedy generation positions)."""
    every, greedy = [], []
    for passage in obs.passages:
        scored = scored_passage(passage, obs.get(f"B:{passage.name}"), obs.caps.prompt_logprobs)
        if scored:
            every.extend(scored.positions)
    for rid, reply in obs.replies.items():
        if not reply.ok or rid.startswith(("B:", "E:")):
            continue
        choice = reply.choice
        ids = choice.get("token_ids") if isinstance(choice.get("token_ids"), list) else None
        if "message" in choice:
            got = lp.from_chat_logprobs(choice.get("logprobs"), ids)
        else:
            got = lp.from_completion_logprobs(choice.get("logprobs"), ids)
        every.extend(got)
        greedy.extend(got)
    return every, greedy


def evaluate(obs: Observations, retried_5xx: dict[str, bool]) -> FamilyResult:
    """`retried_5xx`: request id -> whether the same request without logprobs then succeeded."""
    result = FamilyResult("sanity")
    every, greedy = _positions(obs)
    nonfinite = [p for p in every if not math.isfinite(p.logprob) and not (p.logprob == -math.inf)]
    nonfinite += [p for p in every if p.logprob == -math.inf]
    literals = sorted({lit for r in obs.replies.values() for lit in r.nonfinite})
    positive = [p for p in every if math.isfinite(p.logprob) and p.logprob > 1e-4]
    overfull = [p for p in every if len(p.top) >= 2 and all(math.isfinite(v) for _, v in p.top)
                and sum(math.exp(v) for _, v in p.top) > 1.0 + 1e-3]
    uniform = [p for p in every if len(p.top) >= 2 and all(math.isfinite(v) for _, v in p.top)
               and p.top[0][1] - p.top[-1][1] < UNIFORM_SPREAD]
    off_rank = [p for p in greedy if p.top and math.isfinite(p.logprob) and math.isfinite(p.top[0][1])
                and p.logprob < p.top[0][1] - TIE]
    only_with_logprobs = sorted(rid for rid, ok in retried_5xx.items() if ok)
    result.numbers = {
        "positions": len(every), "nonfinite": len(nonfinite), "nonfinite_json_literals": literals,
        "positive": len(positive), "topk_mass_above_1": len(overfull), "uniform_topk": len(uniform),
        "greedy_steps": len(greedy), "greedy_not_top1": len(off_rank),
        "http_5xx_only_with_logprobs": len(only_with_logprobs),
    }
    if not every and not retried_5xx:
        result.evidence.append("no logprobs were returned: nothing to check")
        return result
    if nonfinite or literals:
        result.raise_to(GARBAGE, f"{len(nonfinite)} of {len(every)} logprobs are NaN, infinite or missing"
                        + (f"; the JSON carried {', '.join(literals)}" if literals else ""), "F2")
    if only_with_logprobs:
        result.raise_to(GARBAGE, f"HTTP 5xx on {len(only_with_logprobs)} request(s) only when logprobs were asked "
                        "for (NaN logits make logprob serialization fail)", "F2")
    if positive:
        result.raise_to(GARBAGE, f"{len(positive)} positive logprobs (impossible for a probability)")
    if overfull:
        result.raise_to(GARBAGE, f"{len(overfull)} positions whose top-k probabilities sum above 1")
    if uniform and len(uniform) >= max(3, 0.5 * sum(1 for p in every if len(p.top) >= 2)):
        value = -uniform[0].top[0][1]
        result.raise_to(GARBAGE, f"{len(uniform)} positions with all top-k logprobs equal "
                        f"({fmt(-value, 4)} = -ln {math.exp(value):.0f}): uniform logits", "F3")
    if len(greedy) >= 8 and len(off_rank) >= 0.25 * len(greedy):
        result.raise_to(GARBAGE, f"greedy decoding chose a token that was not the most likely at "
                        f"{len(off_rank)} of {len(greedy)} steps")
    if not result.evidence:
        result.evidence.append(f"{len(every)} logprobs finite, <= 0, normalized, not uniform")
    return result
