"""A terminal-free view of a result: lines with a style tag and tables, built by the core.

Every core renderer (`logs/render.py`, `bench/render.py`, `reconcile/render.py`,
`probe/render.py`, `launch/render.py`, `sweep/render.py`, `stalls/render.py`,
`reproduce/render.py`, the demo's plan) returns a `View` (`bench/render.py` a single `Table`);
only `cli/console.draw` turns one into rich objects and prints it. Styles are names (`bold`,
`error`, `warning`), not terminal codes.
"""

from __future__ import annotations

from dataclasses import dataclass, field
from typing import Iterable


@dataclass(frozen=True)
class Line:
    text: str
    style: str = ""  # "", "bold", "error", "warning"


@dataclass(frozen=True)
class Table:
    title: str
    columns: tuple[str, ...]
    rows: tuple[tuple[str, ...], ...]
    right: frozenset[str] = frozenset()  # columns aligned right (numbers)
    fold: bool = False  # long cells wrap instead of being cut


@dataclass
class View:
    parts: list[Line | Table] = field(default_factory=list)

    @classmethod
    def of_lines(cls, texts: Iterable[str]) -> "View":
        """A view of plain lines, for renderers that build their text line by line."""
        return cls([Line(text) for text in texts])

    def line(self, text: str, style: str = "") -> "View":
        self.parts.append(Line(text, style))
        return self

    def table(self, table: Table) -> "View":
        self.parts.append(table)
        return self

    def text(self) -> str:
        """Plain text (tables as tab-separated rows), for logs and tests."""
        out: list[str] = []
        for part in self.parts:
            if isinstance(part, Line):
                out.append(part.text)
            else:
                out.append(part.title)
                out.append("\t".join(part.columns))
                out += ["\t".join(row) for row in part.rows]
        return "\n".join(out)


def num(value: float | None, digits: int = 1) -> str:
    """A number for a table cell: fixed digits, `-` when absent."""
    return "-" if value is None else f"{value:.{digits}f}"


def clock(text: str | None) -> str:
    """The time of day of an ISO time (HH:MM:SS.mmm), `-` when absent."""
    return "-" if not text else text[11:23] if len(text) > 19 else text


__all__ = ["Line", "Table", "View", "num", "clock"]
