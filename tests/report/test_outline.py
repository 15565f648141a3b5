"""The section model (report/outline/): one list of typed sections, built once from the report
document, that Markdown, PDF and HTML only lay out (issue 23, item 3).

Built from the pinned golden documents (tests/report/goldens/*/report.json): no run directory,
no build. The PDF read back with pdftotext is checked in test_goldens.py and test_pdf_text.py.
"""

from __future__ import annotations

import ast
import dataclasses
import json
import re
from html.parser import HTMLParser
from pathlib import Path

import pytest

import sparktriage.report as report_package
from sparktriage.report import html, markdown, outline
from sparktriage.report.model import SECTION_ORDER
from sparktriage.report.outline import blocks as B

GOLDENS = Path(__file__).parent / "goldens"
NAMES = sorted(p.name for p in GOLDENS.iterdir() if (p / "report.json").is_file())
READING_ORDER = ["header", "page_one", "summary", "deployment", "environment", "startup", "probe",
                 "protocol", "reconciliation", "sweep", "roofline", "methodology", "verification",
                 "files"]


def _doc(name: str) -> dict:
    return json.loads((GOLDENS / name / "report.json").read_text(encoding="utf-8"))


def _texts(item) -> list[B.Text]:
    if isinstance(item, (B.Heading, B.Paragraph)):
        return [item.text]
    if isinstance(item, B.Bullets):
        return list(item.items)
    if isinstance(item, B.Fields):
        return [value for _, value in item.items]
    return []


@pytest.mark.parametrize("name", NAMES)
def test_every_section_in_reading_order_and_every_block_typed(name):
    doc = _doc(name)
    model = outline.build(doc)
    assert [s.key for s in model.sections] == READING_ORDER
    assert [key for key, _ in outline.SECTIONS] == list(SECTION_ORDER)  # every report.json section
    kinds = (B.Heading, B.Paragraph, B.Bullets, B.Fields, B.Table, B.Code, B.Figure, B.PageBreak)
    for paged in (False, True):
        for item in B.in_order(model, paged):
            assert isinstance(item, kinds), item
            assert dataclasses.is_dataclass(item) and item.__dataclass_params__.frozen
            for text in _texts(item):
                assert text and all(isinstance(s, B.Span) and s.style in B.STYLES and isinstance(s.text, str)
                                    for s in text), item
            if isinstance(item, B.Table):
                assert all(len(row) == len(item.header) and all(isinstance(c, str) for c in row)
                           for row in item.rows), item.header
                assert item.widths is None or (len(item.widths) == len(item.header)
                                               and abs(sum(item.widths) - 1) < 1e-9)
    assert model.title == "sparktriage report" + (": synthetic-moe-fp4" if name != "selfcheck" else "")


def test_abridged_blocks_give_the_paged_rendering_its_short_version():
    model = outline.build(_doc("eight_node"))
    full, paged = B.in_order(model), B.in_order(model, paged=True)
    intro = "Phase durations in seconds (report.md lists every start and end):"
    assert intro not in [B.plain(b.text) for b in full if isinstance(b, B.Paragraph)]
    assert intro in [B.plain(b.text) for b in paged if isinstance(b, B.Paragraph)]
    per_launch = [b for b in full if isinstance(b, B.Table) and b.header[0] == "phase"]
    assert len(per_launch) == len(_doc("eight_node")["sections"]["startup"]["launches"])
    assert not [b for b in paged if isinstance(b, B.Table) and b.header[0] == "phase"]
    # the launches with a stall keep their own heading and finding in the paged version
    stalled = [l["label"] for l in _doc("eight_node")["sections"]["startup"]["launches"] if l["findings"]]
    headings = [B.plain(b.text) for b in paged if isinstance(b, B.Heading) and b.level == 3]
    assert [h for h in headings if h.startswith("Launch L")] == [f"Launch {label}" for label in stalled]
    assert sum(isinstance(b, B.PageBreak) for b in full) == 2  # after page one, after the summary


class _Headings(HTMLParser):
    def __init__(self) -> None:
        super().__init__()
        self.found: list[str] = []
        self._open = False

    def handle_starttag(self, tag, attrs):
        if re.fullmatch(r"h[1-6]", tag):
            self._open = True
            self.found.append(tag[1] + " ")

    def handle_endtag(self, tag):
        if re.fullmatch(r"h[1-6]", tag):
            self._open = False

    def handle_data(self, data):
        if self._open:
            self.found[-1] += data


