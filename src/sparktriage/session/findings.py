"""What a client of the checked server would feel, judged from what `selfcheck` recorded.

`judge()` reads the preflight (session/preflight.py), the protocol's bench.json, the launch's
`/metrics` scrapes and the `/tokenize` recount, and returns a list of typed findings, each
`{id, severity, text}`: severity "finding" makes the check exit 1 (docs/exit-codes.md),
"caveat" qualifies the numbers without failing the check. The ids, the bounds and what each
concludes are in docs/selfcheck.md "What it concludes"; every sentence states delivered tokens
(what arrived), never the tokens a request asked for, except to compare the two.
"""

from __future__ import annotations

from collections import Counter
from dataclasses import asdict, dataclass

FINDING, CAVEAT = "finding", "caveat"
MAX_PAUSE_S = 5.0  # default bound on the silence between two chunks of one answer
COLLAPSE_FLOOR = 0.1  # a window accepting under 10 % of drafted tokens has collapsed ...
COLLAPSE_SHARE = 1 / 3  # ... and so has one under a third of the best earlier window
MIN_DRAFT_TOKENS = 20  # a window with fewer drafted tokens says nothing about acceptance


@dataclass(frozen=True)
class Finding:
    id: str
    severity: str
    text: str


def judge(preflight: dict | None, bench: dict | None, windows: list[dict],
          metrics_after: dict | None, recount: list[dict] | None,
          max_pause_s: float = MAX_PAUSE_S) -> list[dict]:
    """Every finding and caveat, findings first."""
    found: list[Finding] = []
    if preflight is not None:
        found += _readiness(preflight)
        found += _fields(preflight)
        found += _busy(preflight.get("metrics"), metrics_after)
    if bench is not None:
        found += _delivery(bench, max_pause_s, recount or [])
    found += _acceptance(windows)
    if recount:
        found += _recount(recount)
    found.sort(key=lambda f: f.severity != FINDING)
    return [asdict(f) for f in found]


def _readiness(preflight: dict) -> list[Finding]:
    ready = preflight.get("readiness")
    if ready is None:
        return [Finding("not-ready", FINDING, "no model to ask: /v1/models lists none")]
    what = f"the readiness request (a non-streamed {ready['api']} request of at most 16 tokens)"
    outcome = ready["outcome"]
    if outcome == "no_answer":
        return [Finding("no-answer", FINDING,
                        f"{what} got no answer within {preflight['answer_deadline_s']:g} s: a client "
                        "waits forever; nothing was measured")]
    if outcome != "answered":
        return [Finding("not-ready", FINDING, f"{what} failed: {ready.get('reason') or outcome}")]
    found = []
    if not ready["content_chars"]:
        if ready["reasoning_chars"]:
            found.append(Finding("reasoning-only", FINDING,
                                 f"{what} came back with reasoning text only and empty content: a "
                                 "client that reads `content` shows a blank reply"))
        elif ready["finish_reason"] == "length":
            found.append(Finding("empty-at-limit", FINDING,
                                 f"{what} reached its token limit with empty content"))
        else:
            found.append(Finding("empty-answer", FINDING, f"{what} came back with no text"))
    if ready["finish_reason"] is None:
        found.append(Finding("not-ready", FINDING, f"{what} came back without a finish_reason"))
    if ready["model_answered"] != ready["model_asked"]:
        found.append(Finding("wrong-model", FINDING,
                             f"{what} asked for model {ready['model_asked']!r} and the answer names "
                             f"{ready['model_answered']!r}"))
    return found


def _fields(preflight: dict) -> list[Finding]:
    fields = preflight.get("fields")
    if not fields or fields["verdict"] != "accepted":
        return []
    return [Finding("fields-unchecked", CAVEAT,
                    f"the server accepted an invented request field ({fields['field']}) with HTTP 200: "
                    "it does not refuse fields it does not implement, so `ignore_eos` may be ignored "
                    "without a word; every answer's delivered tokens are checked against max_tokens "
                    "instead")]


def _busy(before: dict | None, after: dict | None) -> list[Finding]:
    found = []
    if before and not before.get("error"):
        running, waiting = before.get("running") or 0, before.get("waiting") or 0
        if running or waiting:
            found.append(Finding("busy-server", CAVEAT,
                                 f"{running:g} request(s) running and {waiting:g} waiting on the "
                                 "server before the check began: other traffic shares the engine, "
                                 "so every rate here is lower than an idle server's"))
    if before and after and before.get("preemptions") is not None and after.get("preemptions") is not None:
        grown = after["preemptions"] - before["preemptions"]
        if grown > 0:
            found.append(Finding("preemptions", FINDING,
                                 f"{grown:g} KV-cache preemption(s) during the check "
                                 "(vllm:num_preemptions_total): requests were evicted and recomputed, "
                                 "the KV cache is too small for the load"))
    return found


