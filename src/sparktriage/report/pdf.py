"""Render the report document as PDF with reportlab (a pure function: document in, bytes out).

Page 1 is the diagnosis (page_one: deployment, results, ranked findings), page 2 the summary
(headline numbers, verdicts, warnings, signature); the sections follow
with tables and the same PNG plots the Markdown links. Determinism: reportlab's `invariant`
mode (the creation date is the report's generated_at, a fixed document id), the standard
Helvetica fonts (nothing embedded that could differ between machines), metadata taken only from
the redacted document (title from the deployment's name, producer from the versions),
and uncompressed page streams, so that two builds differ only in the bytes of `generated_at`
(docs/report.md explains the choice of reportlab).
"""

from __future__ import annotations

import io
import os
import re
import struct
from xml.sax.saxutils import escape

from sparktriage.report.sweep import HEADERS as SWEEP_HEADERS, sweep_lines, sweep_rows
from sparktriage.report.format import (TIME_ZONE_NOTE, when, cell, delivered_label, interval, number,
                                       percent, pool_notes, readable_key, seconds,
                                       stability_words, with_provisional)
from sparktriage.report.values import fixed
from sparktriage.report.probe_text import NUMBER_HEADERS, group_title
from sparktriage.report.probe_text import groups as probe_groups
from sparktriage.report.environment import cross_node_rows

PAGE_MARGIN = 42.0


MAX_CELL = 600  # characters of one table cell or paragraph from data; the rest is in report.md
_CONTROL = re.compile(r"[\x00-\x08\x0b-\x1f\x7f]")


_SENTENCE_END = re.compile(r"[.;:!?](?=\s)")
_ROOT = re.compile(r"√\(?([A-Za-z0-9_]+)\)?")  # √n -> sqrt(n), never "sqrtn"
_CODE = re.compile(r"`([^`\n]+)`")


def _clip(text: str, limit: int | None = MAX_CELL) -> str:
    """At most `limit` characters, cut at the end of a sentence (or a word) so that no clause
    is left hanging; the cut is marked. `limit=None` keeps the whole text (the report's own
    words, e.g. methodology, are never cut)."""
    text = _CONTROL.sub(" ", text)
    if limit is None or len(text) <= limit:
        return text
    head = text[:limit]
    ends = [m.end() for m in _SENTENCE_END.finditer(head)]
    cut = ends[-1] if ends and ends[-1] > limit // 2 else head.rfind(" ")
    return head[:cut if cut > 0 else limit].rstrip() + " [... in report.md]"


def _ascii_math(raw: str) -> str:
    raw = _ROOT.sub(r"sqrt(\1)", raw)
    return (raw.replace("≥", ">=").replace("≤", "<=").replace("→", "->").replace("√", "sqrt")
            .replace("−", "-"))


def _clean(value, limit: int | None = MAX_CELL) -> str:
    """Text safe for a Helvetica paragraph: clipped, cp1252 repertoire, XML-escaped; `code`
    spans in the text set in Courier (no literal backticks)."""
    raw = _ascii_math(_clip(cell(value), limit).replace("\r", " "))
    raw = raw.encode("cp1252", errors="replace").decode("cp1252")
    text = escape(raw).replace("\n", "<br/>")
    return _CODE.sub(r'<font face="Courier">\1</font>', text).replace("`", "'")


def _plain(text: str) -> str:
    """Text for a plain (non-Paragraph) table cell: cp1252 repertoire, no markup."""
    text = _CODE.sub(r"\1", _ascii_math(_clip(text))).replace("`", "'")
    return text.encode("cp1252", errors="replace").decode("cp1252")


HEADER_FONT, HEADER_SIZE, CELL_PADDING = "Helvetica-Bold", 7.5, 6.0


