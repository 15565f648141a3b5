"""Lay the section model out as Markdown (a pure function: outline in, text out).

The words are the section model's (report/outline/); this module only chooses Markdown's
marks for them: `#` headings, `- ` lists, pipe tables, fenced code, `**strong**`, `*em*`,
`` `code` ``, and image links to the PNG files under `plots/`. Text that came from the run
directory is escaped so that it cannot break a table or inject HTML into a Markdown viewer; the
report's own words are printed as written. Every block is followed by one blank line.
"""

from __future__ import annotations

from sparktriage.report.format import cell
from sparktriage.report.outline import build, front
from sparktriage.report.outline.blocks import (Block, Bullets, Code, Fields, Figure, Heading,
                                               Outline, PageBreak, Paragraph, Section, Table,
                                               Text, in_order)

_ESCAPES = str.maketrans({"|": "\\|", "<": "&lt;", ">": "&gt;", "\n": " ", "\r": " ", "`": "'"})
_MARKS = {"": "", "strong": "**", "em": "*", "code": "`"}


def esc(value) -> str:
    """Text from data, safe in a Markdown paragraph or table cell."""
    return cell(value).translate(_ESCAPES)


def table(header: list[str], rows: list[list]) -> list[str]:
    lines = ["| " + " | ".join(header) + " |", "|" + "|".join("---" for _ in header) + "|"]
    lines += ["| " + " | ".join(esc(c) for c in row) + " |" for row in rows]
    return lines + [""]


def text(spans: Text) -> str:
    """Spans as inline Markdown; neighbouring spans of one style share their marks (not code)."""
    out, run, style = [], [], None
    for span in spans + (None,):
        if span is None or span.style != style or style == "code":
            if run:
                out.append(_MARKS[style] + "".join(run) + _MARKS[style])
            run, style = [], span.style if span else None
        if span is not None:
            run.append(span.text if span.own else esc(span.text))
    return "".join(out)


def block(item: Block) -> list[str]:
    """One block as lines, followed by a blank line (a page break is no line at all)."""
    if isinstance(item, Heading):
        return ["#" * item.level + " " + text(item.text), ""]
    if isinstance(item, Paragraph):
        return [text(item.text), ""]
    if isinstance(item, Bullets):
        return [f"- {text(t)}" for t in item.items] + ([""] if item.items else [])
    if isinstance(item, Fields):
        return [f"- {label}: {text(value)}" for label, value in item.items] + [""]
    if isinstance(item, Table):
        return table(list(item.header), [list(row) for row in item.rows])
    if isinstance(item, Code):
        return ["```", *item.lines, "```", ""]
    if isinstance(item, Figure):
        return [f"![{esc(item.title)}]({item.file})", "", f"*{esc(item.caption)}*", ""]
    if isinstance(item, PageBreak):
        return []
    raise TypeError(f"not a block: {item!r}")


def lines(part: Outline | Section) -> list[str]:
    return [line for item in in_order(part) for line in block(item)]


def page_one_lines(doc: dict) -> list[str]:
    """Page one (the diagnosis) as Markdown lines, the text golden tests pin."""
    section = front.page_one(doc)
    return lines(section) if section else []


def render_outline(outline: Outline) -> str:
    """The whole report as Markdown text."""
    return "\n".join(lines(outline)).rstrip("\n") + "\n"


def render(doc: dict) -> str:
    """The whole report document as Markdown text."""
    return render_outline(build(doc))


__all__ = ["esc", "page_one_lines", "render", "render_outline", "table"]
