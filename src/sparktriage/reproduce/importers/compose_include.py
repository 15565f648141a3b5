"""A compose file's top-level `include:`, as unknowns rows.

Compose merges the included files' services into the project, each with its own folder for
relative paths and its own `.env`. They are not merged here: every entry (a path, a list of
paths, or `{path: ...}`) is an unknowns row with the include line, saying whether the file was
sent beside the input (give it as an input of its own), was not given, or points outside the
input's folder (absolute, `..`, or a symbolic link out), and no included file is ever opened.
Never dropped silently (docs/reproduce.md).
"""

from __future__ import annotations

from pathlib import Path

from sparktriage.reproduce.importers.common import Ctx
from sparktriage.reproduce.importers.compose_vars import inside

MAX_INCLUDES = 64  # entries named in a row each; more are counted in one row


def include_rows(value, base: Path, line: int | None, ctx: Ctx) -> int:
    """Each `include:` entry an unknowns row (the included files are not merged: their
    services, paths and `.env` are their own); the row says whether the file was sent
    beside the input, inside its folder, or points outside it (never read). Returns how many."""
    entries = value if isinstance(value, list) else [value]
    for entry in entries[:MAX_INCLUDES]:
        refs = entry.get("path") if isinstance(entry, dict) else entry
        for ref in (refs if isinstance(refs, list) else [refs])[:MAX_INCLUDES]:
            shown = str(ref) if len(str(ref)) <= 80 else str(ref)[:77] + "..."
            if not isinstance(ref, str) or not ref:
                why = "not a path; not read"
            elif inside(base, ref) is None:
                why = "outside the input's folder (absolute, `..` or a link out); not read"
            elif not inside(base, ref).is_file():
                why = "not given beside the input; its services are missing"
            else:
                why = "not merged: give it as an input of its own to read its services"
            ctx.flag_unknown(f"include: {shown}", f"line {line}: included compose file {why}")
    if len(entries) > MAX_INCLUDES:
        ctx.flag_unknown("include", f"line {line}: {len(entries) - MAX_INCLUDES} more "
                         "included files, not listed")
    return len(entries)
