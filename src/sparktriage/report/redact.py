"""The redaction stage: run-directory documents in, clean documents and a private map out.

It runs after reading and before anything is derived, rendered, copied or signed, so no later
stage ever sees a secret (style §9). Every string of every document goes through the walker of
the one redaction package (redact/documents.py, detector redact/detect.py); values under secret-looking keys and the argument after a secret flag in
an argv list are replaced whole; with `--anonymize`, host names, domains, IP addresses and user
names are replaced by stable stand-ins (anonymize.py), in values, in dictionary keys and in the
file paths of copied data (a bundle's `nodes/<host>/` folders). The map from stand-ins back to
originals is the one output that must stay private: it is written outside the report folder.
"""

from __future__ import annotations

import json
import os
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

from sparktriage.errors import InputError
from sparktriage.redact.anonymize import Anonymizer
from sparktriage.redact.detect import SecretBook
from sparktriage.redact.documents import DocumentRedactor
from sparktriage.report.inputs import RunInputs, SourceFile

MAP_SCHEMA_VERSION = 1
MAP_KIND = "sparktriage-redaction-map"
_PLAIN = (int, float, bool, type(None))  # values with nothing to scrub


@dataclass
class RedactionStats:
    """What the stage replaced (counts only: never the values)."""

    secrets: int = 0
    distinct_secrets: int = 0
    anonymized: int = 0
    kinds: dict[str, int] = field(default_factory=dict)


class Redactor(DocumentRedactor):
    """The report's stage: one instance per report so that stand-ins are shared across files
    (the walker is redact/documents.py; this adds anonymization, seeding from the private map,
    the walk over a run's input files, and the map itself)."""

    def __init__(self, anonymize: bool = False, seed: dict | None = None) -> None:
        super().__init__(SecretBook(), Anonymizer() if anonymize else None)
        self.anonymize = anonymize
        if seed:
            self._seed(seed)

    def _seed(self, seed: dict) -> None:
        for item in seed.get("secrets") or []:
            if isinstance(item, dict) and item.get("sha256_16") and item.get("stand_in"):
                stand_in, kind = str(item["stand_in"]), str(item.get("kind") or "secret")
                self.book.by_digest[str(item["sha256_16"])] = stand_in
                self.book.kinds[stand_in] = kind
                number = stand_in.rsplit("-", 1)[-1]
                if number.isdigit():
                    self.book.counters[kind] = max(self.book.counters.get(kind, 0), int(number))
        if self.anonymize:
            self.anonymizer = Anonymizer.from_map(seed)

    def path(self, rel: str) -> str:
        """A relative path with every component anonymized (bundle node folders)."""
        if not self.anonymize:
            return rel
        return "/".join(self.anonymizer.apply(part) for part in rel.split("/"))

    # -- learning (anonymize) -------------------------------------------------------------------
    def _learn(self, value: Any, key: str | None = None) -> None:
        kind = type(value)
        if kind is str:
            if key is not None:
                self.anonymizer.learn_pair(key, value)
            self.anonymizer.learn_text(value)
        elif kind is dict:
            for k, v in value.items():
                if type(v) not in _PLAIN:
                    self._learn(v, str(k))
        elif kind is list:
            for item in value:
                if type(item) not in _PLAIN:
                    self._learn(item, key)

    def learn(self, inputs: RunInputs) -> None:
        for rel, source in inputs.files.items():
            if "/bundle/nodes/" in rel:
                self.anonymizer.learn_host(rel.split("/bundle/nodes/")[1].split("/")[0])
            if source.kind == "jsonl":
                for record in source.content:
                    self._learn(record)
            else:
                self._learn(source.data)
        self.anonymizer.seal()

    # -- the stage ------------------------------------------------------------------------------
    def run(self, inputs: RunInputs) -> RunInputs:
        """Redacted copies of every input file (paths anonymized when asked)."""
        if self.anonymize:
            self.learn(inputs)
        files: dict[str, SourceFile] = {}
        for rel, source in inputs.files.items():
            self.reset()
            if source.kind == "jsonl":
                content: Any = [self.value(record) for record in source.content]
            else:
                content = self.value(source.data)
            new_rel = self.path(rel)
            files[new_rel] = source.replaced(new_rel, content)
        return inputs.with_files(files)

    def stats(self) -> RedactionStats:
        kinds: dict[str, int] = {}
        for kind in self.book.kinds.values():
            kinds[kind] = kinds.get(kind, 0) + 1
        anonymized = self.anonymizer.hits if self.anonymizer is not None else 0
        return RedactionStats(self.book.hits, len(self.book.by_digest), anonymized,
                              dict(sorted(kinds.items())))

    def map_document(self, report_dir: str) -> dict:
        """The private map: stand-ins → originals (hosts, users, IPs), secrets by hash only."""
        secrets = [{"stand_in": token, "kind": self.book.kinds.get(token, "secret"),
                    "sha256_16": digest}
                   for digest, token in sorted(self.book.by_digest.items(), key=lambda kv: kv[1])]
        doc = {"schema_version": MAP_SCHEMA_VERSION, "kind": MAP_KIND,
               "warning": "PRIVATE: maps report stand-ins back to real host names, addresses and "
                          "users. Keep it; never send it with the report.",
               "report": report_dir, "anonymized": self.anonymize, "secrets": secrets}
        if self.anonymize:
            doc.update(self.anonymizer.as_map())
        return doc


def read_map(path: Path) -> dict | None:
    """An existing private map (to keep stand-ins stable across reports), or None."""
    if not path.is_file():
        return None
    try:
        doc = json.loads(path.read_text(encoding="utf-8"))
    except (OSError, UnicodeDecodeError, json.JSONDecodeError) as exc:
        raise InputError(f"{path}: unreadable redaction map ({exc})") from exc
    if not isinstance(doc, dict) or doc.get("kind") != MAP_KIND:
        raise InputError(f"{path}: not a sparktriage redaction map")
    return doc


def write_map(path: Path, document: dict) -> None:
    """Write the private map, readable by its owner only."""
    path.parent.mkdir(parents=True, exist_ok=True)
    tmp = path.with_name(path.name + ".tmp")
    fd = os.open(tmp, os.O_WRONLY | os.O_CREAT | os.O_TRUNC, 0o600)
    with os.fdopen(fd, "w", encoding="utf-8") as fh:
        fh.write(json.dumps(document, indent=2, ensure_ascii=False) + "\n")
    os.replace(tmp, path)
