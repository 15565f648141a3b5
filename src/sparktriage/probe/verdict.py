"""Combine the signal families into one verdict, name the failure pattern, say what to try.

Rule (docs/garbage.md): **garbage** when the sanity family is strong, or when two different
families are strong; **suspect** when exactly one family is strong, two or more are weak, or
the baseline comparison is weak; otherwise **healthy** when a baseline was compared, and
**healthy-uncalibrated** when none was (subtle corruption cannot be excluded without one).
Requiring two independent families keeps false alarms rare: a formatting quirk moves the
known-answer family, not the likelihood one; an odd raw-text likelihood moves that one only.
"""

from __future__ import annotations

from sparktriage.probe.family import GARBAGE, OK, SKIPPED, SUSPECT, FamilyResult

PATTERNS = {
    "F1": "repetition collapse of a short fragment",
    "F2": "NaN logits (token 0 flood, NaN logprobs, HTTP 500 on logprob requests)",
    "F3": "uniform logits (every logprob equal to -ln V)",
    "F4": "token salad, wrong script or broken bytes",
    "F5": "fluent but wrong",
    "F6": "load- or shape-dependent corruption",
    "F7": "structurally empty answers",
    "F8": "chat template or tokenizer mismatch (the model itself looks fine)",
}
PRIORITY = ("F3", "F2", "F7", "F6", "F8", "F1", "F4")  # F3 first: finite, uniform logits also end at token 0
CALIBRATE = "save a baseline on a known-good launch (`sparktriage probe --save-baseline FILE`) and compare with `--baseline FILE`"
ADVICE = {
    "F1": ["relaunch with a reference MoE backend (`--moe-backend marlin`) and compare; a wrong expert "
           "output loops like this", "rule out a chat template or tokenizer mismatch: probe the completions path"],
    "F2": ["relaunch with a reference MoE/GEMM backend (`--moe-backend marlin`, `--linear-backend marlin`) "
           "and compare", "check the FP4 conversion path of this GPU (sm_121 needs software E2M1 in some builds)"],
    "F3": ["the output layer or final norm is zeroed or not loaded: check the checkpoint conversion and "
           "`--load-format`", "relaunch with `--moe-backend marlin` and compare"],
    "F4": ["relaunch with `--moe-backend marlin` (or `emulation`) and `--enforce-eager`; if that is clean, "
           "the native FP4 kernel is at fault"],
    "F5": [CALIBRATE, "relaunch with `--moe-backend marlin` (or `--enforce-eager`) and compare"],
    "F6": ["relaunch with `--enforce-eager` (no CUDA graphs / torch.compile) and without speculative decoding",
           "try an FP8 or BF16 KV cache instead of FP4, and a lower --max-num-seqs"],
    "F7": ["check the reasoning parser / Harmony format (`--reasoning-parser`) and the first generated "
           "token", "relaunch with `--moe-backend marlin`"],
    "F8": ["the completions path is healthy: check the chat template (`--chat-template`), the tokenizer "
           "files and the reasoning parser"],
}


def decide(families: list[FamilyResult]) -> tuple[str, list[str]]:
    """(verdict, the reasons that decided it)."""
    ran = {f.name: f for f in families if f.status != SKIPPED}
    strong = [f.name for f in ran.values() if f.status == GARBAGE]
    weak = [f.name for f in ran.values() if f.status == SUSPECT]
    sanity = ran.get("sanity")
    if sanity is not None and sanity.status == GARBAGE:
        return "garbage", ["logprob sanity failed: numbers no working model produces"]
    if len(strong) >= 2:
        return "garbage", [f"independent families agree: {', '.join(strong)}"]
    if strong:
        return "suspect", [f"one family is strong ({strong[0]}); a second one would make it garbage"]
    if len(weak) >= 2:
        return "suspect", [f"several families are weak: {', '.join(weak)}"]
    diff = ran.get("differential")
    if diff is not None and diff.status == SUSPECT:
        return "suspect", ["the comparison with the baseline is off"]
    if diff is not None and diff.status == OK:
        return "healthy", ["every family is within bounds, including the baseline comparison"]
    reasons = ["no family is off, but without a baseline subtle corruption (one layer, one expert, "
               "scale placement) cannot be excluded"]
    if weak:
        reasons.append(f"one weak family: {weak[0]}")
    return "healthy-uncalibrated", reasons


def pattern(verdict: str, families: list[FamilyResult]) -> str | None:
    """The failure pattern the evidence points at (None when healthy)."""
    if verdict.startswith("healthy"):
        return None
    hints: dict[str, int] = {}
    for f in families:
        if f.status in (SUSPECT, GARBAGE):
            for h in f.hints:
                hints[h] = hints.get(h, 0) + (2 if f.status == GARBAGE else 1)
    if not hints:
        return "F5"
    top = max(hints.values())  # strong evidence first, then the order of PRIORITY
    for candidate in PRIORITY:
        if hints.get(candidate) == top:
            return candidate
    return "F5"


def advice(verdict: str, pat: str | None, calibrated: bool) -> list[str]:
    """What to try next, each item once (a pattern's advice may already be the calibration)."""
    out = list(ADVICE.get(pat, [])) if pat else []
    if not calibrated and verdict != "garbage":
        out.append(CALIBRATE)
    return list(dict.fromkeys(out))


def from_documents(families: list[dict], with_baseline: bool = True) -> str:
    """The verdict of a probe document's families (optionally as if no baseline had been given)."""
    results = []
    for fam in families:
        if not with_baseline and fam["name"] == "differential":
            continue
        status = fam["status"]
        if not with_baseline:  # undo the calibration against the baseline (calibrate.py)
            status = fam.get("numbers", {}).get("uncalibrated_status", status)
        results.append(FamilyResult(fam["name"], status))
    return decide(results)[0]
