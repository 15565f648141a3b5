"""Text for reportlab: the section model's spans as Helvetica paragraph markup.

The PDF's standard fonts cover the cp1252 repertoire: other characters are transliterated
(`≥` → `>=`, `√n` → `sqrt(n)`) or replaced by `?`; everything is XML-escaped for reportlab's
paragraph markup; strong, em and code spans become bold, italic and Courier. Text from data is
shown as the Markdown shows it (a backtick as `'`, a line break as a space) and clipped at a
sentence end after MAX_CELL characters, the cut marked with the model's CLIPPED words; the
report's own words, and paragraphs marked whole, are never cut. Table headers get columns wide
enough for their longest word (`fit_headers`).
"""

from __future__ import annotations

import re
from xml.sax.saxutils import escape

from sparktriage.report.format import cell
from sparktriage.report.outline.blocks import CLIPPED, Span, Text

MAX_CELL = 600  # characters of one table cell or span from data; the rest is in report.md
HEADER_FONT, HEADER_SIZE, CELL_PADDING = "Helvetica-Bold", 7.5, 6.0
_CONTROL = re.compile(r"[\x00-\x08\x0b-\x1f\x7f]")
_SENTENCE_END = re.compile(r"[.;:!?](?=\s)")
_ROOT = re.compile(r"√\(?([A-Za-z0-9_]+)\)?")  # √n -> sqrt(n), never "sqrtn"
_DATA = str.maketrans({"\n": " ", "\r": " ", "`": "'"})
_STYLE = {"": ("", ""), "strong": ("<b>", "</b>"), "em": ("<i>", "</i>"),
          "code": ('<font face="Courier">', "</font>")}


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
    return head[:cut if cut > 0 else limit].rstrip() + " " + CLIPPED


def _ascii_math(raw: str) -> str:
    raw = _ROOT.sub(r"sqrt(\1)", raw)
    return (raw.replace("≥", ">=").replace("≤", "<=").replace("→", "->").replace("√", "sqrt")
            .replace("−", "-"))


def as_cp1252(text: str, limit: int | None = None) -> str:
    """Text in the standard fonts' repertoire, clipped to `limit` characters when given."""
    return _ascii_math(_clip(text, limit)).encode("cp1252", errors="replace").decode("cp1252")


def escaped(text: str, limit: int | None = None) -> str:
    """`as_cp1252` text, XML-escaped for a reportlab paragraph."""
    return escape(as_cp1252(text, limit))


def data_text(value: str) -> str:
    """Text from data as every rendering shows it: controls escaped, no backtick, one line."""
    return cell(value).translate(_DATA)


def _span(span: Span, whole: bool) -> str:
    if span.own:
        body = escaped(span.text)
    else:
        body = escaped(data_text(span.text), None if whole else MAX_CELL)
    start, end = _STYLE[span.style]
    return f"{start}{body}{end}"


def markup(text: Text, whole: bool = False) -> str:
    """Spans as reportlab paragraph markup; `whole` keeps data spans uncut."""
    return "".join(_span(span, whole) for span in text)


def fit_headers(header: list[str], col: list[float]) -> list[float]:
    """Column widths (same total) in which every header word fits on one line: a column too
    narrow for its longest header word takes the room from columns that have it to spare."""
    from reportlab.pdfbase.pdfmetrics import stringWidth

    need = [max((stringWidth(word, HEADER_FONT, HEADER_SIZE) for word in as_cp1252(h).split()),
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


__all__ = ["MAX_CELL", "as_cp1252", "data_text", "escaped", "fit_headers", "markup"]