def _fit_headers(header: list[str], col: list[float]) -> list[float]:
    """Column widths (same total) in which every header word fits on one line: a column too
    narrow for its longest header word takes the room from columns that have it to spare."""
    from reportlab.pdfbase.pdfmetrics import stringWidth

    need = [max((stringWidth(word, HEADER_FONT, HEADER_SIZE) for word in _plain(h).split()),
                default=0.0) + CELL_PADDING + 1 for h in header]
    total = sum(col)
    if sum(need) > total:
        return [total * n / sum(need) for n in need]
    short = sum(max(0.0, n - c) for n, c in zip(need, col))
    if short <= 0:
        return col
    spare = [max(0.0, c - n) for n, c in zip(need, col)]
    room = sum(spare)
    return [max(c, n) - (short * sp / room if room else 0.0) for c, n, sp in zip(col, need, spare)]


class _Builder:
    def __init__(self, document: dict, plots: dict[str, bytes]) -> None:
        from reportlab.lib import colors
        from reportlab.lib.pagesizes import A4
        from reportlab.lib.styles import ParagraphStyle, getSampleStyleSheet

        self.doc = document
        self.plots = plots
        self.colors = colors
        self.width = A4[0] - 2 * PAGE_MARGIN
        base = getSampleStyleSheet()
        self.h1 = ParagraphStyle("h1", parent=base["Heading1"], fontName="Helvetica-Bold", fontSize=16)
        self.h2 = ParagraphStyle("h2", parent=base["Heading2"], fontName="Helvetica-Bold", fontSize=13,
                                 spaceBefore=10)
        self.h3 = ParagraphStyle("h3", parent=base["Heading3"], fontName="Helvetica-Bold", fontSize=10.5,
                                 spaceBefore=6)
        self.body = ParagraphStyle("body", parent=base["BodyText"], fontName="Helvetica", fontSize=9,
                                   leading=11.5)
        self.small = ParagraphStyle("small", parent=self.body, fontSize=7.5, leading=9)
        # table headers wrap between words only: a column is widened to its longest header
        # word (_fit_headers) instead of a word being split across lines
        self.head = ParagraphStyle("head", parent=self.small, splitLongWords=0)
        self.mono = ParagraphStyle("mono", parent=self.body, fontName="Courier", fontSize=7, leading=8.5)
        self.story: list = []

    # -- primitives ---------------------------------------------------------------------------
    def p(self, text, style=None, raw: bool = False, whole: bool = False) -> None:
        """A paragraph; `whole` for the report's own words (never clipped)."""
        from reportlab.platypus import Paragraph

        self.story.append(Paragraph(text if raw else _clean(text, None if whole else MAX_CELL),
                                    style or self.body))

    def heading(self, text: str, level: int = 2) -> None:
        self.p(text, {1: self.h1, 2: self.h2, 3: self.h3}[level])

    def table(self, header: list[str], rows: list[list], widths: list[float] | None = None) -> None:
        from reportlab.platypus import Paragraph, Spacer, Table, TableStyle

        if not rows:
            return
        col = [w * self.width for w in widths] if widths else [self.width / len(header)] * len(header)
        col = _fit_headers(header, col)
        # a Paragraph (wrapping, slow) only where the text may not fit its column
        fits = [int(w / 4.3) for w in col]  # Helvetica 7.5 pt: at most ~4.3 pt per character
        data = [[Paragraph(f"<b>{_clean(h)}</b>", self.head) for h in header]]
        for row in rows:
            cells = []
            for c, room in zip(row, fits):
                text = cell(c)
                cells.append(_plain(text) if len(text) <= room and "\n" not in text
                             else Paragraph(_clean(text), self.small))
            data.append(cells)
        table = Table(data, colWidths=col, repeatRows=1, hAlign="LEFT")
        table.setStyle(TableStyle([
            ("FONTNAME", (0, 1), (-1, -1), "Helvetica"), ("FONTSIZE", (0, 1), (-1, -1), 7.5),
            ("LEADING", (0, 1), (-1, -1), 9),
            ("GRID", (0, 0), (-1, -1), 0.25, self.colors.grey),
            ("BACKGROUND", (0, 0), (-1, 0), self.colors.HexColor("#e8eef6")),
            ("VALIGN", (0, 0), (-1, -1), "TOP"),
            ("LEFTPADDING", (0, 0), (-1, -1), 3), ("RIGHTPADDING", (0, 0), (-1, -1), 3),
            ("TOPPADDING", (0, 0), (-1, -1), 1.5), ("BOTTOMPADDING", (0, 0), (-1, -1), 1.5),
        ]))
        self.story += [table, Spacer(1, 6)]

    def image(self, name: str) -> None:
        from reportlab.platypus import Image, KeepTogether, Paragraph

        plot = next((p for p in self.doc["plots"] if p["file"] == f"plots/{name}"), None)
        if plot is None or name not in self.plots:
            return
        png = self.plots[name]
        w, h = struct.unpack(">II", png[16:24])
        width = self.width
        height = width * h / w
        if height > 560:
            width, height = width * 560 / height, 560
        self.story.append(KeepTogether([Image(io.BytesIO(png), width=width, height=height),
                                        Paragraph(f"<i>{_clean(plot['caption'], None)}</i>",
                                                  self.small)]))

    def missing(self, section: dict) -> None:
        self.p(f"<b>Missing.</b> {_clean(section['reason'])}. It would be in "
               f"{_clean(', '.join(section['files']))}; produce it with: "
               f"{_clean(section['produce_with'])}.", raw=True)

    # -- pages --------------------------------------------------------------------------------
    def page_one(self) -> None:
        """Page one: the diagnosis (report.json `page_one`), compact enough for one A4 page."""
        from reportlab.platypus import PageBreak

        p = self.doc.get("page_one")
        if not p:
            return
        d = self.doc
        self.heading("sparktriage report: diagnosis", 1)
        self.p(f"generated_at {when(d['generated_at'])}; launches {', '.join(d['run']['launches']) or 'none'}; "
               f"report by sparktriage {d['tool_version']}.", self.small)
        self.p(f"<b>Deployment.</b> {_clean(p['deployment']['line'])}", raw=True)
        self.p(f"<b>Protocol.</b> {_clean(p['protocol'])}", self.small, raw=True)
        self.table(["metric", "result", "notes"], [[r["metric"], r["result"], r["notes"]] for r in p["results"]],
                   [0.24, 0.4, 0.36])
        self.heading("Findings, ranked by impact", 3)
        if not p["findings"]:
            self.p("No finding in what this run measured (see Not measured for what it did not).")
        for f in p["findings"]:
            self.p(f"<b>{f['rank']}. {_clean(f['title'])}</b>", raw=True)
            self.p(f"<b>Observed:</b> {_clean(f['observed'])}. <b>Evidence:</b> "
                   f"{_clean('; '.join(f['evidence'][:2]))}. <b>Cause:</b> {_clean(f['cause'])}. "
                   f"<b>Fix:</b> {_clean(f['fix'].replace('`', ''))}. <b>Expected gain ({_clean(f['gain']['basis'])}):</b> "
                   f"{_clean(f['gain']['text'])}. <b>Confidence:</b> {_clean(f['confidence'])}.",
                   self.small, raw=True)
        self.heading("Healthy", 3)
        for line in p["healthy"] or ["nothing measured here is known healthy"]:
            self.p(f"- {line}", self.small)
        self.heading("Not measured", 3)
        for m in p["not_measured"] or [{"what": "everything page one reports on was measured", "why": "", "command": ""}]:
            self.p(f"- {m['what']}" + (f": {m['why']}; measure with: {m['command']}" if m["command"] else ""),
                   self.small)
        self.story.append(PageBreak())

    def summary(self) -> None:
        from reportlab.platypus import PageBreak

        d = self.doc
        run = d["run"]
        self.heading("Summary" if d.get("page_one") else "sparktriage report", 1)
        self.p(f"generated_at {when(d['generated_at'])} ({TIME_ZONE_NOTE}). Run created {when(run['created'])}; "
               f"launches {', '.join(run['launches']) or 'none'}; report by sparktriage {d['tool_version']}.")
        self.heading("Headline numbers", 3)
        self.table(["", "value", "what it is"], [[h["label"], h["value"], h["detail"]]
                                                for h in d["summary"]["headline"]], [0.3, 0.22, 0.48])
        self.heading("Verdicts", 3)
        self.table(["topic", "verdict", "detail"], [[v["topic"], v["verdict"], v["detail"]]
                                                   for v in d["summary"]["verdicts"]], [0.2, 0.34, 0.46])
        self.heading("Warnings", 3)
        for warning in d["warnings"][:25] or ["none"]:
            self.p(f"- {warning}", self.small)
        if len(d["warnings"]) > 25:
            self.p(f"... and {len(d['warnings']) - 25} more (report.md lists them all)", self.small)
        self.story.append(PageBreak())

    def sections(self) -> None:
        s = self.doc["sections"]
        self.heading("Deployment")
        if s["deployment"]["status"] == "missing":
            self.missing(s["deployment"])
        else:
            self.table(["setting", "value"], [[readable_key(k), v] for k, v in s["deployment"]["rows"]],
                       [0.4, 0.6])
        self.heading("Environment")
        env = s["environment"]
        if env["status"] == "missing":
            self.missing(env)
        for group in env.get("tables", []):
            self.heading(f"Launches {', '.join(group['launches'])}: {len(group['nodes'])} node(s)", 3)
            self.table(["setting", *group["nodes"]], group["rows"])
        for launch in env.get("launches", []):
            if launch["differs"]:
                rows, other = cross_node_rows(launch["differs"])
                if rows:
                    self.p(f"Launch {launch['label']}: settings that differ between nodes and can "
                           "change results:")
                    self.table(["setting", *launch["nodes"]], rows)
                if other:
                    self.p(f"{other} other captured settings differ (addresses, times, counters; "
                           "bundle/environment-diff.json in data/).", self.small)
        self._startup(s["startup"])
        self._probe(s["probe"])
        self._protocol(s["protocol"])
        self._reconciliation(s["reconciliation"])
        self._sweep(s["sweep"])
        self._roofline(s["roofline"])

    def _startup(self, section: dict) -> None:
        self.heading("Startup")
        if section["status"] == "missing":
            return self.missing(section)
        names: list[str] = []
        for launch in section["launches"]:
            for p in sorted(launch["phases"], key=lambda p: p["start"]):
                if p["name"] not in names:
                    names.append(p["name"])
        if names and len(names) <= 9:  # one row per launch and node, one column per phase
            self.p("Phase durations in seconds (report.md lists every start and end):", self.small)
            rows = []
            for launch in section["launches"]:
                for node in sorted({p["node"] or "all" for p in launch["phases"]}):
                    took = {p["name"]: p["duration_s"] for p in launch["phases"] if (p["node"] or "all") == node}
                    rows.append([launch["label"], node, seconds(launch["ready_s"]),
                                 *[number(took.get(n)) for n in names]])
            self.table(["launch", "node", "ready", *names], rows)
        for launch in section["launches"]:
            if names and len(names) <= 9 and not launch["findings"] and launch["classified"]:
                continue
            self.heading(f"Launch {launch['label']} (ready after {seconds(launch['ready_s'])})", 3)
            if not names or len(names) > 9:
                self.table(["phase", "node", "start s", "end s", "duration s"],
                           [[p["name"], p["node"] or "all", number(p["start"]), number(p["end"]),
                             number(p["duration_s"])] for p in launch["phases"]])
            if not launch["classified"]:
                self.p("Timeline only: stalls not classified (no stalls.json).")
            for f in launch["findings"]:
                self.p(f"{f['kind']} on {f['node'] or 'all nodes'}, {number(f['start'])}-{number(f['end'])} s: "
                       f"{f['id']} (confidence {cell(f['confidence'])}). Fix: {f['fix'] or '-'}")
                for line in f["evidence"]:
                    self.p(f"evidence: {line}", self.small)
                for alt in f["alternatives"]:
                    self.p(f"not {alt['id']}: {alt['why_not']}", self.small)
        classified = [l for l in section["launches"] if l["classified"]]
        if classified and not any(l["findings"] for l in classified):
            self.p("No stall found in any classified launch.")
        for plot in self.doc["plots"]:
            if plot["file"].startswith("plots/startup"):
                self.image(plot["file"][len("plots/"):])

    def _probe(self, section: dict) -> None:
        self.heading("Output quality (garbage probe)")
        if section["status"] == "missing":
            return self.missing(section)
        for labels, launch in probe_groups(section["launches"]):  # each distinct result once
            self.heading(f"{group_title(labels)}: {launch['verdict']}"
                         + (f" (pattern {launch['pattern']})" if launch["pattern"] else ""), 3)
            self.table(["family", "status", "what it checked and found"],
                       [[f["name"], f["status"], f["sentence"]] for f in launch["families"]],
                       [0.16, 0.1, 0.74])
            numbers = [row for f in launch["families"] for row in f["numbers"]]
            if numbers:
                self.table(NUMBER_HEADERS, numbers, [0.2, 0.5, 0.3])

    def _protocol(self, section: dict) -> None:
        self.heading("Delivered-token protocol")
        if section["status"] == "missing":
            return self.missing(section)
        rows = []
        for launch in section["launches"]:
            for w in launch["workloads"]:
                d = w["decode_tok_s"]
                rows.append([launch["label"], w["name"], d["n"], number(d["mean"]),
                             interval(d["ci95_low"], d["ci95_high"]), number(d["median"]),
                             number(w["ttft_s"]["mean"], 3), number(w["e2e_tok_s"]["mean"]),
                             w["counts"].get("error", 0) + w["counts"].get("incomplete", 0)])
        self.table(["launch", "workload", "n", "decode tok/s", "95% CI", "median", "TTFT s",
                    "e2e tok/s", "failed"], rows)
        self.image("delivered_per_launch.png")
        self.heading("Across launches (the launch is the unit of replication)", 3)
        self.table(["workload", "depth", "launches", "mean of means", "95% CI over launches",
                    "stability"],
                   [[p["workload"], "-" if p["depth"] is None else p["depth"], ", ".join(p["launches"]),
                     number(p["decode_tok_s"]["mean"]),
                     interval(p["decode_tok_s"]["ci95_low"], p["decode_tok_s"]["ci95_high"]),
                     stability_words(p)] for p in section["across"]])
        for note in pool_notes(section["across"]):
            self.p(f"- {note}", self.small)

    def _reconciliation(self, section: dict) -> None:
        self.heading("Delivered vs logged")
        if section["status"] == "missing":
            self.missing(section)
        else:
            self.table(["launch", "delivered mean (workload)", "log mean", "log active", "log peak",
                        "peak / delivered", "acceptance length", "verdict"],
                       [[r["label"], delivered_label(r), number(r["logged_mean"]),
                         number(r["logged_mean_active"]), number(r["logged_peak"]),
                         number(r["peak_over_delivered"], 2), number(r["acceptance_length"], 2),
                         r["verdict"] or "-"] for r in section["launches"]])
            for r in section["launches"]:
                for reason in r["reasons"]:
                    self.p(f"{r['label']}: {reason}", self.small)
        self.image("delivered_vs_logged.png")

    def _sweep(self, section: dict) -> None:
        self.heading("Speculative-depth sweep")
        if section["status"] == "missing":
            return self.missing(section)
        self.p(f"Method {section['method'] or '?'}, decided on workload {section['workload'] or '?'}; "
               f"rates are {section['rates']} per launch.")
        self.table(SWEEP_HEADERS, sweep_rows(section))
        first, *rest = sweep_lines(section)
        self.p(with_provisional(first, section["decision"]))
        for line in rest:
            self.p(f"- {line}", self.small)
        self.image("sweep.png")

    def _roofline(self, section: dict) -> None:
        self.heading("Roofline")
        if section["status"] == "missing":
            return self.missing(section)
        self.p(f"Ceiling {fixed(section['ceiling_tok_s'], 4)} tok/s: "
               f"{fixed(section['active_param_bytes_per_token_per_node'], 4)} bytes per token per node at "
               f"{fixed(section['memory_bandwidth_bytes_s'] / 1e9, 4)} GB/s plus an interconnect floor of "
               f"{fixed(section['interconnect_floor_s'] * 1e3, 4)} ms per token.")
        self.table(["configuration", "delivered tok/s", "share of ceiling"],
                   [[f["what"], number(f["delivered_tok_s"]), percent(f["fraction"])]
                    for f in section.get("fractions", [])])
        self.p(section.get("note", ""), self.small)

    def closing(self) -> None:
        self.heading("Methodology")
        for paragraph in self.doc["methodology"]:
            self.heading(paragraph["title"], 3)
            self.p(paragraph["text"], whole=True)
        v = self.doc["verification"]
        self.heading("Verification")
        self.p(v["text"], whole=True)
        for command in v["commands"]:
            self.p(command, self.mono)
        if v["signed"]:
            self.p(f"Allowed-signers line: {v['allowed_signers_line']}", self.mono)


