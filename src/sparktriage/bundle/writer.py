"""Write an evidence bundle (docs/formats.md, "Evidence bundle"), and export it as one .tar.gz.

Records are appended one JSON object per line and flushed to the OS as they arrive (a crash of
sparktriage loses at most the record in flight); they are fsync'ed at most once a second per
file and on close, so that a burst of log lines does not turn into a burst of disk syncs.
`bundle.json` is written when the bundle is opened (outcome "running") and rewritten whole by
`finish`. Every path component that comes from outside (node names, log names, record files)
goes through `bundle.layout` checks first.
"""

from __future__ import annotations

import io
import os
import tarfile
import threading
import time
from pathlib import Path
from typing import Any

from sparktriage import __version__
from sparktriage.errors import InputError
from sparktriage.bundle import layout
from sparktriage.bundle.export_redact import BundleScrubber
from sparktriage.redact import run as redaction
from sparktriage.redact.documents import DocumentRedactor
from sparktriage.store.documents import dumps, write_document

FSYNC_EVERY_S = 1.0


class _Appender:
    """One append-only JSON-lines file: flush per record, fsync at most every FSYNC_EVERY_S.
    Records are redacted as they are appended (redact/documents.py, this run's stand-ins; a key
    block is followed from record to record within the file)."""

    def __init__(self, path: Path) -> None:
        path.parent.mkdir(parents=True, exist_ok=True)
        self._redactor = DocumentRedactor(redaction.book())
        self._fh = open(path, "a", encoding="utf-8")
        self._synced = time.monotonic()
        self.count = 0

    def append(self, record: dict) -> None:
        self._fh.write(dumps(self._redactor.value(record)) + "\n")
        self._fh.flush()
        self.count += 1
        now = time.monotonic()
        if now - self._synced >= FSYNC_EVERY_S:
            os.fsync(self._fh.fileno())
            self._synced = now

    def close(self) -> None:
        if not self._fh.closed:
            self._fh.flush()
            os.fsync(self._fh.fileno())
            self._fh.close()


class BundleWriter:
    """An evidence bundle being written; thread-safe (agents of several nodes feed it)."""

    def __init__(self, root: Path, *, origin: str, target: dict, nodes: list[str],
                 interval_s: float | None, extra: dict | None = None) -> None:
        if origin not in ("launch", "collect"):
            raise ValueError(f"origin must be launch or collect, not {origin!r}")
        for node in nodes:
            layout.check_name(node)
        self.root = root
        try:
            root.mkdir(parents=True, exist_ok=True)
        except OSError as exc:
            raise InputError(f"cannot create bundle folder {root}: {exc.strerror or exc}") from exc
        self._lock = threading.Lock()
        self._files: dict[tuple[str, str], _Appender] = {}
        self.info: dict[str, Any] = {
            "schema_version": layout.SCHEMA_VERSION,
            "kind": layout.KIND,
            "created": time.time(),
            "tool_version": __version__,
            "origin": origin,
            "target": target,
            "nodes": list(nodes),
            "interval_s": interval_s,
            "started": time.time(),
            "ended": None,
            "outcome": "running",
            **(extra or {}),
        }
        write_document(root / layout.BUNDLE_FILE, self.info)
        for node in nodes:
            (self.node_dir(node)).mkdir(parents=True, exist_ok=True)

    def node_dir(self, node: str) -> Path:
        return self.root / layout.NODES_DIR / layout.check_name(node)

    def _appender(self, key: tuple[str, str], path: Path) -> _Appender:
        appender = self._files.get(key)
        if appender is None:
            appender = self._files[key] = _Appender(path)
        return appender

    def append(self, node: str, relpath: str, record: dict) -> None:
        """Append one record to a node's record file (`samples/host.jsonl`, `logs/x.lines.jsonl`)."""
        layout.check_record_file(relpath)
        path = self.node_dir(node) / relpath
        with self._lock:
            self._appender((node, relpath), path).append(record)

    def manifest(self, entry: dict) -> None:
        """Append one manifest line (`collector`, `node`, `command`, ... as in docs/formats.md)."""
        layout.check_name(entry["node"])
        with self._lock:
            self._appender(("", layout.MANIFEST_FILE), self.root / layout.MANIFEST_FILE).append(entry)

    def event(self, kind: str, node: str | None = None, **details: Any) -> None:
        """Append a supervision event (`events.jsonl`): what happened to a node, when."""
        record = {"t": time.time(), "event": kind, "node": node, **details}
        with self._lock:
            self._appender(("", layout.EVENTS_FILE), self.root / layout.EVENTS_FILE).append(record)

    def count(self, node: str, relpath: str) -> int:
        """How many records this writer appended to a node's file so far."""
        with self._lock:
            appender = self._files.get((node, relpath))
            return appender.count if appender else 0

    def node_document(self, node: str, name: str, document: dict) -> None:
        """Write `environment.json` or `clock.json` of a node."""
        if name not in layout.NODE_DOCUMENTS:
            raise InputError(f"{name!r} is not a node document of the bundle format")
        write_document(self.node_dir(node) / name,
                       {"schema_version": layout.SCHEMA_VERSION, **document})

    def environment_diff(self, document: dict) -> None:
        write_document(self.root / layout.ENV_DIFF_FILE,
                       {"schema_version": layout.SCHEMA_VERSION, **document})

    def finish(self, outcome: str, **extra: Any) -> None:
        """Close every record file and rewrite bundle.json with the end time and outcome."""
        with self._lock:
            for appender in self._files.values():
                appender.close()
            self._files.clear()
            self.info.update(extra)
            self.info["ended"] = time.time()
            self.info["outcome"] = outcome
            write_document(self.root / layout.BUNDLE_FILE, self.info)


