"""Rates read back from a launch's bench document (the decision itself: sweep.allocate)."""

from __future__ import annotations


def workload_rate(bench: dict | None, workload: str, metric: str = "decode_tok_s") -> float | None:
    """Mean of `metric` (decode_tok_s, e2e_tok_s) over the measured requests of `workload` in a
    bench document (None when absent): a launch's delivered rate, one observation of its depth."""
    for w in (bench or {}).get("workloads") or []:
        if w.get("name") == workload:
            return ((w.get("summary") or {}).get(metric) or {}).get("mean")
    return None
