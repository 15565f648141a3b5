"""The delivered-token table of a `bench` document (a terminal-free `Table`; cli/ draws it)."""

from __future__ import annotations

from sparktriage.view import Table, num

COLUMNS = ("workload", "n", "decode tok/s", "95% CI", "median", "MAD", "TTFT s", "e2e tok/s",
           "failed")


def delivered_table(document: dict) -> Table:
    """One row per workload: decode rate with its interval, TTFT, end-to-end rate, failures."""
    rows = []
    for w in document["workloads"]:
        s = w["summary"]
        d = s["decode_tok_s"]
        ci = "-" if d["ci95_low"] is None else f"{d['ci95_low']:.1f}–{d['ci95_high']:.1f}"
        rows.append((w["name"], str(d["n"]), num(d["mean"]), ci, num(d["median"]), num(d["mad"]),
                     num(s["ttft_s"]["mean"], 3), num(s["e2e_tok_s"]["mean"]),
                     str(s["counts"]["error"] + s["counts"]["incomplete"])))
    return Table(f"Delivered tokens: {document['model']} at {document['endpoint']}", COLUMNS,
                 tuple(rows), right=frozenset(COLUMNS) - {"workload"})


__all__ = ["delivered_table"]
