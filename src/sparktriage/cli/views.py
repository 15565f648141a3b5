"""Rich views of core documents for the terminal: the delivered-token table, the reconciliation."""

from __future__ import annotations


def _s(value: float | None, digits: int = 1) -> str:
    return "-" if value is None else f"{value:.{digits}f}"


def _clock(text: str | None) -> str:
    return "-" if not text else text[11:23] if len(text) > 19 else text


def render_table(document: dict) -> Table:
    from rich.table import Table
    table = Table(title=f"Delivered tokens: {document['model']} at {document['endpoint']}")
    for column in ("workload", "n", "decode tok/s", "95% CI", "median", "MAD", "TTFT s",
                   "e2e tok/s", "failed"):
        table.add_column(column, justify="right" if column != "workload" else "left")
    for w in document["workloads"]:
        s = w["summary"]
        d = s["decode_tok_s"]
        ci = "-" if d["ci95_low"] is None else f"{d['ci95_low']:.1f}–{d['ci95_high']:.1f}"
        table.add_row(w["name"], str(d["n"]), _s(d["mean"]), ci, _s(d["median"]),
                      _s(d["mad"]), _s(s["ttft_s"]["mean"], 3), _s(s["e2e_tok_s"]["mean"]),
                      str(s["counts"]["error"] + s["counts"]["incomplete"]))
    return table


def render_reconcile(doc: dict) -> Group:
    """The human-readable view of a reconciliation (bench --log/--metrics)."""
    from rich.console import Group
    from rich.table import Table
    from rich.text import Text
    d = doc["delivered"]
    parts: list = [Text(f"Reconciliation: {doc['verdict']}", style="bold")]
    parts.append(Text(f"delivered: {d['tokens']} tokens in {d['requests']} requests, "
                      f"{d['chunks']} chunks, decode mean {_s(d['decode_tok_s_mean'])} tok/s"))
    m = doc.get("metrics")
    if m and m.get("generation_tokens") is not None:
        parts.append(Text(f"/metrics: vllm:generation_tokens_total rose by "
                          f"{m['generation_tokens']:.0f} over the protocol windows "
                          f"(difference {m['difference_tokens']:+.0f})"))
    log = doc.get("log")
    if log and log["windows"]:
        table = Table(title="Log windows vs tokens delivered in them", title_justify="left")
        for column in ("end", "s", "log tok/s", "log tokens", "delivered", "busy", "verdict"):
            table.add_column(column, justify="left" if column in ("end", "verdict") else "right")
        for w in log["windows"]:
            table.add_row(_clock(w["end"]), _s(w["seconds"]), _s(w["logged_tok_s"]),
                          _s(w["logged_tokens"], 0), str(w["delivered_tokens"]),
                          f"{100 * w['decode_busy_fraction']:.0f}%", w["verdict"])
        parts.append(table)
    for r in doc["reasons"]:
        parts.append(Text(f"- {r['text']}"))
    return Group(*parts)
