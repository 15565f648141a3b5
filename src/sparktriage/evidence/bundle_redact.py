"""Secrets out of an exported bundle: every string of every record file goes through the one
detector (sparktriage.secrets) before the `.tar.gz` is written.

Capture already replaced secrets in environments and command lines (collect/redact.py); log
lines, error texts and stack dumps are kept whole on the machine that collected them (they are
the evidence), but what leaves it as an export must not carry the client's keys. Stand-ins are
`REDACTED-<kind>-<n>`, one per distinct secret across the whole export; the values themselves
are nowhere in the archive.
"""

from __future__ import annotations

import json
from typing import Any

from sparktriage.secrets import SECRET_FLAG, SecretBook, SecretScrubber, secret_name
from sparktriage.store.documents import dumps

TEXT_SUFFIXES = (".log", ".txt", ".yaml", ".yml", ".env", ".out", ".err")
_PLAIN = (int, float, bool, type(None))


class BundleScrubber:
    """One export: stand-ins shared across its files."""

    def __init__(self) -> None:
        self.book = SecretBook()
        self.scrubber = SecretScrubber(self.book)

    @property
    def replaced(self) -> int:
        return self.book.hits

    def value(self, value: Any, key: str | None = None) -> Any:
        """A JSON value with every string scrubbed; strings under secret-looking keys, and the
        element after a secret flag in a list, replaced whole."""
        if isinstance(value, str):
            if key is not None and secret_name(key) and value.strip():
                return self.scrubber.replace("secret", value)
            return self.scrubber.scrub(value)
        if isinstance(value, dict):
            return {k: v if type(v) in _PLAIN else self.value(v, k if isinstance(k, str) else None)
                    for k, v in value.items()}
        if isinstance(value, list):
            out, secret_next = [], False
            for item in value:
                if secret_next and isinstance(item, str):
                    out.append(self.scrubber.replace("flag-value", item))
                    secret_next = False
                    continue
                secret_next = isinstance(item, str) and bool(SECRET_FLAG.match(item))
                out.append(item if type(item) in _PLAIN else self.value(item))
            return out
        return value

    def file(self, name: str, data: bytes) -> bytes | None:
        """The scrubbed content of one bundle file, or None to keep it as it is (binary)."""
        self.scrubber.reset()
        try:
            text = data.decode("utf-8")
        except UnicodeDecodeError:
            return None
        if name.endswith(".jsonl"):
            return "".join(self._record(line) for line in text.splitlines(keepends=True)).encode()
        if name.endswith(".json"):
            try:
                return (dumps(self.value(json.loads(text))) + "\n").encode()
            except ValueError:
                pass
        elif not name.endswith(TEXT_SUFFIXES):
            return None
        return "".join(self.scrubber.scrub(line) for line in text.splitlines(keepends=True)).encode()

    def _record(self, line: str) -> str:
        try:
            record = json.loads(line)
        except ValueError:  # a torn last record: scrub it as text
            return self.scrubber.scrub(line)
        return dumps(self.value(record)) + "\n"
