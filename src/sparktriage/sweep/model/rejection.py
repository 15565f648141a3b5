"""One sentence a client can follow on why the depth model was rejected.

It names the term of the model that did not fit (the step-cost curve, the acceptance counts,
the drafts' length) and what the launches measured against what the model allowed, e.g. "the
step-cost curve did not fit: launches measured verify steps 1.41x a plain step at depth 3 where
the model allowed at most 1.30x". The figures come from the model over every launch made
(sweep.model.depth's `DepthModel`, after the rejection too: the black-box rule goes on launching),
so the sentence says what all of them measured; where they no longer show the misfit that rejected
the model, it says after which launch which check failed and why. `sweep.json` carries it as
`model.rejection` (docs/formats.md), page one shows it.
"""

from __future__ import annotations

import math
from typing import Any

# the model is sweep.model.depth.DepthModel; it is not imported here, since model.py imports this module
DepthModel = Any

TERMS = {"step_ratios": "the step-cost curve", "lack_of_fit": "the step-cost curve",
         "jump": "the step-cost curve", "monotone": "the step-cost curve",
         "contender": "the step-cost curve where it decides",
         "drafter": "the acceptance term (every depth read off the deepest depth's counts)",
         "short_drafts": "the acceptance term (drafts as long as the depth)"}


def _x(value: float) -> str:
    return f"{value:.2f}x"


def _allowed(low: float, high: float, measured: float) -> str:
    if measured > high:
        return f"at most {_x(high)}"
    if measured < low:
        return f"at least {_x(low)}"
    return f"{_x(low)}-{_x(high)}"


def _from_ratios(model: DepthModel) -> str | None:
    """The ratio (inside launches) furthest outside what the curve allows over its set."""
    fit = model.ratios
    if fit is None:
        return None
    worst = None
    for p in fit.points:
        low, high = fit.allowed(p)
        measured = math.exp(p.y)
        off = max(math.log(low) - p.y, p.y - math.log(high), 0.0) / p.sd
        if off > 0 and (worst is None or off > worst[0]):
            worst = (off, p, measured, low, high)
    if worst is None:
        return None
    _, p, measured, low, high = worst
    what = ("steps serving two sequences " + _x(measured) + " a step serving one"
            if p.kind == "pair" else "verify steps " + _x(measured) + " a plain step")
    return (f"launches measured {what} at depth {p.depth} (inside launch {p.label}) where the "
            f"model allowed {_allowed(low, high, measured)}")


def _from_launches(model: DepthModel) -> str | None:
    """The depth whose launches' mean step, over depth 0's, is furthest outside the curve's
    range over its set."""
    fit = model.steps
    if fit is None or not fit.sigma:
        return None
    groups: dict[int, list[tuple[float, float]]] = {}
    for p in fit.points:
        groups.setdefault(p.depth, []).append((p.y, p.share))
    if 0 not in groups:
        return None
    base = sum(y for y, _ in groups[0]) / len(groups[0])
    worst = None
    for depth, rows in groups.items():
        if depth == 0:
            continue
        share = sum(q for _, q in rows) / len(rows)
        measured = math.exp(sum(y for y, _ in rows) / len(rows) - base)
        points = fit.candidates(4)
        values = [math.exp(fit.log_h(depth, c, share)) for c in points]
        low, high = min(values), max(values)
        se = fit.sigma * math.sqrt(1.0 / len(rows) + 1.0 / len(groups[0]))
        off = max(math.log(low / measured), math.log(measured / high), 0.0) / se
        if off > 0 and (worst is None or off > worst[0]):
            worst = (off, depth, measured, low, high, len(rows))
    if worst is None:
        return None
    _, depth, measured, low, high, n = worst
    return (f"launches measured steps at depth {depth} {_x(measured)} a plain step (the mean of "
            f"{n} launch{'es' if n > 1 else ''} over depth 0's) where the model allowed "
            f"{_allowed(low, high, measured)}")


def _from_acceptance(model: DepthModel, name: str) -> str | None:
    check = next((c for c in model.checks if c.name == name and c.passed is False), None)
    if check is None:
        return None
    figures = check.figures
    if name == "drafter":
        rows = figures.get("positions") or []
        if not rows:
            return None
        w = max(rows, key=lambda r: abs(r["z"]))
        return (f"launches at depth {w['depth']} accepted draft position {w['position']} in "
                f"{w['rate']:.0%} of drafts where depth {figures.get('reference_depth')}'s counts, "
                f"which the model reads every depth from, gave {w['reference_rate']:.0%}")
    lengths = {int(d): v for d, v in (figures.get("mean_draft_length") or {}).items()
               if v is not None and int(d) > 0 and v < int(d) * 0.95}
    if not lengths:
        return None
    d = min(lengths)
    return (f"drafts at depth {d} proposed {lengths[d]:.2f} tokens on average where the model "
            f"assumes {d}")


def sentence(model: DepthModel) -> str | None:
    """The sentence (None unless the model is rejected); module doc."""
    if model.state != "rejected":
        return None
    name = (model.rejected_by or "").replace(" (gate)", "")
    term = TERMS.get(name, "the depth model")
    found = None
    if name in ("drafter", "short_drafts"):
        found = _from_acceptance(model, name)
    elif name == "step_ratios":
        found = _from_ratios(model) or _from_launches(model)
    elif name in TERMS:
        found = _from_launches(model)
    if found is None:
        after = f" after launch {model.rejected_after}" if model.rejected_after else ""
        return f"{term[0].upper()}{term[1:]} did not fit{after}: {model.reason}."
    return f"{term[0].upper()}{term[1:]} did not fit: {found}."
