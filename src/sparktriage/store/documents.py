"""Versioned JSON documents and append-only JSON-lines records on disk.

Raw records are appended one JSON object per line and flushed (and fsync'ed) as they arrive:
a crash or Ctrl-C loses at most the record in flight. Derived documents are written whole,
atomically (temporary file then rename), and can always be rebuilt from the raw records.

A raw record can always be written: text a server or log sent that UTF-8 cannot carry (lone
surrogates, e.g. from a `"\\ud800"` JSON escape) is stored escaped (`\\ud800` as plain
characters) and the record gets `"escaped": true`; the same escaping is applied to what is read
back, so no reader ever meets a lone surrogate. Reading is bounded (docs/limits.md): a document
is at most `JSON_MAX_BYTES` and `JSON_MAX_DEPTH` deep, a record line at most `RECORD_MAX_BYTES`.

Both go through the redaction stage first (redact/run.py: this run's stand-ins), so no
document or record of a run directory, bundle or report ever holds a secret.
"""

from __future__ import annotations

import json
import math
import os
import stat
from pathlib import Path
from typing import Any, Iterator

from sparktriage.errors import InputError
from sparktriage.limits import JSON_MAX_BYTES, JSON_MAX_DEPTH, RECORD_MAX_BYTES, limit_hit, size_text
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


def _has_surrogate(text: str) -> bool:
    try:
        text.encode("utf-8")
    except UnicodeEncodeError:
        return True
    return False


def escape_text(text: str) -> str:
    """Text UTF-8 can carry: lone surrogates become their `\\udXXX` escape as characters."""
    return text.encode("utf-8", "backslashreplace").decode("utf-8") \
        if _has_surrogate(text) else text


def escape_surrogates(value: Any) -> tuple[Any, bool]:
    """(value with every string made UTF-8-safe, whether anything was escaped); iterative."""
    changed = False

    def fix(item: Any) -> Any:
        nonlocal changed
        if isinstance(item, str) and _has_surrogate(item):
            changed = True
            return escape_text(item)
        return item

    if isinstance(value, str):
        return fix(value), changed
    if not isinstance(value, (dict, list)):
        return value, False
    root: Any = {} if isinstance(value, dict) else []
    stack = [(value, root)]
    while stack:
        src, dst = stack.pop()
        items = src.items() if isinstance(src, dict) else enumerate(src)
        for key, item in items:
            key = fix(key)
            if isinstance(item, (dict, list)):
                child: Any = {} if isinstance(item, dict) else []
                stack.append((item, child))
                item = child
            else:
                item = fix(item)
            if isinstance(dst, dict):
                dst[key] = item
            else:
                dst.append(item)
    return root, changed


def depth_of(value: Any, limit: int = JSON_MAX_DEPTH) -> int:
    """Nesting depth of plain data (iterative; stops counting past `limit`)."""
    deepest = 0
    stack = [(value, 1)]
    while stack:
        item, depth = stack.pop()
        if isinstance(item, (dict, list)):
            deepest = max(deepest, depth)
            if depth > limit:
                return depth
            children = item.values() if isinstance(item, dict) else item
            stack.extend((c, depth + 1) for c in children if isinstance(c, (dict, list)))
    return deepest


def loads_bounded(text: str | bytes, origin: str, line: int | None = None,
                  max_depth: int = JSON_MAX_DEPTH) -> Any:
    """`json.loads` with a depth bound and no lone surrogates in the result.

    Raises LimitError past the depth and lets json.JSONDecodeError through."""
    try:
        value = json.loads(text)
    except RecursionError:
        raise limit_hit("JSON nesting", f"{max_depth} levels", origin, line) from None
    if depth_of(value, max_depth) > max_depth:
        raise limit_hit("JSON nesting", f"{max_depth} levels", origin, line)
    if not _may_hold_surrogate(text):
        return value  # nothing to escape: skip the walk over every string
    return escape_surrogates(value)[0]


def _may_hold_surrogate(text: str | bytes) -> bool:
    """False only when the parsed value cannot hold a lone surrogate: no `\\uD` escape in the
    text and the text itself is strict UTF-8 (a surrogate's own bytes or character fail that).
    A false alarm (e.g. an escaped backslash before `uD`) only costs the full walk."""
    if isinstance(text, str):
        return "\\ud" in text or "\\uD" in text or _has_surrogate(text)
    if b"\\ud" in text or b"\\uD" in text or b"\x00" in text:  # NUL: maybe UTF-16/32 JSON
        return True
    try:
        text.decode("utf-8")
    except UnicodeDecodeError:
        return True
    return False


