"""Family F, differential: the same token ids scored here and on a known-good launch.

Per passage: ΔNLL (nats/token, this server minus the baseline), KL(baseline || this) over the
top-k lists with the remaining mass in an "other" bucket, and top-1 agreement on the positions
where the baseline's choice is decisive (its best token leads the second by at least 0.5 nats;
near-ties flip between healthy numerics and are not counted). Weak: mean KL > 0.05, decisive
agreement < 90 %, mean ΔNLL > 0.1 or the known-answer pass rate lower by two standard errors;
strong: mean KL > 0.5, agreement < 60 %, ΔNLL > 1.0 on a passage or > 0.5 on two.
Correct FP4 against its own baseline, or against the unquantized model, stays well inside.
"""

from __future__ import annotations

import math

from sparktriage.probe.baseline import Fingerprint, PassagePrint
from sparktriage.probe.family import GARBAGE, SUSPECT, FamilyResult, fmt, skipped

KL_WEAK, KL_STRONG = 0.05, 0.5
AGREE_WEAK, AGREE_STRONG = 0.90, 0.60
DNLL_WEAK, DNLL_PASSAGE_STRONG, DNLL_TWO_STRONG = 0.10, 1.0, 0.5
DECISIVE = 0.5  # nats between the baseline's best and second-best token


def _probs(top) -> dict:
    return {t: math.exp(v) for t, v in top if math.isfinite(v)}


def kl_topk(base_top, cand_top) -> float:
    p, q = _probs(base_top), _probs(cand_top)
    if not p:
        return math.nan
    q_rest = max(0.0, 1.0 - sum(q.values()))
    missing = [t for t in p if t not in q]
    floor = min(min(q.values(), default=1e-6), q_rest / max(1, len(missing))) if missing else 0.0
    kl = 0.0
    for t, pi in p.items():
        qi = max(q.get(t, floor), 1e-10)
        kl += pi * math.log(pi / qi)
    p_other = max(0.0, 1.0 - sum(p.values()))
    q_other = max(1e-10, 1.0 - sum(q.get(t, floor) for t in p))
    if p_other > 1e-9:
        kl += p_other * math.log(p_other / q_other)
    return max(0.0, kl)


def compare_passage(base: PassagePrint, cand: PassagePrint) -> dict:
    n = min(len(base.positions), len(cand.positions))
    kls, agree, decisive, dn = [], 0, 0, []
    for (bt, blp, btop), (ct, clp, ctop) in zip(base.positions[:n], cand.positions[:n]):
        dn.append(clp - blp)
        if btop and ctop:
            kls.append(kl_topk(btop, ctop))
            if len(btop) < 2 or btop[0][1] - btop[1][1] >= DECISIVE:
                decisive += 1
                agree += btop[0][0] == ctop[0][0]
    finite = [k for k in kls if math.isfinite(k)]
    kls_sorted = sorted(finite)
    return {
        "tokens": n,
        "delta_nll": -sum(dn) / n if n else math.nan,
        "kl_mean": sum(finite) / len(finite) if finite else math.nan,
        "kl_p99": kls_sorted[min(len(kls_sorted) - 1, int(0.99 * len(kls_sorted)))] if kls_sorted else math.nan,
        "decisive_positions": decisive,
        "top1_agreement": agree / decisive if decisive else math.nan,
    }


def evaluate(baseline: Fingerprint | None, current: Fingerprint | None, answers: dict | None) -> FamilyResult:
    if baseline is None:
        return skipped("differential", "no baseline: pass --baseline FILE (saved with --save-baseline on a "
                       "known-good launch) or --reference URL")
    if current is None or not current.prints:
        return skipped("differential", "this server returned no prompt logprobs to compare")
    common = [n for n in baseline.prints if n in current.prints and not n.endswith("-shuffled")]
    mismatched = [n for n in common if baseline.prints[n].token_ids != current.prints[n].token_ids]
    if common and len(mismatched) == len(common):
        return skipped("differential", "the baseline tokenized the passages differently: it is from another "
                       "checkpoint or tokenizer")
    rows = {n: compare_passage(baseline.prints[n], current.prints[n]) for n in common if n not in mismatched}
    if not rows:
        return skipped("differential", "no passage in common with the baseline")
    result = FamilyResult("differential")
    weights = [r["tokens"] for r in rows.values()]
    kl = _wmean([r["kl_mean"] for r in rows.values()], weights)
    dnll = _wmean([r["delta_nll"] for r in rows.values()], weights)
    decisive = sum(r["decisive_positions"] for r in rows.values())
    agree = (sum(r["top1_agreement"] * r["decisive_positions"] for r in rows.values() if r["decisive_positions"])
             / decisive) if decisive else math.nan
    result.numbers = {"passages": rows, "kl_mean": kl, "delta_nll": dnll, "top1_agreement": agree,
                      "decisive_positions": decisive}
    worst = max(rows.items(), key=lambda kv: kv[1]["delta_nll"])
    over_half = [n for n, r in rows.items() if r["delta_nll"] > DNLL_TWO_STRONG]
    summary = (f"vs baseline: mean KL {kl:.3f}, decisive top-1 agreement {fmt(agree)}, ΔNLL {dnll:+.3f} "
               f"nats/token (worst {worst[0]} {worst[1]['delta_nll']:+.2f})")
    if kl > KL_STRONG or (math.isfinite(agree) and agree < AGREE_STRONG) or \
            worst[1]["delta_nll"] > DNLL_PASSAGE_STRONG or len(over_half) >= 2:
        result.raise_to(GARBAGE, summary)
    elif kl > KL_WEAK or (math.isfinite(agree) and agree < AGREE_WEAK) or dnll > DNLL_WEAK:
        result.raise_to(SUSPECT, summary)
    else:
        result.evidence.append(summary)
    if answers and baseline.answers and baseline.answers.get("asked") and answers.get("asked"):
        b = baseline.answers["passed"] / baseline.answers["asked"]
        c = answers["passed"] / answers["asked"]
        n = answers["asked"]
        se = math.sqrt(max(b * (1 - b), 1 / n) / n + max(c * (1 - c), 1 / n) / n)
        result.numbers.update({"baseline_answers": b, "answers": c})
        line = f"known answers {fmt(c)} vs {fmt(b)} on the baseline"
        if b - c > 2 * se:
            result.raise_to(SUSPECT, line)
        else:
            result.evidence.append(line)
    if mismatched:
        result.evidence.append(f"tokenized differently, not compared: {', '.join(mismatched)}")
    return result


def _wmean(values: list[float], weights: list[int]) -> float:
    pairs = [(v, w) for v, w in zip(values, weights) if math.isfinite(v)]
    total = sum(w for _, w in pairs)
    return sum(v * w for v, w in pairs) / total if total else math.nan