def _delivery(bench: dict, max_pause_s: float, recount: list[dict]) -> list[Finding]:
    """Per-request delivery; where the stream carried no count, `/tokenize`'s recount of the
    received text stands in for the chunk count."""
    tokenized = {(r["workload"], r["index"]): r["tokenized"] for r in recount
                 if r.get("tokenized") is not None}
    requests = []
    for w in bench.get("workloads") or []:
        for r in w.get("requests") or []:
            if (w["name"], r.get("index")) in tokenized:
                r = {**r, "output_tokens": tokenized[(w["name"], r.get("index"))],
                     "token_source": "tokenize"}
            requests.append(r)
    if not requests:
        return []
    total = len(requests)
    found = []
    failed = [r for r in requests if r["status"] != "ok"]
    if failed:
        reasons = Counter(f"{r['status']}: {r.get('reason') or '?'}" for r in failed)
        top = "; ".join(f"{n}x {reason}" for reason, n in reasons.most_common(3))
        found.append(Finding("failed-requests", FINDING, f"{len(failed)} of {total} requests failed ({top})"))
    ok = [r for r in requests if r["status"] == "ok"]
    empty = [r for r in ok if r["output_tokens"] == 0]
    if empty:
        found.append(Finding("empty-answers", FINDING,
                             f"{len(empty)} of {total} requests delivered no token at all"))
    counted = [r for r in ok if r["output_tokens"] > 0 and r.get("token_source") not in ("chunks", "none")]
    short = [r for r in counted if r.get("asked_tokens") and r["output_tokens"] < r["asked_tokens"]]
    if short:
        got = sorted({r["output_tokens"] for r in short})
        shown = ", ".join(str(n) for n in got[:5]) + (", ..." if len(got) > 5 else "")
        found.append(Finding("short-answers", FINDING,
                             f"{len(short)} of {total} requests delivered fewer tokens than asked "
                             f"with ignore_eos set ({shown} of {short[0]['asked_tokens']}): the server "
                             "stops answers early or ignores ignore_eos"))
    gaps = [r["max_gap_s"] for r in requests if r.get("max_gap_s") is not None]
    paused = [g for g in gaps if g > max_pause_s]
    if paused:
        found.append(Finding("mid-stream-pause", FINDING,
                             f"{len(paused)} of {total} requests paused mid-stream longer than "
                             f"{max_pause_s:g} s (longest {max(paused):.1f} s): a client sees the "
                             "answer freeze"))
    uncounted = [r for r in ok if r.get("token_source") in ("chunks", "none", "tokenize")
                 and r["output_tokens"]]
    if uncounted:
        recounted = any(r.get("token_source") == "tokenize" for r in requests)
        found.append(Finding("no-token-counts", FINDING,
                             f"{len(uncounted)} of {total} answers carried no usage and no token ids "
                             "although both were asked: a client cannot count what it received; "
                             + ("their tokens were recounted through the server's /tokenize"
                                if recounted else "their tokens are counted as chunks with text, "
                                "which undercounts chunks of several tokens (no /tokenize)")))
    return found


def _acceptance(windows: list[dict]) -> list[Finding]:
    """Speculative acceptance window by window: a window far below the best one before it, or
    near zero, has collapsed (the drafter proposes and the target refuses nearly everything)."""
    best = None
    for number, window in enumerate(windows):
        rate = window.get("acceptance_rate")
        if rate is None or (window.get("draft_tokens") or 0) < MIN_DRAFT_TOKENS:
            continue
        if best is not None and (rate < COLLAPSE_FLOOR or rate < best * COLLAPSE_SHARE):
            return [Finding("acceptance-collapse", FINDING,
                            f"speculative acceptance fell to {rate:.3f} in window {number + 1} of "
                            f"{len(windows)} (best earlier window {best:.3f}; from the "
                            "vllm:spec_decode_* counters): the drafter's tokens are being refused, "
                            "every step pays for drafts that are thrown away")]
        if best is None and rate < COLLAPSE_FLOOR:
            return [Finding("acceptance-collapse", FINDING,
                            f"speculative acceptance is {rate:.3f} in window {number + 1} of "
                            f"{len(windows)} (vllm:spec_decode_* counters): almost every drafted "
                            "token is refused")]
        best = rate if best is None else max(best, rate)
    return []


def _recount(recount: list[dict]) -> list[Finding]:
    off = [r for r in recount if r.get("tokenized") is not None and r["tokenized"] != r["counted"]]
    if not off:
        return []
    example = off[0]
    return [Finding("recount-differs", CAVEAT,
                    f"/tokenize counts other totals than the chunks for {len(off)} of {len(recount)} "
                    f"answers (e.g. {example['tokenized']} tokens where {example['counted']} chunks "
                    "with text arrived): the chunk count is not the token count, use the recount")]
