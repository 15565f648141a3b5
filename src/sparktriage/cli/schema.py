"""`sparktriage schema [NAME]`: the JSON Schema of a typed document, or the list of names."""

from __future__ import annotations

import sys
from typing import Optional

import typer

from sparktriage.cli.app import app


@app.command("schema")
def schema(
    name: Optional[str] = typer.Argument(None, metavar="[NAME]",
                                         help="Document name (bench, logs, ...); omitted: list the names."),
) -> None:
    """Print the JSON Schema of a document sparktriage writes (docs/formats.md)."""
    from sparktriage.documents import registry as schemas

    if name is None:
        for known in schemas.names():
            model = schemas.MODELS[known]
            sys.stdout.write(f"{known}\t{model.FILE or '-'}\t{(model.__doc__ or '').strip().splitlines()[0]}\n")
        return
    sys.stdout.write(schemas.json_schema_text(name))
