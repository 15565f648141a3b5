"""The human-readable view of a reconciliation document (a terminal-free `View`; cli/ draws it)."""

from __future__ import annotations

from sparktriage.view import Table, View, clock, num

WINDOW_COLUMNS = ("end", "s", "log tok/s", "log tokens", "delivered", "busy", "verdict")


def render(doc: dict) -> View:
    """Verdict, delivered totals, the /metrics delta, the log's windows, and the reasons."""
    d = doc["delivered"]
    view = View().line(f"Reconciliation: {doc['verdict']}", "bold")
    view.line(f"delivered: {d['tokens']} tokens in {d['requests']} requests, {d['chunks']} "
              f"chunks, decode mean {num(d['decode_tok_s_mean'])} tok/s"
              + (f" ({d['decode_workload']}, {d.get('decode_requests')} requests)"
                 if d.get("decode_workload") else ""))
    m = doc.get("metrics")
    if m and m.get("generation_tokens") is not None:
        view.line(f"/metrics: vllm:generation_tokens_total rose by {m['generation_tokens']:.0f} "
                  f"over the protocol windows (difference {m['difference_tokens']:+.0f})")
    log = doc.get("log")
    if log and log["windows"]:
        rows = tuple((clock(w["end"]), num(w["seconds"]), num(w["logged_tok_s"]),
                      num(w["logged_tokens"], 0), str(w["delivered_tokens"]),
                      f"{100 * w['decode_busy_fraction']:.0f}%", w["verdict"])
                     for w in log["windows"])
        view.table(Table("Log windows vs tokens delivered in them", WINDOW_COLUMNS, rows,
                         right=frozenset(WINDOW_COLUMNS) - {"end", "verdict"}))
    for r in doc["reasons"]:
        view.line(f"- {r['text']}")
    return view


__all__ = ["render"]