@pytest.mark.parametrize("name", NAMES)
def test_markdown_and_html_lay_out_the_same_headings(name):
    model = outline.build(_doc(name))
    text = markdown.render_outline(model)
    from_md = [f"{len(m.group(1))} {m.group(2).replace('**', '')}"
               for m in re.finditer(r"^(#+) (.*)$", text, re.M)]
    parser = _Headings()
    parser.feed(html.render_outline(model, {}))
    assert parser.found == from_md
    assert from_md[:2] == ["1 sparktriage report", "2 Diagnosis"]


def test_the_markdown_prints_own_words_as_written_and_data_escaped():
    text = B.words("own | `x` ", B.data("a|b <c> `d`"), " ", B.strong("x"), B.strong(" y", False),
                   " ", B.code("p|q", False))
    assert markdown.text(text) == "own | `x` a\\|b &lt;c&gt; 'd' **x y** `p\\|q`"
    assert B.prose("run `a b` now") == (B.own("run "), B.code("a b"), B.own(" now"))


RENDERERS = ("markdown.py", "html.py", "pdf.py", "pdf_text.py")
# the vocabulary of the media themselves: markup, fonts, reportlab's table commands, the PDF's
# metadata about the software that made it; none of it is a word a reader of the report reads
MEDIUM = {
    "b", "i", "br", "em", "strong", "code", "pre", "ul", "li", "table", "thead", "tbody", "tr", "th",
    "td", "figure", "img", "alt", "src", "data", "image", "png", "base64", "html", "lang", "en",
    "head", "meta", "charset", "utf", "http", "equiv", "Content", "Security", "Policy", "content",
    "title", "style", "body", "DOCTYPE", "default", "none", "self", "unsafe", "inline", "font",
    "face", "Courier", "Helvetica", "Bold", "small", "item", "mono", "BodyText", "Heading1",
    "Heading2", "Heading3", "FONTNAME", "FONTSIZE", "LEADING", "GRID", "BACKGROUND", "VALIGN",
    "TOP", "LEFTPADDING", "RIGHTPADDING", "TOPPADDING", "BOTTOMPADDING", "LEFT", "SOURCE_DATE_EPOCH",
    "subject", "author", "creator", "producer", "sparktriage", "with", "ReportLab", "cp1252", "replace",
    "sqrt", "II", "not", "a", "block", "strong", "em", "h1", "h2", "h3", "h4", "e8eef6", "Y", "m",
    "d", "H", "M", "S", "SZ", "T", "dT", "page", "name", "lt", "gt", "h", "p", "ascii",
}
ALLOWED_CONSTANTS = {"_STYLE", "_CSP"}  # the HTML's style sheet and content policy


def _strings(path: Path) -> list[str]:
    tree = ast.parse(path.read_text(encoding="utf-8"))
    skip: set[int] = set()
    for node in ast.walk(tree):
        if isinstance(node, (ast.Module, ast.FunctionDef, ast.ClassDef)) and node.body \
                and isinstance(node.body[0], ast.Expr) and isinstance(node.body[0].value, ast.Constant):
            skip.add(id(node.body[0].value))  # docstrings
        if isinstance(node, ast.Assign) and any(isinstance(t, ast.Name) and t.id in ALLOWED_CONSTANTS
                                                for t in node.targets):
            skip |= {id(n) for n in ast.walk(node.value)}
        if isinstance(node, ast.Assign) and any(isinstance(t, ast.Name) and t.id == "__all__"
                                                for t in node.targets):
            skip |= {id(n) for n in ast.walk(node.value)}
        if isinstance(node, ast.Call) and isinstance(node.func, ast.Attribute) and node.func.attr == "compile":
            skip |= {id(n) for n in ast.walk(node)}  # regular expressions
    return [n.value for n in ast.walk(tree) if isinstance(n, ast.Constant) and isinstance(n.value, str)
            and id(n) not in skip]


@pytest.mark.parametrize("module", RENDERERS)
def test_renderers_word_nothing(module):
    """No sentence, label or header in a renderer: every word a reader reads is the model's."""
    path = Path(report_package.__file__).parent / module
    words = {w for s in _strings(path) for w in re.findall(r"[A-Za-z][A-Za-z0-9_]*", s)}
    assert words - MEDIUM == set(), module