def export_bundle(bundle_dir: Path, dest: Path) -> Path:
    """Write `bundle_dir` as one .tar.gz whose single top-level folder is the bundle, with every
    secret in its files replaced (bundle/export_redact.py); the folder itself is unchanged.

    Only regular files and folders go in (links are left out); members are sorted so that two
    exports of the same bundle list the same files in the same order. `export.json` at the top
    says how many secret occurrences were replaced.
    """
    if not (bundle_dir / layout.BUNDLE_FILE).is_file():
        raise InputError(f"{bundle_dir} is not an evidence bundle (no {layout.BUNDLE_FILE})")
    top = bundle_dir.resolve().name
    dest.parent.mkdir(parents=True, exist_ok=True)
    tmp = dest.with_name(dest.name + ".tmp")
    scrubber = BundleScrubber()
    with tarfile.open(tmp, "w:gz") as tar:
        tar.add(bundle_dir, arcname=top, recursive=False)
        for path in sorted(bundle_dir.rglob("*")):
            if path.is_symlink() or not (path.is_file() or path.is_dir()):
                continue
            name = f"{top}/{path.relative_to(bundle_dir).as_posix()}"
            if path.is_dir() or path.name == EXPORT_NOTE:
                if path.is_dir():
                    tar.add(path, arcname=name, recursive=False)
                continue
            clean = scrubber.file(path.name, path.read_bytes())
            if clean is None:
                tar.add(path, arcname=name, recursive=False)
            else:
                _add_bytes(tar, name, clean, path.stat().st_mtime)
        note = {"schema_version": layout.SCHEMA_VERSION, "kind": "bundle-export",
                "tool_version": __version__, "redacted": True,
                "secrets_replaced": scrubber.replaced}
        _add_bytes(tar, f"{top}/{EXPORT_NOTE}", (dumps(note) + "\n").encode(), time.time())
    os.replace(tmp, dest)
    return dest


EXPORT_NOTE = "export.json"


def _add_bytes(tar: tarfile.TarFile, name: str, data: bytes, mtime: float) -> None:
    info = tarfile.TarInfo(name)
    info.size = len(data)
    info.mtime = int(mtime)
    info.mode = 0o644
    tar.addfile(info, io.BytesIO(data))
