"""Lay the section model out as PDF with reportlab (a pure function: outline in, bytes out).

The words are the section model's (report/outline/), the same the Markdown prints; this module
only sets them on A4 pages: type sizes, column widths, the PNG plots, a page break after page
one (the diagnosis) and after the summary, and the short version of `Abridged` blocks (one
table of phase durations instead of one table per launch). Text from data is clipped at a
sentence end where it would swamp a page (pdf_text.py). Determinism: reportlab's `invariant`
mode (the creation date is the report's generated_at, a fixed document id), the standard
Helvetica fonts (nothing embedded that could differ between machines), metadata taken only from
the outline (title, subject, versions), and uncompressed page streams, so that two builds
differ only in the bytes of `generated_at` (docs/report.md explains the choice of reportlab).
"""

from __future__ import annotations

import io
import os
import struct

from sparktriage.report.outline import build
from sparktriage.report.outline.blocks import (Block, Bullets, Code, Fields, Figure, Heading,
                                               Outline, PageBreak, Paragraph, Table, in_order)
from sparktriage.report.pdf_text import MAX_CELL, as_cp1252, data_text, escaped, fit_headers, markup

PAGE_MARGIN = 42.0
MAX_FIGURE_HEIGHT = 560.0
FIELD_GAP = " &#183; "  # a middle dot between the labelled facts of one item


class _Layout:
    """The reportlab story of an outline: one flowable (or a few) per block."""

    def __init__(self, plots: dict[str, bytes]) -> None:
        from reportlab.lib import colors
        from reportlab.lib.pagesizes import A4
        from reportlab.lib.styles import ParagraphStyle, getSampleStyleSheet

        self.plots = plots
        self.colors = colors
        self.width = A4[0] - 2 * PAGE_MARGIN
        base = getSampleStyleSheet()
        body = ParagraphStyle("body", parent=base["BodyText"], fontName="Helvetica", fontSize=9,
                              leading=11.5)
        self.body = body
        self.small = ParagraphStyle("small", parent=body, fontSize=7.5, leading=9)
        # list items sit close together, as a list does
        self.items = {False: ParagraphStyle("item", parent=body, spaceBefore=2),
                      True: ParagraphStyle("small item", parent=self.small, spaceBefore=1)}
        self.headings = {
            1: ParagraphStyle("h1", parent=base["Heading1"], fontName="Helvetica-Bold", fontSize=16),
            2: ParagraphStyle("h2", parent=base["Heading2"], fontName="Helvetica-Bold", fontSize=13,
                              spaceBefore=10),
            3: ParagraphStyle("h3", parent=base["Heading3"], fontName="Helvetica-Bold", fontSize=10.5,
                              spaceBefore=6),
            4: ParagraphStyle("h4", parent=body, fontName="Helvetica-Bold"),
        }
        # table headers wrap between words only: a column is widened to its longest header
        # word (fit_headers) instead of a word being split across lines
        self.head = ParagraphStyle("head", parent=self.small, splitLongWords=0)
        self.mono = ParagraphStyle("mono", parent=body, fontName="Courier", fontSize=7, leading=8.5)
        self.story: list = []

    def paragraph(self, text: str, style) -> None:
        from reportlab.platypus import Paragraph as Para

        self.story.append(Para(text, style))

    def add(self, item: Block) -> None:
        from reportlab.platypus import PageBreak as Break

        if isinstance(item, Heading):
            self.paragraph(markup(item.text), self.headings[min(item.level, 4)])
        elif isinstance(item, Paragraph):
            self.paragraph(markup(item.text, item.whole), self.small if item.note else self.body)
        elif isinstance(item, Bullets):
            for text in item.items:
                self.paragraph("- " + markup(text), self.items[item.note])
        elif isinstance(item, Fields):
            # run in, as a dictionary entry: page one keeps its findings on one page
            facts = [f"<b>{escaped(label)}:</b> {markup(value)}" for label, value in item.items]
            self.paragraph(FIELD_GAP.join(facts), self.small)
        elif isinstance(item, Table):
            self.table(item)
        elif isinstance(item, Code):
            for line in item.lines:
                self.paragraph(escaped(line, MAX_CELL), self.mono)
        elif isinstance(item, Figure):
            self.figure(item)
        elif isinstance(item, PageBreak):
            self.story.append(Break())
        else:
            raise TypeError(f"not a block: {item!r}")

    def table(self, item: Table) -> None:
        from reportlab.platypus import Paragraph as Para, Spacer, Table as Grid, TableStyle

        if not item.rows:
            return
        header = list(item.header)
        col = ([w * self.width for w in item.widths] if item.widths
               else [self.width / len(header)] * len(header))
        col = fit_headers(header, col)
        # a Paragraph (wrapping, slow) only where the text may not fit its column
        fits = [int(w / 4.3) for w in col]  # Helvetica 7.5 pt: at most ~4.3 pt per character
        data = [[Para(f"<b>{escaped(h)}</b>", self.head) for h in header]]
        for row in item.rows:
            shown = [data_text(c) for c in row]
            data.append([as_cp1252(c, MAX_CELL) if len(c) <= room else Para(escaped(c, MAX_CELL), self.small)
                         for c, room in zip(shown, fits)])
        grid = Grid(data, colWidths=col, repeatRows=1, hAlign="LEFT")
        grid.setStyle(TableStyle([
            ("FONTNAME", (0, 1), (-1, -1), "Helvetica"), ("FONTSIZE", (0, 1), (-1, -1), 7.5),
            ("LEADING", (0, 1), (-1, -1), 9),
            ("GRID", (0, 0), (-1, -1), 0.25, self.colors.grey),
            ("BACKGROUND", (0, 0), (-1, 0), self.colors.HexColor("#e8eef6")),
            ("VALIGN", (0, 0), (-1, -1), "TOP"),
            ("LEFTPADDING", (0, 0), (-1, -1), 3), ("RIGHTPADDING", (0, 0), (-1, -1), 3),
            ("TOPPADDING", (0, 0), (-1, -1), 1.5), ("BOTTOMPADDING", (0, 0), (-1, -1), 1.5),
        ]))
        self.story += [grid, Spacer(1, 6)]

    def figure(self, item: Figure) -> None:
        from reportlab.platypus import Image, KeepTogether, Paragraph as Para

        if item.name not in self.plots:
            return
        png = self.plots[item.name]
        w, h = struct.unpack(">II", png[16:24])
        width, height = self.width, self.width * h / w
        if height > MAX_FIGURE_HEIGHT:
            width, height = width * MAX_FIGURE_HEIGHT / height, MAX_FIGURE_HEIGHT
        caption = escaped(data_text(item.caption))
        self.story.append(KeepTogether([Image(io.BytesIO(png), width=width, height=height),
                                        Para(f"<i>{caption}</i>", self.small)]))


