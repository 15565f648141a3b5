"""The terminal edge: one rich console for chatter (stderr), data to stdout, JSON output.

Only modules under `cli/` import this. Every string printed has its control characters shown
escaped (`sparktriage.textsafe`), so configs, logs and servers cannot drive the terminal. Progress and messages go to stderr so that stdout
carries data only (a table, or JSON with `--json -`).
"""

from __future__ import annotations

import json
import os
import sys
from pathlib import Path
from typing import Any

from rich.console import Console

from sparktriage.errors import InputError
from sparktriage.textsafe import escape_controls
from sparktriage.redact import run as redaction


class SafeConsole(Console):
    """A console that shows control characters of the text it prints escaped (textsafe)."""

    def print(self, *objects: Any, **kwargs: Any) -> None:  # noqa: A003 - rich's name
        super().print(*(escape_controls(o) if isinstance(o, str) else o for o in objects),
                      **kwargs)


stderr = SafeConsole(stderr=True, highlight=False, soft_wrap=True,
                 width=None if sys.stderr.isatty() else 160)
# Piped output is not wrapped at 80 columns: tables stay whole in logs and files.
stdout = SafeConsole(highlight=False, soft_wrap=True, width=None if sys.stdout.isatty() else 160)


_argv: list[str] = []


def set_argv(args: list[str]) -> None:
    """Remember this invocation's arguments (after the program name), as given to `main()`."""
    _argv[:] = list(args)


def invoked_argv() -> list[str]:
    """The arguments of this invocation, as given to `main()`, with every secret replaced
    (redact/run.py): the only form in which a command line is ever recorded."""
    from sparktriage.redact import run as redaction

    return redaction.argv(_argv)


def info(message: str) -> None:
    """A progress or status line on stderr."""
    stderr.print(message, markup=False)


def warn(message: str) -> None:
    """A warning on stderr, prefixed so that it survives plain-text capture."""
    stderr.print(f"warning: {message}", style="yellow", markup=False)


_STYLES = {"bold": "bold", "error": "red", "warning": "yellow", "": ""}


def draw(view, target: Console | None = None) -> None:
    """Print a core `View` (or a single `Table`) with rich: the only place views meet a terminal."""
    from rich.table import Table as RichTable
    from rich.text import Text

    from sparktriage.view import Line, Table, View

    parts = view.parts if isinstance(view, View) else [view]
    out = target or stdout
    for part in parts:
        if isinstance(part, Line):
            out.print(Text(escape_controls(part.text), style=_STYLES.get(part.style, "")))
        elif isinstance(part, Table):
            title = escape_controls(part.title, keep_newlines=False) if part.title else part.title
            table = RichTable(title=title, title_justify="left")
            for column in part.columns:
                table.add_column(column, justify="right" if column in part.right else "left",
                                 overflow="fold" if part.fold else "ellipsis")
            for row in part.rows:
                table.add_row(*(escape_controls(c, keep_newlines=False) if isinstance(c, str)
                                 else c for c in row))
            out.print(table)


def data_console(json_dest: str | None) -> Console:
    """Where human-readable results go: stdout, unless stdout already carries JSON."""
    return stderr if json_dest == "-" else stdout


def write_json(document: Any, dest: str | None) -> None:
    """Write a JSON document to PATH, or to stdout for `-`; nothing when dest is None. Secrets
    are replaced first (redact/run.py: this run's stand-ins)."""
    if dest is None:
        return
    text = json.dumps(redaction.document(document), indent=2, sort_keys=False, allow_nan=False) + "\n"
    if dest == "-":  # redacted above as a document: line scrubbing would only damage it
        from sparktriage.redact.stream import unscrubbed

        sys.stdout.flush()
        out = unscrubbed(sys.stdout)
        out.write(text)
        out.flush()
        return
    path = Path(dest)
    try:
        if path.exists() and not path.is_file():
            # a device or a pipe (`--json /dev/null`, a FIFO): written to, never replaced (as
            # root, replacing /dev/null would leave a regular file in its place for everyone)
            with open(path, "w", encoding="utf-8") as fh:
                fh.write(text)
            return
        path.parent.mkdir(parents=True, exist_ok=True)
        tmp = path.with_name(path.name + ".tmp")
        tmp.write_text(text, encoding="utf-8")
        os.replace(tmp, path)
    except OSError as exc:
        raise InputError(f"cannot write JSON to {dest}: {exc.strerror or exc}") from exc
