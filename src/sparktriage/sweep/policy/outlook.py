"""When a sweep ends undecided: about how many launches a 95% decision would need at these rates.

The lower bound of stats/launch_bound.py (what any rule that names a wrong depth in at most 5% of
sweeps must spend on average when it is not told the spread, as no lab is), evaluated at the
measured launch means with the pooled relative launch spread, and never under what this sweep's
own rule needs before anything settles (one launch per depth plus allocate.MIN_DF repeats for
the spread). An estimate, not a promise (the means and the spread are themselves measured): it
tells the consultant whether more launches can settle the question or whether the leading depths
are too close to tell apart at this lab's spread (docs/sweep.md, "What no rule can do").
"""

from __future__ import annotations

import math

from sparktriage.stats.launch_bound import launch_bound
from sparktriage.sweep.policy.allocate import MIN_DF

BEYOND = 1000.0  # estimates above this are said as "more than"


def outlook(means: dict[int, list[float]], cv: float | None, df: int, margin: float,
            max_launches: int | None) -> dict | None:
    """The estimate for an undecided sweep (None when the spread or the rates do not allow one)."""
    rates = {d: sum(v) / len(v) for d, v in means.items() if v}
    if cv is None or cv <= 0 or len(rates) < 2 or any(r <= 0 for r in rates.values()):
        return None
    try:
        bound = launch_bound(rates, {d: r * cv for d, r in rates.items()}, margin=margin,
                             unknown_scale=True)
    except (ValueError, ArithmeticError):  # an estimate must never cost the sweep its document
        return None
    needed = max(bound.launches, float(len(rates) + MIN_DF))
    used = sum(len(v) for v in means.values() if v)
    beyond = needed > BEYOND or math.isinf(needed)
    return {
        "launches_needed_estimate": None if beyond else round(needed, 1),
        "any_rule_bound": None if math.isinf(bound.launches) else round(bound.launches, 1),
        "beyond": BEYOND if beyond else None,
        "ok_launches": used,
        "within_budget": (not beyond and max_launches is not None and needed <= max_launches),
        "leading": bound.answer, "pooled_cv": cv, "pooled_df": df,
        "shares": {str(d): round(s, 3) for d, s in bound.shares.items()},
    }


def sentence(view: dict, max_launches: int | None) -> str:
    """The plain-words line added to an undecided decision's reason."""
    if view["launches_needed_estimate"] is None:
        needed = f"more than {view['beyond']:.0f}"
    else:
        needed = f"about {view['launches_needed_estimate']:.0f}"
    text = (f"at the measured rates and launch spread ({view['pooled_cv'] * 100:.1f}%, df "
            f"{view['pooled_df']}), settling needs {needed} ok launches on average (the lower "
            f"bound for any rule wrong in at most 5% of sweeps, and never fewer than one per depth "
            f"plus {MIN_DF} repeats here; this sweep has {view['ok_launches']})")
    if max_launches is not None and not view["within_budget"]:
        text += (f": more than the budget of {max_launches} launches, within which no rule "
                 f"settles this on average at this spread")
    return text
