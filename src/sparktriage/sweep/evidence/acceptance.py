"""Acceptance per depth: mean acceptance length and per-position acceptance rates.

Sources, in order: the `/metrics` counter deltas of each protocol window
(`vllm:spec_decode_num_drafts/num_draft_tokens/num_accepted_tokens[_per_pos]`, summed over the
windows of the launch: reconcile.launch.metric_windows), else the log's
`SpecDecoding metrics:` lines (logs.json `spec_decode.windows_detail`; their windows are the
server's ~10 s intervals, so they may include the gate's few requests). Mean acceptance length =
1 + accepted / drafts (the bonus token included); position i's rate = accepted at i / drafts.

Cross-check: with one stream, each engine step sends one chunk, so the observed tokens per
chunk is the mean tokens per step; steps where ngram found no match draft nothing and yield one
token, so tokens per chunk should not exceed the acceptance length (beyond 10%, and with at
least one chunk per step, the check fails and says so).

Engine steps without G. vLLM counts a draft only where a step proposed tokens, so a step where
ngram found no match is in neither D nor A, and q = D / S needs the steps S: `vllm:generation_
tokens_total` gives them (S = G − A). The log's SpecDecoding lines give A, the draft tokens and
the mean acceptance length (D = A / (length − 1)) but no step count, and neither does a /metrics
page without the generation counter. Then the stream gives S: at one stream every engine step
sends one token-carrying chunk of 1 + (its accepted drafts) tokens, so tokens per chunk =
(S + A) / S and S = A / (tokens per chunk − 1) (`chunk_steps`). It needs the cross-check
consistent (chunks not coalesced) and something accepted; S below D (a drafting step more than
every step) beyond the check's tolerance is not a step count. Without either, a lookup drafter
(`ngram`, `ngram_gpu`, `suffix`: they propose nothing where no match is found) has an unknown
no-match share (`share_known` false, sweep.evidence.counts), while every other method drafts at
every step (q = 1).
"""

from __future__ import annotations

from sparktriage.reconcile.launch import metric_windows
from sparktriage.store.rundir import LaunchDir

TOLERANCE = 0.10


def _counts(part: dict, width: int) -> list[float]:
    """Accepted drafts per position of one window: the exact counts when the window has them,
    else its rates weighted back into counts."""
    exact = part.get("accepted_per_position")
    if isinstance(exact, list) and exact:
        values = [float(x or 0.0) for x in exact]
    else:
        values = [float(x) * (part.get("drafts") or 0.0) for x in part.get("per_position") or []]
    return values + [0.0] * (width - len(values))


def _summed(parts: list[dict], source: str) -> dict | None:
    drafts = sum(p.get("drafts") or 0.0 for p in parts)
    if not drafts:
        return None
    drafted = sum(p.get("draft_tokens") or 0.0 for p in parts)
    accepted = sum(p.get("accepted_tokens") or 0.0 for p in parts)
    width = max((max(len(p.get("per_position") or []), len(p.get("accepted_per_position") or []))
                 for p in parts), default=0)
    counts = [sum(column) for column in zip(*[_counts(p, width) for p in parts])] if width else []
    generated = [p.get("generation_tokens") for p in parts]
    return {"source": source, "drafts": drafts, "draft_tokens": drafted, "accepted_tokens": accepted,
            "mean_acceptance_length": round(1.0 + accepted / drafts, 4),
            "acceptance_rate": round(accepted / drafted, 4) if drafted else None,
            "per_position": [round(c / drafts, 4) for c in counts],
            "accepted_per_position": [round(c, 3) for c in counts],
            "generation_tokens": (sum(generated) if all(isinstance(g, (int, float)) for g in generated)
                                  else None)}


def from_metrics(launch: LaunchDir, workloads: set[str] | None = None) -> dict | None:
    """Acceptance from the /metrics deltas of the launch's protocol windows."""
    windows = metric_windows(launch) or []
    parts = [{**w["spec_decode"], "generation_tokens": w.get("generation_tokens")} for w in windows
             if w.get("spec_decode") and (workloads is None or w.get("workload") in workloads)]
    return _summed(parts, "metrics")


def from_log(logs: dict | None) -> dict | None:
    """Acceptance from the log's SpecDecoding lines (logs.json)."""
    spec = (logs or {}).get("spec_decode") or {}
    parts = []
    for w in spec.get("windows_detail") or []:
        drafts = w.get("drafts_estimated")
        if not drafts:
            continue
        parts.append({"drafts": drafts, "draft_tokens": w.get("drafted") or 0.0,
                      "accepted_tokens": w.get("accepted") or 0.0,
                      "per_position": [x for x in (w.get("per_position") or []) if x == x]})
    found = _summed(parts, "log")
    if found is None and isinstance(spec.get("mean_acceptance_length"), (int, float)):
        found = {"source": "log", "drafts": None, "draft_tokens": None, "accepted_tokens": None,
                 "mean_acceptance_length": float(spec["mean_acceptance_length"]),
                 "acceptance_rate": None, "per_position": []}
    return found


