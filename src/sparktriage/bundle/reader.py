"""Read an evidence bundle: a folder, or the .tar.gz `collect --export` writes.

    with Bundle.open(path) as bundle:
        for node in bundle.nodes():
            for sample in bundle.host_samples(node): ...
            for dump in bundle.stacks(node): ...
            for line in bundle.log_lines(node): ...

Archives are unpacked into a private temporary folder that `close()` removes. Bundles come
from other people's machines, so extraction refuses anything but plain files and folders
below the single top-level folder (no absolute names, no `..`, no links or devices) and caps
the unpacked size. The schema version is checked on open; records are yielded as the typed
dataclasses of `bundle.records`, in file order.
"""

from __future__ import annotations

import heapq
import shutil

import tempfile
from dataclasses import dataclass
from pathlib import Path, PurePosixPath
from typing import Any, Iterator

from sparktriage.errors import InputError
from sparktriage.bundle import layout
from sparktriage.bundle.archive import Archive
from sparktriage.bundle.indexed import IndexedRecords
from sparktriage.bundle.records import (
    SAMPLE_TYPES, ClockInfo, DiskSample, DmesgLine, GpuSample, HostSample, LineRecord,
    ManifestEntry, NetSample, ProcSample, StackDump, from_dict,
)
from sparktriage.limits import ARCHIVE_MAX_MEMBERS, ARCHIVE_MAX_TOTAL_BYTES
from sparktriage.store.documents import read_document_bounded, read_records

MAX_UNPACKED_BYTES = ARCHIVE_MAX_TOTAL_BYTES
MAX_MEMBERS = ARCHIVE_MAX_MEMBERS


@dataclass(frozen=True)
class BundleInfo:
    """`bundle.json`: what was collected, where, when, and how it ended."""

    schema_version: int
    origin: str
    target: dict
    nodes: list[str]
    interval_s: float | None
    started: float | None
    ended: float | None
    outcome: str | None
    created: float | None
    tool_version: str | None
    raw: dict  # the whole document, fields added by newer writers included


def _safe_extract(archive: Path, into: Path) -> Path:
    """Unpack a bundle archive (checked and capped by `bundle.archive`); return its folder."""
    unpacked = Archive.opened(archive)
    tops = unpacked.tops()
    if len(tops) != 1:
        raise InputError(f"{archive}: a bundle archive has one top-level folder, found "
                         f"{len(tops)}")
    del into  # the archive's own private folder, kept for the command's life
    top = tops.pop()
    if unpacked.kind(f"{top}/{layout.BUNDLE_FILE}") != "file":
        what = "a folder" if unpacked.kind(f"{top}/{layout.BUNDLE_FILE}") else "missing"
        raise InputError(f"{archive}: member '{top}/{layout.BUNDLE_FILE}' is {what}, not a file "
                         "(not an evidence bundle)")
    return unpacked.unpacked() / top


