"""The probe document as text for a terminal: verdict, pattern, families, advice."""

from __future__ import annotations

from sparktriage.probe.family import fmt
from sparktriage.view import View

_MARK = {"ok": "ok", "suspect": "SUSPECT", "garbage": "GARBAGE", "skipped": "skipped"}


def render(doc: dict) -> View:
    """The probe document's verdict, evidence per family, limitations and advice."""
    lines = [f"verdict: {doc['verdict'].upper()}"
             + (f"  (pattern {doc['pattern']}: {doc['pattern_name']})" if doc.get("pattern") else "")]
    lines.append(f"model {doc['model']} at {doc['endpoint']}; {doc['tokens_spent']} tokens, "
                 f"{fmt(doc['wall_s'], 1)} s; confidence {doc['confidence']}")
    base = doc.get("baseline")
    if base:
        lines.append(f"compared with: {base.get('path') or base.get('url')}")
    for reason in doc["reasons"]:
        lines.append(f"  because {reason}")
    for fam in doc["families"]:
        lines.append(f"{fam['name']:>13}: {_MARK[fam['status']]}")
        for item in fam["evidence"][:4]:
            lines.append(f"               - {item}")
    for item in doc["limitations"]:
        lines.append(f"limitation: {item}")
    for item in doc["advice"]:
        lines.append(f"try: {item}")
    return View.of_lines(lines)