def _footer(canvas, doc) -> None:
    canvas.saveState()
    canvas.setFont("Helvetica", 7)
    canvas.drawRightString(doc.pagesize[0] - PAGE_MARGIN, 20, f"sparktriage report - page {doc.page}")
    canvas.restoreState()


def render(document: dict, plots: dict[str, bytes]) -> bytes:
    """The whole report as PDF bytes; `plots` maps plot file names (in plots/) to PNG bytes."""
    builder = _Builder(document, plots)
    builder.page_one()
    builder.summary()
    builder.sections()
    builder.closing()
    buffer = io.BytesIO()
    # reportlab's invariant mode dates the PDF from SOURCE_DATE_EPOCH (else 2000-01-01): set it
    # to the report's own generated_at for the build, so the PDF's creation date is the report's
    # time and depends on nothing else in the environment.
    saved = os.environ.get("SOURCE_DATE_EPOCH")
    os.environ["SOURCE_DATE_EPOCH"] = str(_epoch(document["generated_at"]))
    try:
        _build(buffer, builder, pdf_metadata(document))
    finally:
        if saved is None:
            os.environ.pop("SOURCE_DATE_EPOCH", None)
        else:
            os.environ["SOURCE_DATE_EPOCH"] = saved
    return buffer.getvalue()


