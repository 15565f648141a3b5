"""`sparktriage schema [NAME] [--check FILE]`: list the typed documents, print one's JSON
Schema, or validate a file against it (docs/formats.md, "Document models")."""

from __future__ import annotations

import sys
from pathlib import Path
from typing import Optional

import typer

from sparktriage.cli import console
from sparktriage.errors import UsageError


def schema(
    name: Optional[str] = typer.Argument(None, metavar="[NAME]",
                                         help="Document name (bench, logs, ...); omitted: list the names."),
    check: Optional[Path] = typer.Option(None, "--check", metavar="FILE",
                                         help="Validate FILE against NAME's model instead (exit 2 when it does not fit)."),
) -> None:
    """Print the JSON Schema of a document sparktriage writes, or check a file against it."""
    from sparktriage.documents import registry
    from sparktriage.store.typed import load

    if name is None:
        if check is not None:
            raise UsageError("--check needs a document NAME (see sparktriage schema)")
        for line in registry.listing():
            sys.stdout.write(line + "\n")
        return
    model = registry.model(name)
    if check is None:
        sys.stdout.write(registry.json_schema_text(name))
        return
    load(model, check)
    console.info(f"{check}: a valid {name} document (schema_version 1)")
