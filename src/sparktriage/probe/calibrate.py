"""Judge the reference-free families against the baseline when one is given.

The absolute guards assume a capable model. A model that fails some of them even when it is
known to be good (a tiny or unusual model, a chat-only model scoring raw text badly) would
otherwise be flagged on every launch. With a baseline, a family that is off is cleared when the
baseline launch was just as far off (its own numbers, stored in the fingerprint): what is
measured then is the change, which the differential family judges. Without a baseline nothing
changes.
"""

from __future__ import annotations

import math

from sparktriage.probe.family import OK, SKIPPED, FamilyResult, fmt

BPB_SLACK, GAP_SLACK, TOP1_SLACK, FLAG_SLACK = 0.3, 0.5, 0.1, 1


def summary(families: list[FamilyResult]) -> dict:
    """The numbers of the reference-free families that a fingerprint keeps."""
    out = {}
    for f in families:
        if f.status == SKIPPED:
            continue
        n = f.numbers
        if f.name == "likelihood":
            gaps = [v for v in n.get("shuffle_gap_nats", {}).values() if math.isfinite(v)]
            out["likelihood"] = {"easy_bits_per_byte": n.get("easy_bits_per_byte"), "top1": n.get("top1"),
                                 "shuffle_gap": min(gaps) if gaps else None}
        elif f.name == "answers":
            out["answers"] = {"passed": n.get("passed"), "asked": n.get("asked"),
                              "chat_passed": n.get("chat_passed"), "chat_asked": n.get("chat_asked")}
        elif f.name == "generation":
            out["generation"] = {"flagged": n.get("flagged"), "generations": n.get("generations")}
    return out


def _finite(value) -> bool:
    return isinstance(value, (int, float)) and math.isfinite(value)


def _as_bad(name: str, here: dict, base: dict) -> str | None:
    """A reason when `here` is no worse than the baseline launch was, else None."""
    if name == "likelihood":
        checks = []
        if _finite(here.get("easy_bits_per_byte")) and _finite(base.get("easy_bits_per_byte")):
            checks.append(here["easy_bits_per_byte"] <= base["easy_bits_per_byte"] + BPB_SLACK)
        if _finite(here.get("shuffle_gap")) and _finite(base.get("shuffle_gap")):
            checks.append(here["shuffle_gap"] >= base["shuffle_gap"] - GAP_SLACK)
        if _finite(here.get("top1")) and _finite(base.get("top1")):
            checks.append(here["top1"] >= base["top1"] - TOP1_SLACK)
        if checks and all(checks):
            return (f"the baseline launch scored the same (easiest passage {fmt(base.get('easy_bits_per_byte'))} "
                    f"bits/byte, shuffle gap {fmt(base.get('shuffle_gap'))})")
    elif name == "answers":
        if here.get("asked") and base.get("asked"):
            b, c, n = base["passed"] / base["asked"], here["passed"] / here["asked"], here["asked"]
            se = math.sqrt(max(b * (1 - b), 1 / n) / n + max(c * (1 - c), 1 / n) / n)
            chat_ok = True
            if here.get("chat_asked") and base.get("chat_asked"):
                chat_ok = here["chat_passed"] / here["chat_asked"] >= base["chat_passed"] / base["chat_asked"] - 0.25
            if c >= b - 2 * se and chat_ok:
                return f"the baseline launch passed {base['passed']}/{base['asked']}"
    elif name == "generation":
        if _finite(here.get("flagged")) and _finite(base.get("flagged")) and here["flagged"] <= base["flagged"] + FLAG_SLACK:
            return f"the baseline launch had {base['flagged']} flagged generations"
    return None


def apply(families: list[FamilyResult], baseline_summary: dict | None) -> list[str]:
    """Clear families that are off only as much as on the baseline; return what was cleared."""
    if not baseline_summary:
        return []
    here = summary(families)
    cleared = []
    for f in families:
        if f.status in (OK, SKIPPED) or f.name not in here or f.name not in baseline_summary:
            continue
        reason = _as_bad(f.name, here[f.name], baseline_summary[f.name])
        if reason:
            f.evidence.append(f"not counted: {reason}")
            f.numbers["uncalibrated_status"] = f.status
            f.status = OK
            f.hints.clear()
            cleared.append(f.name)
    return cleared
