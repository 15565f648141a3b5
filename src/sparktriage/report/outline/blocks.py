"""The types of the section model: what a report says, as blocks no renderer has to word.

A report is an `Outline`: a title and a list of `Section`s, each a list of blocks: `Heading`,
`Paragraph`, `Bullets`, `Fields`, `Table`, `Code`, `Figure`, `PageBreak` and `Abridged`. Text is
a tuple of `Span`s (plain, strong, emphasised or code), each either the report's own words
(`own=True`: printed as written, never clipped) or text that came from the run directory
(escaped for the medium, and clipped where a page must stay readable). Markdown, PDF and HTML
(report/markdown.py, pdf.py, html.py) lay these blocks out and add no word of their own.

`Abridged` carries the same content twice, `full` for a rendering that keeps every row
(Markdown, HTML) and `short` for one with pages (the PDF); the short version's words are built
here too, and `in_order` lists the blocks as one or the other medium reads them. The helpers
below make Text (`own`, `data`, `strong`, `code`, `words`, `prose`, `joined`) and the
blocks every section uses (`table`, `missing`, `figure`).
"""

from __future__ import annotations

import re
from dataclasses import dataclass
from typing import Union

from sparktriage.report.format import cell

STYLES = ("", "strong", "em", "code")
CLIPPED = "[... in report.md]"  # marks data text a paged rendering had to cut


@dataclass(frozen=True)
class Span:
    """A run of text in one style; `own` for the report's own words, else text from data."""

    text: str
    style: str = ""  # one of STYLES
    own: bool = False


Text = tuple[Span, ...]


@dataclass(frozen=True)
class Heading:
    level: int  # 1 the report, 2 a section, 3 a part of it, 4 an item (a finding)
    text: Text


@dataclass(frozen=True)
class Paragraph:
    text: Text
    note: bool = False  # secondary text (a paged rendering sets it smaller)
    whole: bool = False  # never clipped, though it holds data (the verification paragraph)


@dataclass(frozen=True)
class Bullets:
    items: tuple[Text, ...]
    note: bool = False


@dataclass(frozen=True)
class Fields:
    """Labelled facts of one item (a finding): `label: value`, in order; labels may repeat."""

    items: tuple[tuple[str, Text], ...]


@dataclass(frozen=True)
class Table:
    header: tuple[str, ...]
    rows: tuple[tuple[str, ...], ...]  # cell text from data
    widths: tuple[float, ...] | None = None  # relative column widths, a hint (sums to 1)


@dataclass(frozen=True)
class Code:
    """Lines to be typed as they are (commands, a key line)."""

    lines: tuple[str, ...]


@dataclass(frozen=True)
class Figure:
    file: str  # `plots/<name>.png` in the report folder
    title: str
    caption: str

    @property
    def name(self) -> str:
        return self.file.rsplit("/", 1)[-1]


@dataclass(frozen=True)
class PageBreak:
    """A new page here, where the medium has pages."""


@dataclass(frozen=True)
class Abridged:
    """The same content for a rendering that keeps everything (`full`) and one with pages
    (`short`: e.g. one table of phase durations instead of one table per launch)."""

    full: tuple["Block", ...]
    short: tuple["Block", ...]


Block = Union[Heading, Paragraph, Bullets, Fields, Table, Code, Figure, PageBreak, Abridged]


@dataclass(frozen=True)
class Section:
    key: str  # "page_one", "summary", a report.json section name, "methodology", ...
    blocks: tuple[Block, ...]


@dataclass(frozen=True)
class Outline:
    """The whole report, in reading order."""

    title: str  # the document's title (PDF metadata, HTML <title>)
    subject: str
    generated_at: str  # ISO 8601 UTC, the report's build time
    tool_version: str
    page_label: str  # a paged rendering's footer; `{page}` is the page number
    sections: tuple[Section, ...]


def in_order(part: Outline | Section, paged: bool = False) -> list[Block]:
    """Every block in order with `Abridged` resolved: its `short` blocks when `paged`, else `full`."""
    items = part.blocks if isinstance(part, Section) else [b for s in part.sections for b in s.blocks]
    out: list[Block] = []
    for block in items:
        if isinstance(block, Abridged):
            out += in_order(Section("", block.short if paged else block.full), paged)
        else:
            out.append(block)
    return out


# ---- making Text -------------------------------------------------------------------------------
def own(text: str) -> Span:
    return Span(text, "", True)


def data(value: str) -> Span:
    return Span(value, "", False)


def strong(value: str, own_words: bool = True) -> Span:
    return Span(value, "strong", own_words)


def code(value: str, own_words: bool = True) -> Span:
    return Span(value, "code", own_words)


def words(*parts: str | Span) -> Text:
    """Text from parts: a str is the report's own words, a Span is kept as it is."""
    return tuple(own(p) if isinstance(p, str) else p for p in parts if p != "")


_CODE = re.compile(r"`([^`\n]+)`")


def prose(text: str) -> Text:
    """The report's own paragraph (methodology) with its `code` spans as code."""
    out: list[Span] = []
    at = 0
    for match in _CODE.finditer(text):
        out += [own(text[at:match.start()]), code(match.group(1))]
        at = match.end()
    return tuple(s for s in out + [own(text[at:])] if s.text)


def joined(items: list[Span], separator: str = ", ") -> list[Span]:
    """Spans with the report's separator between them."""
    out: list[Span] = []
    for i, item in enumerate(items):
        out += ([own(separator)] if i else []) + [item]
    return out


def plain(text: Text) -> str:
    """The words of a Text, without styles."""
    return "".join(s.text for s in text)


# ---- blocks every section uses -----------------------------------------------------------------
def table(header: list[str], rows: list[list], widths: tuple[float, ...] | None = None) -> Table:
    """A table with every cell as text (numbers and null as the report writes them)."""
    return Table(tuple(header), tuple(tuple(cell(c) for c in row) for row in rows), widths)


def missing(section: dict) -> Paragraph:
    """The one wording of a missing section: why, where it would be, what produces it."""
    return Paragraph(words(strong("Missing."), " ", data(section["reason"]), ". It would be in ",
                           *joined([code(f) for f in section["files"]]), "; produce it with: ",
                           data(section["produce_with"]), "."))


def figure(doc: dict, name: str) -> list[Figure]:
    """The plot `plots/<name>` as a figure, when the report drew it."""
    return [Figure(p["file"], p["title"], p["caption"]) for p in doc["plots"] if p["file"] == f"plots/{name}"][:1]


__all__ = ["Abridged", "Block", "Bullets", "CLIPPED", "Code", "Fields", "Figure", "Heading",
           "Outline", "PageBreak", "Paragraph", "Section", "Span", "Table", "Text", "in_order",
           "code", "data", "figure", "joined", "missing", "own", "plain", "prose", "strong",
           "table", "words"]
