"""Versioned JSON documents and append-only JSON-lines records on disk.

Raw records are appended one JSON object per line and flushed (and fsync'ed) as they arrive:
a crash or Ctrl-C loses at most the record in flight. Derived documents are written whole,
atomically (temporary file then rename), and can always be rebuilt from the raw records.

Both go through the redaction stage first (redact/run.py: this run's stand-ins), so no
document or record of a run directory, bundle or report ever holds a secret.
"""

from __future__ import annotations

import json
import math
import os
from pathlib import Path
from typing import Any, Iterator

from sparktriage.errors import InputError
from sparktriage.redact import run as redaction
from sparktriage.redact.documents import DocumentRedactor


def _sanitize(value: Any) -> Any:
    """Replace non-finite floats (which JSON cannot carry) by None, recursively."""
    if isinstance(value, float) and not math.isfinite(value):
        return None
    if isinstance(value, dict):
        return {k: _sanitize(v) for k, v in value.items()}
    if isinstance(value, (list, tuple)):
        return [_sanitize(v) for v in value]
    return value


def dumps(document: Any) -> str:
    """Canonical JSON text of a document: UTF-8, no NaN, stable key order as given."""
    return json.dumps(_sanitize(document), ensure_ascii=False, allow_nan=False)


def write_document(path: Path, document: dict) -> None:
    """Write a derived JSON document atomically (pretty-printed, trailing newline), secrets
    replaced."""
    path.parent.mkdir(parents=True, exist_ok=True)
    tmp = path.with_name(path.name + ".tmp")
    tmp.write_text(
        json.dumps(_sanitize(redaction.document(document)), indent=2, ensure_ascii=False, allow_nan=False) + "\n",
        encoding="utf-8",
    )
    os.replace(tmp, path)


def read_document(path: Path) -> dict:
    """Read a JSON document, with a one-line error when it is missing or malformed."""
    try:
        return json.loads(path.read_text(encoding="utf-8"))
    except FileNotFoundError as exc:
        raise InputError(f"{path}: no such file") from exc
    except (OSError, UnicodeDecodeError, json.JSONDecodeError) as exc:
        raise InputError(f"{path}: not a readable JSON document ({exc})") from exc


class RecordWriter:
    """Append-only JSON-lines file; every record is flushed and fsync'ed before returning.

    Records are redacted as they are appended, with a walker of this file's own (a private key
    block that spans consecutive records' `line` fields is replaced whole) over the run's book."""

    def __init__(self, path: Path) -> None:
        path.parent.mkdir(parents=True, exist_ok=True)
        self.path = path
        self._redactor = DocumentRedactor(redaction.book())
        self._fh = open(path, "a", encoding="utf-8")

    def append(self, record: dict) -> None:
        self._fh.write(dumps(self._redactor.value(record)) + "\n")
        self._fh.flush()
        os.fsync(self._fh.fileno())

    def close(self) -> None:
        if not self._fh.closed:
            self._fh.close()

    def __enter__(self) -> "RecordWriter":
        return self

    def __exit__(self, *exc) -> None:
        self.close()


def read_records(path: Path, *, name: str | None = None,
                 objects_only: bool = False) -> Iterator[dict]:
    """Yield the records of a JSON-lines file; a torn last line (crash mid-write) is skipped.

    `name` is how errors name the file (default: its path); with `objects_only` a record that
    is not a JSON object is an error instead of being skipped.
    """
    name = name or str(path)
    try:
        fh = open(path, encoding="utf-8", errors="replace")
    except FileNotFoundError as exc:
        raise InputError(f"{name}: no such file") from exc
    except OSError as exc:
        raise InputError(f"{name}: unreadable ({exc.strerror or exc})") from exc
    with fh:
        lines = fh.readlines()
    for number, line in enumerate(lines, start=1):
        if not line.strip():
            continue
        try:
            record = json.loads(line)
        except json.JSONDecodeError as exc:
            if number == len(lines) and not line.endswith("\n"):
                return  # the record in flight when the writer died
            raise InputError(f"{name}:{number}: malformed record ({exc.msg})") from exc
        if isinstance(record, dict):
            yield record
        elif objects_only:
            raise InputError(f"{name}:{number}: a record must be a JSON object")
