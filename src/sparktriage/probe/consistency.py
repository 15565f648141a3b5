"""Family E, self-consistency inside one server: shape- and load-dependent bugs (F6).

Decode vs prefill: the log-probabilities a generation reported token by token must match a
fresh prefill of the same token ids (vLLM skips the prefix cache for prompt-logprob requests),
measured with the k3 estimator of KL, mean((r - 1) - ln r) with r = p_prefill / p_decode.
Sequential vs burst: the short probes are answered once one at a time and once all at once; a
healthy server loses no accuracy under concurrency. Weak: k3 > 0.01 or burst accuracy lower by
more than two standard errors; strong: k3 > 0.1, more than 5 % of tokens off by 2 nats, or
burst accuracy below half the sequential one.
"""

from __future__ import annotations

import math

from sparktriage.probe import logprobs as lp
from sparktriage.probe.answers import pass_results
from sparktriage.probe.family import GARBAGE, SUSPECT, FamilyResult, fmt, skipped
from sparktriage.probe.observations import Observations

K3_WEAK, K3_STRONG = 0.01, 0.1
BIG_DELTA, BIG_SHARE = 2.0, 0.05


def decode_prefill_pairs(obs: Observations) -> list[tuple[float, float]]:
    pairs = []
    for i in range(len(obs.open_prompts)):
        gen, rescore = obs.get(f"D:{i}"), obs.get(f"E:{i}")
        if gen is None or rescore is None or not gen.ok or not rescore.ok:
            continue
        choice = gen.choice
        out_ids = choice.get("token_ids")
        prompt_ids = choice.get("prompt_token_ids") or gen.doc.get("prompt_token_ids")
        if not isinstance(out_ids, list) or not isinstance(prompt_ids, list):
            continue
        if "message" in choice:
            decoded = lp.from_chat_logprobs(choice.get("logprobs"), out_ids)
        else:
            decoded = lp.from_completion_logprobs(choice.get("logprobs"), out_ids)
        full = list(prompt_ids) + list(out_ids)
        prefilled = lp.from_prompt_logprobs(rescore.choice.get("prompt_logprobs") or [], full, 1)
        for t, pos in enumerate(decoded):
            j = len(prompt_ids) + t - 1
            if 0 <= j < len(prefilled) and prefilled[j].token == pos.token:
                pairs.append((pos.logprob, prefilled[j].logprob))
    return pairs


def evaluate(obs: Observations) -> FamilyResult:
    result = FamilyResult("consistency")
    pairs = [(d, p) for d, p in decode_prefill_pairs(obs) if math.isfinite(d) and math.isfinite(p)]
    seq = {k: v for k, v in pass_results(obs, "C:seq:").items() if v["kind"] != "long" and v["read_from"] != "error"}
    burst = {k: v for k, v in pass_results(obs, "C:burst:").items() if k in seq and v["read_from"] != "error"}
    if not pairs and not burst:
        return skipped("consistency", "neither decode-vs-prefill pairs (needs token ids and logprobs) nor a "
                       "burst pass were available")
    if pairs:
        k3 = sum((math.exp(p - d) - 1) - (p - d) for d, p in pairs) / len(pairs)
        big = sum(1 for d, p in pairs if abs(p - d) > BIG_DELTA) / len(pairs)
        result.numbers.update({"decode_prefill_tokens": len(pairs), "decode_prefill_k3": k3,
                               "share_off_by_2_nats": big})
        line = f"decode vs prefill over {len(pairs)} tokens: k3 KL {k3:.4f}, {big:.1%} off by > {BIG_DELTA:g} nats"
        if k3 > K3_STRONG or big > BIG_SHARE:
            result.raise_to(GARBAGE, line + " (the decode and prefill paths disagree)", "F6")
        elif k3 > K3_WEAK:
            result.raise_to(SUSPECT, line, "F6")
        else:
            result.evidence.append(line)
    else:
        result.evidence.append("decode vs prefill not measured (no token ids or logprobs)")
    if burst:
        n = len(burst)
        s = sum(seq[k]["passed"] for k in burst) / n
        b = sum(v["passed"] for v in burst.values()) / n
        differ = sum(1 for k, v in burst.items() if v["answer"].strip() != seq[k]["answer"].strip())
        se = math.sqrt((s * (1 - s) + b * (1 - b)) / n) if n else 0.0
        result.numbers.update({"sequential_accuracy": s, "burst_accuracy": b, "probes": n,
                               "answers_differing": differ})
        line = f"probes one at a time {fmt(s)} vs all at once {fmt(b)} ({differ}/{n} answers differ)"
        if s >= 0.5 and b < 0.5 * s:
            result.raise_to(GARBAGE, line + ": accuracy collapses under concurrency", "F6")
        elif s - b > 2 * se and differ >= 3:
            result.raise_to(SUSPECT, line, "F6")
        else:
            result.evidence.append(line)
    return result