class Bundle:
    """An evidence bundle opened for reading."""

    def __init__(self, root: Path, tmp: Path | None = None) -> None:
        self.root = root
        self._tmp = tmp
        doc = self._document(root / layout.BUNDLE_FILE, required=True)
        if doc.get("kind") != layout.KIND:
            raise InputError(f"{root}: not an evidence bundle (bundle.json kind "
                             f"{doc.get('kind')!r})")
        if doc.get("schema_version") != layout.SCHEMA_VERSION:
            raise InputError(f"{root}: bundle schema_version {doc.get('schema_version')} is not "
                             f"supported (this sparktriage reads {layout.SCHEMA_VERSION})")
        self.info = BundleInfo(
            schema_version=doc["schema_version"], origin=doc.get("origin", ""),
            target=doc.get("target") or {}, nodes=list(doc.get("nodes") or []),
            interval_s=doc.get("interval_s"), started=doc.get("started"), ended=doc.get("ended"),
            outcome=doc.get("outcome"), created=doc.get("created"),
            tool_version=doc.get("tool_version"), raw=doc,
        )

    @classmethod
    def open(cls, path: Path | str) -> "Bundle":
        """Open a bundle folder or a `.tar.gz`/`.tgz`/`.tar` archive of one."""
        path = Path(path)
        if path.is_dir() and not path.is_symlink():
            return cls(path)
        if path.is_symlink():
            raise InputError(f"{path}: is a symbolic link (bundles are not read through links)")
        if not path.exists():
            raise InputError(f"{path}: no such bundle")
        tmp = Path(tempfile.mkdtemp(prefix="sparktriage-bundle-"))
        try:
            return cls(_safe_extract(path, tmp), tmp)
        except BaseException:
            shutil.rmtree(tmp, ignore_errors=True)
            raise

    @staticmethod
    def is_bundle(path: Path | str) -> bool:
        """Whether `path` looks like a bundle (folder with bundle.json, or an archive)."""
        path = Path(path)
        if path.is_dir():
            return (path / layout.BUNDLE_FILE).is_file()
        return path.is_file() and path.name.endswith((".tar.gz", ".tgz", ".tar"))

    def close(self) -> None:
        if self._tmp is not None:
            shutil.rmtree(self._tmp, ignore_errors=True)
            self._tmp = None
            Archive.close_unpacked(self.root)

    def __enter__(self) -> "Bundle":
        return self

    def __exit__(self, *exc: object) -> None:
        self.close()

    # --- documents -------------------------------------------------------------------------

    @staticmethod
    def _document(path: Path, required: bool = False) -> dict:
        if not path.is_file() and not path.is_symlink():
            if required:
                raise InputError(f"{path}: missing" + (" (a folder, not a file)"
                                                       if path.is_dir() else ""))
            return {}
        doc = read_document_bounded(path, follow_symlinks=False)  # capped, never a symlink
        if not isinstance(doc, dict):
            raise InputError(f"{path}: expected a JSON object")
        return doc

    def nodes(self) -> list[str]:
        """Node names: those bundle.json lists, plus any node folder present."""
        names = [n for n in self.info.nodes if isinstance(n, str)]
        folder = self.root / layout.NODES_DIR
        if folder.is_dir():
            names += sorted(p.name for p in folder.iterdir()
                            if p.is_dir() and not p.is_symlink() and p.name not in names)
        return [layout.check_name(n) for n in names]

    def node_dir(self, node: str) -> Path:
        path = self.root / layout.NODES_DIR / layout.check_name(node)
        if path.is_symlink() or (self.root / layout.NODES_DIR).is_symlink():
            raise InputError(f"{path}: a symbolic link in the bundle (not followed)")
        return path

    def environment(self, node: str) -> dict | None:
        """The node's environment capture, or None when it was not written."""
        return self._document(self.node_dir(node) / "environment.json") or None

    def clock(self, node: str) -> ClockInfo | None:
        doc = self._document(self.node_dir(node) / "clock.json")
        return from_dict(ClockInfo, doc) if doc else None

    def environment_diff(self) -> dict | None:
        return self._document(self.root / layout.ENV_DIFF_FILE) or None

    # --- records ---------------------------------------------------------------------------

    def _records(self, path: Path) -> Iterator[dict]:
        if path.is_symlink():
            raise InputError(f"{path}: is a symbolic link (not followed in a bundle)")
        if path.is_file():
            yield from read_records(path)

    def manifest(self) -> list[ManifestEntry]:
        return [from_dict(ManifestEntry, r) for r in self._records(self.root / layout.MANIFEST_FILE)]

    def events(self) -> list[dict]:
        """Supervision events (node started, ready, lost, torn down), in order."""
        return list(self._records(self.root / layout.EVENTS_FILE))

    def samples(self, node: str, kind: str) -> Iterator[Any]:
        """Sample records of one kind (`host`, `disk`, `net`, `procs`, `gpu`) of a node."""
        if kind not in SAMPLE_TYPES:
            raise InputError(f"unknown sample kind {kind!r} (known: {', '.join(SAMPLE_TYPES)})")
        cls = SAMPLE_TYPES[kind]
        for record in self._records(self.node_dir(node) / "samples" / f"{kind}.jsonl"):
            yield from_dict(cls, record)

    def host_samples(self, node: str) -> Iterator[HostSample]:
        return self.samples(node, "host")

    def disk_samples(self, node: str) -> Iterator[DiskSample]:
        return self.samples(node, "disk")

    def net_samples(self, node: str) -> Iterator[NetSample]:
        return self.samples(node, "net")

    def proc_samples(self, node: str) -> Iterator[ProcSample]:
        return self.samples(node, "procs")

    def gpu_samples(self, node: str) -> Iterator[GpuSample]:
        return self.samples(node, "gpu")

    def stacks(self, node: str) -> Iterator[StackDump]:
        for record in self._records(self.node_dir(node) / "stacks.jsonl"):
            yield from_dict(StackDump, record)

    def dmesg(self, node: str) -> Iterator[DmesgLine]:
        for record in self._records(self.node_dir(node) / "dmesg.jsonl"):
            yield from_dict(DmesgLine, record)

    def indexed(self, node: str, kind: str, name: str | None = None, clock_offset: float = 0.0,
                max_rounds: int = 0, compact=None) -> IndexedRecords:
        """A record file of a node indexed by time (`samples` with a sample kind, `stacks`,
        `dmesg`), read lazily by window; empty when the node has no such file."""
        if kind == "samples":
            if name not in SAMPLE_TYPES:
                raise InputError(f"unknown sample kind {name!r} (known: {', '.join(SAMPLE_TYPES)})")
            path = self.node_dir(node) / "samples" / f"{name}.jsonl"
        elif kind in ("stacks", "dmesg"):
            path = self.node_dir(node) / f"{kind}.jsonl"
        else:
            raise InputError(f"unknown record file kind {kind!r} (known: samples, stacks, dmesg)")
        return IndexedRecords.scan(path, clock_offset, max_rounds, compact)

    def log_names(self, node: str) -> list[str]:
        """Names of the line-record files of a node (`logs/<name>.lines.jsonl`)."""
        folder = self.node_dir(node) / "logs"
        if not folder.is_dir():
            return []
        names = [layout.log_name(f"logs/{p.name}") for p in folder.iterdir() if p.is_file()]
        return sorted(n for n in names if n)

    def log_path(self, node: str, name: str) -> Path:
        return self.node_dir(node) / layout.log_file(name)

    def log_lines(self, node: str, name: str | None = None) -> Iterator[LineRecord]:
        """Line records of one log of a node, or of all its logs merged by receive time."""
        names = [name] if name is not None else self.log_names(node)
        streams = [
            (from_dict(LineRecord, r) for r in self._records(self.log_path(node, n)))
            for n in names
        ]
        if len(streams) == 1:
            yield from streams[0]
        else:
            yield from heapq.merge(*streams, key=lambda rec: rec.t)