def _json(document: Any, **options: Any) -> str:
    """JSON text with non-finite floats as null. The common case (none) is encoded directly;
    only when the encoder refuses a NaN or infinity is the copy with None made (same text)."""
    try:
        return json.dumps(document, ensure_ascii=False, allow_nan=False, **options)
    except ValueError:
        return json.dumps(_sanitize(document), ensure_ascii=False, allow_nan=False, **options)


def dumps(document: Any) -> str:
    """Canonical JSON text of a document: UTF-8, no NaN, stable key order as given."""
    return _json(document)


def write_document(path: Path, document: dict) -> None:
    """Write a derived JSON document atomically (pretty-printed, trailing newline), secrets
    replaced."""
    path.parent.mkdir(parents=True, exist_ok=True)
    tmp = path.with_name(path.name + ".tmp")
    tmp.write_text(
        _json(redaction.document(document), indent=2) + "\n",
        encoding="utf-8",
    )
    os.replace(tmp, path)


def write_yaml_document(path: Path, document: dict) -> None:
    """Write a YAML copy of a config (a deployment as launched) atomically, secrets replaced by
    the one redaction stage (values under secret names, the element after a secret flag)."""
    import yaml

    path.parent.mkdir(parents=True, exist_ok=True)
    tmp = path.with_name(path.name + ".tmp")
    tmp.write_text(yaml.safe_dump(redaction.document(document), sort_keys=False,
                                  allow_unicode=True), encoding="utf-8")
    os.replace(tmp, path)


def read_document(path: Path) -> dict:
    """Read a JSON document, with a one-line error when it is missing or malformed."""
    return read_document_bounded(path)


def read_document_bounded(path: Path, *, name: str | None = None,
                          follow_symlinks: bool = True) -> Any:
    """A JSON document within the size and depth caps; one-line InputError otherwise.

    With `follow_symlinks=False` a symlink (or anything but a regular file) is refused."""
    name = name or str(path)
    flags = os.O_RDONLY | (0 if follow_symlinks else getattr(os, "O_NOFOLLOW", 0))
    try:
        fd = os.open(path, flags)
    except FileNotFoundError as exc:
        raise InputError(f"{name}: no such file") from exc
    except OSError as exc:
        if not follow_symlinks and path.is_symlink():
            raise InputError(f"{name}: is a symbolic link (not followed)") from exc
        raise InputError(f"{name}: not a readable JSON document ({exc.strerror or exc})") from exc
    with os.fdopen(fd, "rb") as fh:
        if not stat.S_ISREG(os.fstat(fh.fileno()).st_mode):
            raise InputError(f"{name}: not a regular file")
        raw = fh.read(JSON_MAX_BYTES + 1)
    if len(raw) > JSON_MAX_BYTES:
        raise limit_hit("JSON document", size_text(JSON_MAX_BYTES), name)
    try:
        return loads_bounded(raw.decode("utf-8"), name)
    except UnicodeDecodeError as exc:
        raise InputError(f"{name}: not a readable JSON document (not UTF-8: {exc.reason})") from exc
    except json.JSONDecodeError as exc:
        raise InputError(f"{name}:{exc.lineno}: not valid JSON ({exc.msg}); not a readable JSON "
                         "document") from exc


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
        """Write one record; text UTF-8 cannot carry is kept escaped (`"escaped": true`)."""
        try:
            record = self._redactor.value(record)  # redacted first, then written
            line = dumps(record)
            line.encode("utf-8")
        except UnicodeEncodeError:
            record, _ = escape_surrogates(record)
            record["escaped"] = True
            line = dumps(record)
        self._fh.write(line + "\n")
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
        number = 0
        while True:
            line = fh.readline(RECORD_MAX_BYTES + 1)
            if not line:
                return
            number += 1
            if len(line) > RECORD_MAX_BYTES and not line.endswith("\n"):
                raise limit_hit("record", size_text(RECORD_MAX_BYTES), name, number)
            if not line.strip():
                continue
            try:
                record = loads_bounded(line, name, number)
            except json.JSONDecodeError as exc:
                if not line.endswith("\n") and not fh.read(1):
                    return  # the record in flight when the writer died
                raise InputError(f"{name}:{number}: malformed record ({exc.msg})") from exc
            if isinstance(record, dict):
                yield record
            elif objects_only:
                raise InputError(f"{name}:{number}: a record must be a JSON object")
