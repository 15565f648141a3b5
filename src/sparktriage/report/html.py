"""Render the report as one self-contained HTML file (a pure function: document in, text out).

The HTML is the Markdown rendering (markdown.py, the one source of the report's words)
converted line by line: headings, tables, lists, code blocks, paragraphs, bold, italics and
inline code, the only constructs markdown.py emits. Plots are embedded as PNG data URIs, so
the file opens on its own, offline; it has no script and no external reference (a strict
Content-Security-Policy says so to the browser). Text is HTML-escaped after the Markdown
escapes are undone, so nothing from the run directory becomes markup.
"""

from __future__ import annotations

import base64
import html
import re

from sparktriage.report import markdown

_STYLE = ("body{font-family:Helvetica,Arial,sans-serif;max-width:60em;margin:2em auto;"
          "padding:0 1em;line-height:1.4;color:#222}table{border-collapse:collapse;margin:.5em 0}"
          "td,th{border:1px solid #bbb;padding:.2em .5em;text-align:left;vertical-align:top}"
          "th{background:#eee}pre{background:#f4f4f4;padding:.6em;overflow-x:auto}"
          "img{max-width:100%}code{background:#f4f4f4}")
_CSP = "default-src 'none'; img-src data:; style-src 'unsafe-inline'"
_IMAGE = re.compile(r"^!\[(.*)\]\((plots/[A-Za-z0-9_.-]+\.png)\)\Z")


def _unescape(text: str) -> str:
    """Undo markdown.py's escapes (`\\|`, `&lt;`, `&gt;`) before escaping for HTML."""
    return text.replace("\\|", "|").replace("&lt;", "<").replace("&gt;", ">")


def _inline(text: str) -> str:
    out = html.escape(_unescape(text), quote=False)
    out = re.sub(r"`([^`]+)`", r"<code>\1</code>", out)
    out = re.sub(r"\*\*(.+?)\*\*", r"<strong>\1</strong>", out)
    return re.sub(r"(?<![\w*])\*([^*]+)\*(?![\w*])", r"<em>\1</em>", out)


def _cells(line: str) -> list[str]:
    return [c.strip() for c in re.split(r"(?<!\\)\|", line.strip())[1:-1]]


def render(document: dict, plots: dict[str, bytes]) -> str:
    """The whole report as HTML; `plots` maps plot file names (in plots/) to PNG bytes."""
    lines = markdown.render(document).splitlines()
    title = html.escape(document.get("title") or "sparktriage report")
    out = ["<!DOCTYPE html>", '<html lang="en"><head><meta charset="utf-8">',
           f'<meta http-equiv="Content-Security-Policy" content="{_CSP}">',
           f"<title>{title}</title><style>{_STYLE}</style></head><body>"]
    i = 0
    while i < len(lines):
        line = lines[i]
        if line.startswith("```"):
            block = []
            i += 1
            while i < len(lines) and not lines[i].startswith("```"):
                block.append(html.escape(lines[i], quote=False))
                i += 1
            out.append("<pre>" + "\n".join(block) + "</pre>")
        elif line.startswith("#"):
            level = len(line) - len(line.lstrip("#"))
            out.append(f"<h{level}>{_inline(line[level:].strip())}</h{level}>")
        elif line.startswith("| "):
            header = _cells(line)
            rows = []
            i += 2  # the |---| line
            while i < len(lines) and lines[i].startswith("| "):
                rows.append(_cells(lines[i]))
                i += 1
            out.append("<table><thead><tr>" + "".join(f"<th>{_inline(c)}</th>" for c in header)
                       + "</tr></thead><tbody>" + "".join(
                           "<tr>" + "".join(f"<td>{_inline(c)}</td>" for c in r) + "</tr>"
                           for r in rows) + "</tbody></table>")
            continue
        elif line.startswith("- "):
            items = []
            while i < len(lines) and lines[i].startswith("- "):
                items.append(f"<li>{_inline(lines[i][2:])}</li>")
                i += 1
            out.append("<ul>" + "".join(items) + "</ul>")
            continue
        elif (image := _IMAGE.match(line)) and image.group(2)[len("plots/"):] in plots:
            data = base64.b64encode(plots[image.group(2)[len("plots/"):]]).decode("ascii")
            out.append(f'<figure><img alt="{html.escape(_unescape(image.group(1)))}" '
                       f'src="data:image/png;base64,{data}"></figure>')
        elif line.strip():
            out.append(f"<p>{_inline(line)}</p>")
        i += 1
    return "\n".join(out + ["</body></html>"]) + "\n"


__all__ = ["render"]