def _epoch(generated_at: str) -> int:
    import datetime as _dt

    when = _dt.datetime.strptime(generated_at, "%Y-%m-%dT%H:%M:%SZ")
    return int(when.replace(tzinfo=_dt.timezone.utc).timestamp())


def pdf_metadata(document: dict) -> dict:
    """Title (the deployment's name when the run has one), subject, creator and producer."""
    rows = dict((str(k), v) for k, v in document["sections"]["deployment"].get("rows", [])
                if isinstance(k, str))
    name = rows.get("name") or rows.get("model.path")
    from reportlab import Version

    return {"title": _plain(f"sparktriage report: {name}" if name else "sparktriage report"),
            "subject": "vLLM deployment diagnostic report", "author": "sparktriage",
            "creator": f"sparktriage {document.get('tool_version') or ''}".strip(),
            "producer": f"sparktriage {document.get('tool_version') or ''} with ReportLab "
                        f"{Version}".replace("  ", " ")}


def _build(buffer: io.BytesIO, builder: _Builder, meta: dict) -> None:
    from reportlab.lib.pagesizes import A4
    from reportlab.platypus import SimpleDocTemplate

    template = SimpleDocTemplate(
        buffer, pagesize=A4, leftMargin=PAGE_MARGIN, rightMargin=PAGE_MARGIN, topMargin=PAGE_MARGIN,
        bottomMargin=PAGE_MARGIN, title=meta["title"], author=meta["author"],
        subject=meta["subject"], creator=meta["creator"], producer=meta["producer"], keywords="",
        invariant=1, pageCompression=0)
    template.build(builder.story, onFirstPage=_footer, onLaterPages=_footer)
