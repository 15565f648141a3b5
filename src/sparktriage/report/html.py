"""Lay the section model out as one self-contained HTML file (a pure function: outline in, text
out).

The words are the section model's (report/outline/), the same the Markdown prints; this module
only chooses the elements: headings, paragraphs, lists, tables, `<pre>` for commands, strong,
em and code. Plots are embedded as PNG data URIs, so the file opens on its own, offline; it has
no script and no external reference (a strict Content-Security-Policy says so to the browser).
All text is HTML-escaped, so nothing from the run directory becomes markup; text from data is
shown as the Markdown shows it (a backtick as `'`, a line break as a space).
"""

from __future__ import annotations

import base64
import html

from sparktriage.report.format import cell
from sparktriage.report.outline import build
from sparktriage.report.outline.blocks import (Block, Bullets, Code, Fields, Figure, Heading,
                                               Outline, PageBreak, Paragraph, Table, Text, in_order)

_STYLE = ("body{font-family:Helvetica,Arial,sans-serif;max-width:60em;margin:2em auto;"
          "padding:0 1em;line-height:1.4;color:#222}table{border-collapse:collapse;margin:.5em 0}"
          "td,th{border:1px solid #bbb;padding:.2em .5em;text-align:left;vertical-align:top}"
          "th{background:#eee}pre{background:#f4f4f4;padding:.6em;overflow-x:auto}"
          "img{max-width:100%}code{background:#f4f4f4}")
_CSP = "default-src 'none'; img-src data:; style-src 'unsafe-inline'"
_DATA = str.maketrans({"\n": " ", "\r": " ", "`": "'"})
_TAGS = {"strong": "strong", "em": "em", "code": "code"}


def _shown(value: str, own: bool = False) -> str:
    return html.escape(value if own else cell(value).translate(_DATA), quote=False)


def _text(spans: Text) -> str:
    """Spans as inline HTML; neighbouring spans of one style share their element (not code)."""
    out, run, style = [], [], None
    for span in spans + (None,):
        if span is None or span.style != style or style == "code":
            if run:
                body = "".join(run)
                out.append(f"<{_TAGS[style]}>{body}</{_TAGS[style]}>" if style else body)
            run, style = [], span.style if span else None
        if span is not None:
            run.append(_shown(span.text, span.own))
    return "".join(out)


def _row(cells, tag: str) -> str:
    return "<tr>" + "".join(f"<{tag}>{_shown(c)}</{tag}>" for c in cells) + "</tr>"


def _block(item: Block, plots: dict[str, bytes]) -> list[str]:
    if isinstance(item, Heading):
        return [f"<h{item.level}>{_text(item.text)}</h{item.level}>"]
    if isinstance(item, Paragraph):
        return [f"<p>{_text(item.text)}</p>"]
    if isinstance(item, Bullets):
        return ["<ul>" + "".join(f"<li>{_text(t)}</li>" for t in item.items) + "</ul>"] if item.items else []
    if isinstance(item, Fields):
        return ["<ul>" + "".join(f"<li>{html.escape(label, quote=False)}: {_text(value)}</li>"
                                 for label, value in item.items) + "</ul>"]
    if isinstance(item, Table):
        return ["<table><thead>" + _row(item.header, "th") + "</thead><tbody>"
                + "".join(_row(r, "td") for r in item.rows) + "</tbody></table>"]
    if isinstance(item, Code):
        return ["<pre>" + "\n".join(html.escape(line, quote=False) for line in item.lines) + "</pre>"]
    if isinstance(item, Figure):
        image = []
        if item.name in plots:
            png = base64.b64encode(plots[item.name]).decode("ascii")
            image = [f'<figure><img alt="{html.escape(cell(item.title).translate(_DATA))}" '
                     f'src="data:image/png;base64,{png}"></figure>']
        return image + [f"<p><em>{_shown(item.caption)}</em></p>"]
    if isinstance(item, PageBreak):
        return []
    raise TypeError(f"not a block: {item!r}")


def render_outline(outline: Outline, plots: dict[str, bytes]) -> str:
    """The whole report as HTML; `plots` maps plot file names (in plots/) to PNG bytes."""
    out = ["<!DOCTYPE html>", '<html lang="en"><head><meta charset="utf-8">',
           f'<meta http-equiv="Content-Security-Policy" content="{_CSP}">',
           f"<title>{html.escape(outline.title)}</title><style>{_STYLE}</style></head><body>"]
    out += [line for item in in_order(outline) for line in _block(item, plots)]
    return "\n".join(out + ["</body></html>"]) + "\n"


def render(document: dict, plots: dict[str, bytes]) -> str:
    """The whole report document as HTML."""
    return render_outline(build(document), plots)


__all__ = ["render", "render_outline"]
