"""Decide a speculative depth from the launches of a sweep; build `sweep.json`.

The launch is the unit of replication (design §6): a depth's rate is the mean of its launches'
delivered decode rates (each the mean of that launch's measured requests of the deciding
workload), and depths are compared with Welch's t-test over launch means (stats.compare). The
rules, in order (docs/sweep.md):

0. the rate is the delivered decode rate; when some launch has none (responses delivered in one
   burst, e.g. behind a buffering proxy or on a starved client), every launch is compared on its
   end-to-end rate instead (`basis: "e2e"`);
1. the depth with the highest mean is the candidate;
2. when the candidate is depth 0, or depth 0 was not measured, the candidate is the answer
   (provisional without depth 0, or with a single launch on some depth);
3. with at least two launches on both sides, the candidate is adopted only when it beats depth 0
   significantly; otherwise depth 0 stays ("keep the simpler configuration");
4. with a single launch on either side no test is possible: the candidate is given as
   *provisional*, with the size of launch-to-launch variation that could undo it.
"""

from __future__ import annotations

from dataclasses import dataclass

from sparktriage.stats.compare import welch
from sparktriage.store.rundir import SCHEMA_VERSION


@dataclass(frozen=True)
class LaunchRate:
    """One launch of a sweep: its label, delivered decode tok/s and mean acceptance length."""

    label: str
    delivered_tok_s: float | None
    acceptance_length: float | None = None
    e2e_tok_s: float | None = None


def _basis(depths: dict[int, list[LaunchRate]]) -> str:
    """`decode` when every launch has a delivered decode rate, else `e2e` for all of them
    (a server or proxy that delivers whole responses in one burst has no decode interval)."""
    launches = [l for group in depths.values() for l in group]
    if all(l.delivered_tok_s is not None for l in launches):
        return "decode"
    return "e2e" if all(l.e2e_tok_s is not None for l in launches) else "decode"


def _rate(launch: LaunchRate, basis: str) -> float | None:
    return launch.delivered_tok_s if basis == "decode" else launch.e2e_tok_s


def _mean(values: list[float]) -> float | None:
    return sum(values) / len(values) if values else None


def decide(depths: dict[int, list[LaunchRate]]) -> dict:
    """The `decision` object of sweep.json: {depth, provisional, basis, reason, comparison}."""
    decision = _decide(depths)
    basis = _basis(depths)
    if basis == "e2e" and decision["depth"] is not None:
        decision["reason"] += ("; rates are end-to-end tok/s because some launch delivered its "
                               "responses in bursts, with no decode interval")
    return {**decision, "basis": basis}


def _decide(depths: dict[int, list[LaunchRate]]) -> dict:
    basis = _basis(depths)
    rates = {d: [r for l in launches if (r := _rate(l, basis)) is not None]
             for d, launches in depths.items()}
    measured = {d: r for d, r in rates.items() if r}
    if not measured:
        return {"depth": None, "provisional": True, "comparison": None,
                "reason": "no launch delivered a measured rate: nothing to decide"}
    candidate = max(measured, key=lambda d: (_mean(measured[d]), -d))
    single = any(len(r) < 2 for r in measured.values())
    if candidate == 0 or 0 not in measured:
        only = "only depth measured" if len(measured) == 1 else "highest mean rate"
        against = "" if 0 in measured else "; depth 0 was not measured, so no gain is shown"
        repeat = "; a single launch on some depth: repeat each depth (--launches 3) to confirm" \
            if single and len(measured) > 1 else ""
        return {"depth": candidate, "provisional": 0 not in measured or (single and len(measured) > 1),
                "comparison": None, "reason": f"{only}{against}{repeat}"}
    comparison = welch(measured[0], measured[candidate])
    gain = comparison.relative or 0.0
    if len(measured[0]) >= 2 and len(measured[candidate]) >= 2:
        if comparison.significant:
            return {"depth": candidate, "provisional": False, "comparison": comparison.as_dict(),
                    "reason": f"highest mean rate, {gain * 100:+.1f}% against depth 0; "
                              f"{comparison.verdict}"}
        return {"depth": 0, "provisional": False, "comparison": comparison.as_dict(),
                "reason": f"depth {candidate} had the highest mean ({gain * 100:+.1f}%) but does not "
                          f"beat depth 0 significantly ({comparison.verdict}): keep the simpler "
                          "configuration"}
    return {"depth": candidate, "provisional": True, "comparison": comparison.as_dict(),
            "reason": f"highest mean rate, {gain * 100:+.1f}% against depth 0, from a single "
                      "launch on at least one side: launches of one setup differ by several percent "
                      "(field data: 25.9 to 28.4 tok/s over four launches), so repeat each depth "
                      "(--launches 3) before adopting it"}


def sweep_document(method: str, workload: str, depths: dict[int, list[LaunchRate]]) -> dict:
    """`sweep.json` (docs/formats.md): every launch per depth and the decision."""
    return {
        "schema_version": SCHEMA_VERSION, "kind": "sweep", "method": method, "workload": workload,
        "depths": [{"depth": d, "launches": [{"label": l.label, "delivered_tok_s": l.delivered_tok_s,
                                              "e2e_tok_s": l.e2e_tok_s,
                                              "acceptance_length": l.acceptance_length}
                                             for l in depths[d]]}
                   for d in sorted(depths)],
        "decision": decide(depths),
    }


def workload_rate(bench: dict | None, workload: str, metric: str = "decode_tok_s") -> float | None:
    """Mean of `metric` (decode_tok_s, e2e_tok_s) over the measured requests of `workload` in a
    bench document (None when absent)."""
    for w in (bench or {}).get("workloads") or []:
        if w.get("name") == workload:
            return ((w.get("summary") or {}).get(metric) or {}).get("mean")
    return None


def acceptance_length(logs: dict | None) -> float | None:
    """Mean acceptance length the server logged (logs.json spec_decode), None without one."""
    spec = (logs or {}).get("spec_decode") or {}
    value = spec.get("mean_acceptance_length")
    return float(value) if isinstance(value, (int, float)) else None
