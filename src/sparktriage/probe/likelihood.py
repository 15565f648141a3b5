"""Family B, reference likelihood: how well the model predicts text, without a baseline.

Scored with `prompt_logprobs` (bits per byte are tokenizer-independent). Absolute guards only
on what a working model finds easy: the *easiest* of three easy passages (the repeated half of a
fresh word list, a counting sequence, a famous memorized text) must cost well under 1 bit per
byte. The best of three, not their mean: a working model may lack one skill (a small model that
never learned in-context copying, one that never saw the canary), a broken one fails them all.
Also teacher-forced top-1 accuracy, and the shuffle gap (how much better the model scores real
text than the same words shuffled). Ordinary passages are reported per passage; their absolute level
depends on the model, so they decide only against a baseline (family `differential`).
"""

from __future__ import annotations

import math

from sparktriage.probe.family import GARBAGE, SUSPECT, FamilyResult, fmt, skipped
from sparktriage.probe.observations import Observations, ScoredPassage, scored_passage

EASY_BPB_WEAK, EASY_BPB_STRONG = 1.0, 2.0  # bits/byte on the easiest easy passage
TOP1_STRONG = 0.10  # teacher-forced top-1 accuracy over every scored token
GAP_WEAK, GAP_STRONG = 1.0, 0.3  # shuffle gap, nats/token
TEXT_BPB_STRONG = 4.0  # mean bits/byte of ordinary passages: beyond any healthy model


def scored_all(obs: Observations) -> dict[str, ScoredPassage]:
    out = {}
    for passage in obs.passages:
        scored = scored_passage(passage, obs.get(f"B:{passage.name}"), obs.caps.prompt_logprobs)
        if scored is not None and scored.positions:
            out[passage.name] = scored
    return out


def evaluate(obs: Observations) -> FamilyResult:
    if not obs.caps.prompt_logprobs_via:
        return skipped("likelihood", "the server returns no prompt logprobs (prompt_logprobs and echo "
                       "with logprobs were both refused)")
    scored = scored_all(obs)
    failed = [p.name for p in obs.passages if p.name not in scored]
    if not scored:
        reasons = {obs.get(f"B:{p.name}").error for p in obs.passages if obs.get(f"B:{p.name}")}
        return skipped("likelihood", "no passage could be scored: " + "; ".join(sorted(r for r in reasons if r))[:300])
    result = FamilyResult("likelihood")
    per = {name: {"bits_per_byte": s.bits_per_byte, "nll_per_token": s.nll, "top1": s.top1,
                  "tokens": len(s.positions)} for name, s in scored.items()}
    easy = [s for s in scored.values() if s.kind == "easy"]
    easy_bpb = min((s.bits_per_byte for s in easy), default=math.nan)
    easiest = min(easy, key=lambda s: s.bits_per_byte).name if easy else None
    texts = [s for s in scored.values() if s.kind == "text"]
    text_bpb = _pooled_bpb(texts)
    gaps = {}
    for control in (p for p in obs.passages if p.control_of):
        if control.name in scored and control.control_of in scored:
            gaps[control.control_of] = scored[control.name].nll - scored[control.control_of].nll
    gap = min(gaps.values()) if gaps else math.nan
    ranked = [p for s in scored.values() if s.kind != "control" for p in s.positions if p.top]
    top1 = sum(1 for p in ranked if p.top[0][0] == p.token) / len(ranked) if ranked else math.nan
    result.numbers = {"passages": per, "easy_bits_per_byte": easy_bpb, "easiest": easiest, "text_bits_per_byte": text_bpb,
                      "shuffle_gap_nats": gaps, "top1": top1, "unscored": failed}
    if any(not math.isfinite(s.nll) for s in scored.values()):
        result.raise_to(GARBAGE, "passage log-likelihoods are not finite", "F2")
    if math.isfinite(easy_bpb):
        line = f"the easiest passage ({easiest}) costs {fmt(easy_bpb)} bits/byte"
        if easy_bpb > EASY_BPB_STRONG:
            result.raise_to(GARBAGE, line + f" (> {EASY_BPB_STRONG}: the model can neither copy, count nor recite)")
        elif easy_bpb > EASY_BPB_WEAK:
            result.raise_to(SUSPECT, line + f" (> {EASY_BPB_WEAK})")
        else:
            result.evidence.append(line)
    if math.isfinite(top1) and top1 < TOP1_STRONG:
        result.raise_to(GARBAGE, f"teacher-forced top-1 accuracy {fmt(top1)} (< {TOP1_STRONG})")
    if math.isfinite(gap):
        line = f"shuffled text costs {fmt(gap)} nats/token more than the original"
        if gap < GAP_STRONG:
            result.raise_to(GARBAGE, line + " (the model cannot tell text from word salad)")
        elif gap < GAP_WEAK:
            result.raise_to(SUSPECT, line + f" (< {GAP_WEAK})")
        else:
            result.evidence.append(line)
    if math.isfinite(text_bpb) and text_bpb > TEXT_BPB_STRONG:
        result.raise_to(GARBAGE, f"ordinary passages cost {fmt(text_bpb)} bits/byte (> {TEXT_BPB_STRONG})")
    worst = max(texts, key=lambda s: s.bits_per_byte, default=None)
    if worst is not None:
        result.evidence.append(f"worst passage: {worst.name} at {fmt(worst.bits_per_byte)} bits/byte")
    if failed:
        result.evidence.append(f"not scored: {', '.join(failed)}")
    return result


def _pooled_bpb(items: list[ScoredPassage]) -> float:
    nats = sum(-p.logprob for s in items for p in s.positions)
    nbytes = sum(s.scored_bytes for s in items)
    return nats / math.log(2) / nbytes if nbytes else math.nan