def render_outline(outline: Outline, plots: dict[str, bytes]) -> bytes:
    """The whole report as PDF bytes; `plots` maps plot file names (in plots/) to PNG bytes."""
    layout = _Layout(plots)
    for item in in_order(outline, paged=True):
        layout.add(item)
    buffer = io.BytesIO()
    # reportlab's invariant mode dates the PDF from SOURCE_DATE_EPOCH (else 2000-01-01): set it
    # to the report's own generated_at for the build, so the PDF's creation date is the report's
    # time and depends on nothing else in the environment.
    saved = os.environ.get("SOURCE_DATE_EPOCH")
    os.environ["SOURCE_DATE_EPOCH"] = str(_epoch(outline.generated_at))
    try:
        _build(buffer, layout.story, outline)
    finally:
        if saved is None:
            os.environ.pop("SOURCE_DATE_EPOCH", None)
        else:
            os.environ["SOURCE_DATE_EPOCH"] = saved
    return buffer.getvalue()


def render(document: dict, plots: dict[str, bytes]) -> bytes:
    """The whole report document as PDF bytes."""
    return render_outline(build(document), plots)


def _epoch(generated_at: str) -> int:
    import datetime as _dt

    when = _dt.datetime.strptime(generated_at, "%Y-%m-%dT%H:%M:%SZ")
    return int(when.replace(tzinfo=_dt.timezone.utc).timestamp())


def pdf_metadata(outline: Outline) -> dict:
    """Title (the deployment's name when the run has one), subject, creator and producer."""
    from reportlab import Version

    version = outline.tool_version
    return {"title": as_cp1252(outline.title, MAX_CELL), "subject": outline.subject, "author": "sparktriage",
            "creator": f"sparktriage {version}".strip(),
            "producer": f"sparktriage {version} with ReportLab {Version}".replace("  ", " ")}


def _build(buffer: io.BytesIO, story: list, outline: Outline) -> None:
    from reportlab.lib.pagesizes import A4
    from reportlab.platypus import SimpleDocTemplate

    meta = pdf_metadata(outline)

    def footer(canvas, doc) -> None:
        canvas.saveState()
        canvas.setFont("Helvetica", 7)
        canvas.drawRightString(doc.pagesize[0] - PAGE_MARGIN, 20, outline.page_label.format(page=doc.page))
        canvas.restoreState()

    template = SimpleDocTemplate(
        buffer, pagesize=A4, leftMargin=PAGE_MARGIN, rightMargin=PAGE_MARGIN, topMargin=PAGE_MARGIN,
        bottomMargin=PAGE_MARGIN, title=meta["title"], author=meta["author"],
        subject=meta["subject"], creator=meta["creator"], producer=meta["producer"], keywords="",
        invariant=1, pageCompression=0)
    template.build(story, onFirstPage=footer, onLaterPages=footer)


__all__ = ["pdf_metadata", "render", "render_outline"]
