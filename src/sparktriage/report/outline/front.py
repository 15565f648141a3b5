"""The front of the report in blocks: the header, page one (the diagnosis) and the summary page.

Every word is taken from report.json (`run`, `page_one`, `summary`, `warnings`) or written here;
the renderers only lay these blocks out (report/outline/blocks.py).
"""

from __future__ import annotations

from sparktriage.report.format import TIME_ZONE_NOTE, when
from sparktriage.report.outline.blocks import (Abridged, Block, Bullets, Fields, Heading,
                                               PageBreak, Paragraph, Section, code, data, strong,
                                               table, words)

MAX_WARNINGS_PAGED = 25  # the summary page lists this many warnings; report.md lists them all


def header(doc: dict) -> Section:
    """The title and the lines that say when, from what and by what the report was made."""
    run = doc["run"]
    command = run["command"] if isinstance(run["command"], str) else " ".join(run["command"] or [])
    anonymized = "; host names, IPs and users anonymized" if doc["redaction"]["anonymized"] else ""
    items = [
        words(f"generated_at: {when(doc['generated_at'])} (the only field that changes when the "
              f"report is rebuilt; {TIME_ZONE_NOTE})"),
        words("run created: ", data(when(run["created"])), "; recorded by sparktriage ",
              data(run["tool_version"] or "?"), "; report by sparktriage ", data(doc["tool_version"])),
        words("launches: ", data(", ".join(run["launches"]) or "none")),
        words("command: ", code(" ".join(command.replace("`", "'").split()))) if command
        else words("command: unknown"),
        words(f"redaction: {doc['redaction'].get('secrets', 0)} secret occurrences replaced{anonymized}"),
    ]
    return Section("header", (Heading(1, words("sparktriage report")), Bullets(tuple(items), note=True)))


def _finding(f: dict) -> list[Block]:
    gain = f["gain"]
    items = [("observed", (data(f["observed"]),))]
    items += [("evidence", (data(e),)) for e in f["evidence"]]
    items += [("cause", (code(f["cause"], own_words=False),)), ("fix", (data(f["fix"]),)),
              (f"expected gain ({gain['basis']})", (data(gain["text"]),)),
              ("confidence", (data(f["confidence"]),))]
    return [Heading(4, words(f"{f['rank']}. ", data(f["title"]))), Fields(tuple(items))]


def page_one(doc: dict) -> Section | None:
    """The diagnosis: deployment, protocol, results, ranked findings, healthy areas, what was
    not measured (report.json `page_one`); None for a document without one."""
    p = doc.get("page_one")
    if not p:
        return None
    out: list[Block] = [
        Heading(2, words("Diagnosis")),
        Paragraph(words(strong("Deployment."), " ", data(p["deployment"]["line"]))),
        Paragraph(words(strong("Protocol."), " ", data(p["protocol"])), note=True),
        table(["metric", "result", "notes"], [[r["metric"], r["result"], r["notes"]] for r in p["results"]],
              (0.24, 0.4, 0.36)),
        Heading(3, words("Findings, ranked by impact")),
    ]
    if not p["findings"]:
        out.append(Paragraph(words("No finding in what this run measured (see Not measured for what "
                                   "it did not).")))
    for f in p["findings"]:
        out += _finding(f)
    healthy = [words(data(line)) for line in p["healthy"]] or [words("nothing measured here is known healthy")]
    unmeasured = [words(data(m["what"]), ": ", data(m["why"]), "; measure with: ",
                        code(m["command"], own_words=False)) for m in p["not_measured"]] \
        or [words("everything page one reports on was measured")]
    out += [Heading(3, words("Healthy")), Bullets(tuple(healthy), note=True),
            Heading(3, words("Not measured")), Bullets(tuple(unmeasured), note=True), PageBreak()]
    return Section("page_one", tuple(out))


def _warnings(doc: dict) -> list[Block]:
    every = Bullets(tuple(words(data(w)) for w in doc["warnings"]) or (words("none"),), note=True)
    extra = len(doc["warnings"]) - MAX_WARNINGS_PAGED
    if extra <= 0:
        return [every]
    first = Bullets(every.items[:MAX_WARNINGS_PAGED], note=True)
    return [Abridged((every,), (first, Paragraph(words(f"... and {extra} more (report.md lists "
                                                        "them all)"), note=True)))]


def summary(doc: dict) -> Section:
    """Headline numbers, verdicts and warnings (report.json `summary`, `warnings`)."""
    s = doc["summary"]
    out: list[Block] = [Heading(2, words("Summary")), Heading(3, words("Headline numbers"))]
    out.append(table(["", "value", "what it is"], [[h["label"], h["value"], h["detail"]] for h in s["headline"]],
                     (0.3, 0.22, 0.48)) if s["headline"]
               else Paragraph(words("No protocol results in this run.")))
    out += [Heading(3, words("Verdicts")),
            table(["topic", "verdict", "detail"], [[v["topic"], v["verdict"], v["detail"]] for v in s["verdicts"]],
                  (0.2, 0.34, 0.46)),
            Heading(3, words("Warnings")), *_warnings(doc), PageBreak()]
    return Section("summary", tuple(out))


__all__ = ["header", "page_one", "summary"]
