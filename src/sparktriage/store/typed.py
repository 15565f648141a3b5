"""Typed documents: the pydantic base of every document one stage writes and a later one reads.

A document model is frozen, refuses fields it does not know (`extra="forbid"`), is strict about
types (no "1" for 1, no true for 1) and pins `schema_version` to the version this sparktriage
reads. Writers check what they are about to write with `check()` (the JSON text that will be on
disk is what is validated, so the written bytes do not change); readers parse with `parse()` or
`load()`, which turn the first validation problem into a one-line `InputError` naming the file
and the field (`bench.json: workloads[0].summary: field 'n' is missing`), never pydantic's
multi-line wording.
"""

from __future__ import annotations

import json
from pathlib import Path
from typing import Any, ClassVar, Literal, TypeVar

from pydantic import BaseModel, ConfigDict, ValidationError

from sparktriage.errors import InputError
from sparktriage.redact.run import text as redact_text
from sparktriage.store.documents import dumps, read_document

SCHEMA_VERSION = 1

M = TypeVar("M", bound="Document")


class Part(BaseModel):
    """A nested object of a document: frozen, strict, no unknown fields."""

    model_config = ConfigDict(frozen=True, extra="forbid", strict=True)


class OpenPart(BaseModel):
    """A nested object whose documented fields are typed but which may carry more (documented
    as open in docs/formats.md, e.g. `windows[]` of the logs document)."""

    model_config = ConfigDict(frozen=True, extra="allow", strict=True)


class Document(Part):
    """Top level of a document: `schema_version` and the document's `kind`."""

    NAME: ClassVar[str] = ""  # the name `sparktriage schema NAME` knows it by
    FILE: ClassVar[str] = ""  # where it lives in a run directory (docs/formats.md)
    schema_version: Literal[1]
    synthetic: bool | None = None  # true in SYNTHETIC documents made for tests and benchmarks


def _where(loc: tuple) -> str:
    text = ""
    for part in loc:
        if isinstance(part, int):
            text += f"[{part}]"
        else:
            text += f".{part}" if text else str(part)
    return text


_TYPES = {"list_type": "list", "dict_type": "object", "model_type": "object",
          "model_attributes_type": "object", "int_type": "int", "int_parsing": "int",
          "int_from_float": "int", "float_type": "number", "float_parsing": "number",
          "string_type": "str", "bool_type": "bool", "bool_parsing": "bool"}


def _json_type(value: Any) -> str:
    if value is None:
        return "null"
    if isinstance(value, bool):
        return "bool"
    return {dict: "object", list: "list", str: "str", int: "int", float: "number"}.get(
        type(value), type(value).__name__)


def _describe(error: dict) -> str:
    """One problem in words. Input values are never echoed (only their JSON type): a document
    may carry a secret in the very field that is wrong."""
    loc = tuple(p for p in error.get("loc", ())
                if not (isinstance(p, str) and p.startswith(("function-", "tagged-union"))))
    loc = tuple(p if isinstance(p, int) else redact_text(str(p)) for p in loc)
    kind = error.get("type", "")
    value = error.get("input")
    field = loc[-1] if loc else None
    parent = _where(loc[:-1])
    prefix = f"{parent}: " if parent else ""
    if kind == "missing" and field is not None:
        return f"{prefix}field {field!r} is missing"
    if kind == "extra_forbidden" and field is not None:
        return f"{prefix}unknown field {field!r}"
    message = " ".join(str(error.get("msg", "invalid")).split())
    expected = _TYPES.get(kind)
    where = _where(loc)
    if expected is not None and loc:
        return f"field {where!r} must be {expected}, found {_json_type(value)}"
    if kind == "value_error":
        text = message.removeprefix("Value error, ")
        return f"{where}: {text}" if where else text
    message = message[0].lower() + message[1:] if message else "invalid"
    return f"field {where!r}: {message}" if where else message


def one_line(exc: ValidationError, name: str) -> str:
    """The first problem of a validation error as one line naming the file and the field."""
    errors = exc.errors(include_url=False)
    more = f" (and {len(errors) - 1} more problems)" if len(errors) > 1 else ""
    return f"{name}: {_describe(errors[0])}{more}" if errors else f"{name}: invalid document"


def parse(model: type[M], document: Any, name: str) -> M:
    """Validate a parsed JSON value as `model`; InputError (exit 2) naming `name` and the field."""
    if not isinstance(document, dict):
        raise InputError(f"{name}: expected a JSON object, found {type(document).__name__}")
    version = document.get("schema_version", SCHEMA_VERSION)
    if version != SCHEMA_VERSION or isinstance(version, bool):  # alone: the rest may follow from it
        shown = version if isinstance(version, int) and not isinstance(version, bool) else _json_type(version)
        raise InputError(f"{name}: schema_version {shown} is not supported (this "
                         f"sparktriage reads {SCHEMA_VERSION})")
    try:
        return model.model_validate_json(dumps(document))
    except ValidationError as exc:
        raise InputError(one_line(exc, name)) from None
    except ValueError as exc:  # a value JSON cannot carry
        raise InputError(f"{name}: not a JSON document ({exc})") from None


def load(model: type[M], path: Path, name: str | None = None) -> M:
    """Read and validate a document file."""
    return parse(model, read_document(path), name or str(path))


def check(model: type[Document], document: dict, name: str | None = None) -> dict:
    """Validate a document about to be written; return it unchanged (the bytes stay the same).

    A failure here is a bug of the writer, reported like a reader's error."""
    parse(model, document, name or model.FILE or model.NAME)
    return document