def tokens_per_chunk(bench: dict | None, workload: str) -> float | None:
    """Observed tokens per token-carrying chunk over the measured ok requests of `workload`."""
    for w in (bench or {}).get("workloads") or []:
        if w.get("name") != workload:
            continue
        rows = [r for r in w.get("requests") or [] if not r.get("warmup") and r.get("status") == "ok"
                and r.get("chunks")]
        tokens = sum(r.get("output_tokens") or 0 for r in rows)
        chunks = sum(r["chunks"] for r in rows)
        return round(tokens / chunks, 4) if chunks else None
    return None


def cross_check(acceptance: dict | None, per_chunk: float | None) -> dict:
    """Tokens per chunk against the acceptance length (see module doc)."""
    length = (acceptance or {}).get("mean_acceptance_length")
    if length is None or per_chunk is None:
        return {"state": "unchecked", "tokens_per_chunk": per_chunk,
                "reason": "no acceptance length" if length is None else "no chunk counts"}
    ok = per_chunk <= length * (1.0 + TOLERANCE)
    return {"state": "consistent" if ok else "inconsistent", "tokens_per_chunk": per_chunk,
            "reason": (f"{per_chunk:.2f} tokens per chunk against an acceptance length of "
                       f"{length:.2f}" + ("" if ok else ": more tokens arrived per chunk than the "
                                          "server's counters accepted per step (chunks coalesced by "
                                          "a proxy, or counters from another window)"))}


def chunk_steps(found: dict, check: dict) -> float | None:
    """S from the stream when the counts have no G (module doc), None when it cannot be had."""
    per_chunk, drafts = check.get("tokens_per_chunk"), found.get("drafts")
    accepted = found.get("accepted_tokens")
    if (found.get("generation_tokens") is not None or check.get("state") != "consistent"
            or not drafts or not accepted or per_chunk is None or per_chunk <= 1.0):
        return None
    steps = accepted / (per_chunk - 1.0)
    if steps < drafts * (1.0 - TOLERANCE):
        return None
    return round(max(steps, drafts), 3)


def may_skip_drafts(method: str | None) -> bool:
    """Whether the method proposes nothing at a step where its lookup finds no match."""
    return method is None or method.startswith("ngram") or method == "suffix"


def repeats(bench: dict | None, workload: str, greedy: bool) -> int:
    """How many identical requests the counts of `workload`'s window sum over: every request of a
    greedy workload (warm-ups included) drafts the same tokens; sampled requests are each new."""
    if not greedy:
        return 1
    for w in (bench or {}).get("workloads") or []:
        if w.get("name") == workload:
            return max(1, len(w.get("requests") or []))
    return 1


def steps_without_g(found: dict, check: dict, method: str | None) -> dict:
    """Without G: the steps from the stream, and whether the drafted share is known (module
    doc); nothing when G was counted."""
    if found.get("generation_tokens") is not None or not found.get("drafts"):
        return {}
    steps = chunk_steps(found, check)
    return {"chunk_steps": steps, "share_known": steps is not None or not may_skip_drafts(method)}


def acceptance(launch: LaunchDir, logs: dict | None, bench: dict | None, workload: str,
               workloads: set[str] | None = None, greedy: bool = True,
               method: str | None = None) -> dict | None:
    """The launch's acceptance (metrics first, then the log) with its chunk cross-check, the
    steps from the stream where G was not counted, and the number of identical greedy requests
    behind its counts (`repeats`, sweep.evidence.counts). `method`: the speculative method (None:
    taken as one that may draft nothing at a step)."""
    found = from_metrics(launch, workloads) or from_log(logs)
    if found is None:
        return None
    check = cross_check(found, tokens_per_chunk(bench, workload))
    return {**found, "repeats": repeats(bench, workload, greedy), "check": check,
            **steps_without_g(found, check, method)}


def combine(parts: list[dict]) -> dict | None:
    """Acceptance of a depth over its launches (counts summed; log-only means averaged)."""
    counted = [p for p in parts if p and p.get("drafts")]
    if counted:
        sources = sorted({p["source"] for p in counted})
        out = _summed(counted, "+".join(sources))
        return out
    means = [p["mean_acceptance_length"] for p in parts if p and p.get("mean_acceptance_length")]
    if not means:
        return None
    return {"source": "log", "mean_acceptance_length": round(sum(means) / len(means), 4),
            "per_position": [], "drafts": None}
