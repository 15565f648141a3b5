"""Secrets out of an exported bundle: every string of every record file goes through the one
detector (redact/detect.py, walked by redact/documents.py) before the `.tar.gz` is written.

Capture already replaced secrets in environments and command lines (collect/redact.py); log
lines, error texts and stack dumps are kept whole on the machine that collected them (they are
the evidence), but what leaves it as an export must not carry the client's keys. Stand-ins are
`REDACTED-<kind>-<n>`, one per distinct secret across the whole export; the values themselves
are nowhere in the archive.
"""

from __future__ import annotations

import json

from sparktriage.redact.documents import DocumentRedactor
from sparktriage.store.documents import dumps

TEXT_SUFFIXES = (".log", ".txt", ".yaml", ".yml", ".env", ".out", ".err")


class BundleScrubber:
    """One export: the one document walker (redact/documents.py), so that stand-ins are shared
    across the export's files and documents are walked as everywhere else (strings, values
    under secret-looking keys, the element after a secret flag; a key block followed per field,
    keys never rewritten by it)."""

    def __init__(self) -> None:
        self.redactor = DocumentRedactor()

    @property
    def replaced(self) -> int:
        return self.redactor.book.hits

    def file(self, name: str, data: bytes) -> bytes | None:
        """The scrubbed content of one bundle file, or None to keep it as it is (binary)."""
        self.redactor.reset()
        try:
            text = data.decode("utf-8")
        except UnicodeDecodeError:
            return None
        if name.endswith(".jsonl"):
            return "".join(self._record(line) for line in text.splitlines(keepends=True)).encode()
        if name.endswith(".json"):
            try:
                return (dumps(self.redactor.value(json.loads(text))) + "\n").encode()
            except ValueError:
                pass
        elif not name.endswith(TEXT_SUFFIXES):
            return None
        return self.redactor.lines(text).encode()

    def _record(self, line: str) -> str:
        try:
            record = json.loads(line)
        except ValueError:  # a torn last record: scrub it as text
            return self.redactor.text(line)
        return dumps(self.redactor.value(record)) + "\n"
