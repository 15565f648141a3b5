"""The run directory: where one session's raw evidence and derived documents live.

Layout (docs/formats.md, schema_version 1):

    RUN_DIR/
      run.json                     what ran: tool version, command, created (UTC)
      launches/<label>/
        launch.json                the server measured: endpoint, model, server version
        requests.jsonl             raw request records, appended as they arrive
        bench.json                 derived protocol summary (rebuilt from requests.jsonl)
      ...                          later stages add their own files beside these
"""

from __future__ import annotations

import datetime as _dt
import re
import shutil
from contextlib import contextmanager
from dataclasses import dataclass
from pathlib import Path
from typing import Iterator

from sparktriage import __version__
from sparktriage.errors import InputError
from sparktriage.store.documents import RecordWriter, read_document, write_document
from sparktriage.store.typed import Document, check

SCHEMA_VERSION = 1  # bump on any breaking change of the run-directory layout or documents

_LABEL = re.compile(r"[A-Za-z0-9][A-Za-z0-9._-]{0,63}")


@contextmanager
def provisional_run(path: Path, command: list[str]) -> Iterator["RunDir"]:
    """The run directory of a command that measures: if the command fails before it recorded
    anything, a folder it created is removed again (an existing one is left as it was)."""
    existed = path.exists()
    run = RunDir.create(path, command)
    try:
        yield run
    except BaseException:
        if not existed and not run.has_records():
            shutil.rmtree(path, ignore_errors=True)
        raise


def claim_launch(run: "RunDir", label: str | None, outputs: tuple[str, ...]) -> LaunchDir:
    """The launch a command records into: a new one, or `label` (an existing launch shared
    with an earlier command) when none of `outputs` is there yet (nothing is ever overwritten)."""
    if label is None:
        return run.next_launch()
    launch = run.existing_launch(label)
    taken = [name for name in outputs if (launch.path / name).exists()]
    if taken:
        raise InputError(f"{launch.path}: already has {', '.join(taken)} (a launch is measured "
                         "once per command; use a new launch)")
    return launch


def utc_now() -> str:
    """Current UTC time as an ISO 8601 string with microseconds and a Z suffix."""
    return _dt.datetime.now(_dt.timezone.utc).isoformat(timespec="microseconds").replace(
        "+00:00", "Z"
    )


def default_run_path(base: Path = Path("runs")) -> Path:
    """A new timestamped folder name under ./runs/ (not created)."""
    stamp = _dt.datetime.now().strftime("%Y%m%d-%H%M%S")
    path = base / stamp
    suffix = 1
    while path.exists():
        suffix += 1
        path = base / f"{stamp}-{suffix}"
    return path


@dataclass(frozen=True)
class LaunchDir:
    """One server launch inside a run directory."""

    path: Path

    @property
    def label(self) -> str:
        return self.path.name

    @property
    def requests_path(self) -> Path:
        return self.path / "requests.jsonl"

    def request_writer(self) -> RecordWriter:
        return RecordWriter(self.requests_path)

    def write(self, name: str, document: dict, model: type[Document] | None = None) -> Path:
        """Write a derived document (with schema_version); with `model`, checked against it
        first (store.typed.check: the bytes written do not change)."""
        target = self.path / name
        full = {"schema_version": SCHEMA_VERSION, **document}
        if model is not None:
            check(model, full, name)
        write_document(target, full)
        return target


@dataclass(frozen=True)
class RunDir:
    """A run directory on disk."""

    path: Path

    @classmethod
    def create(cls, path: Path, command: list[str]) -> "RunDir":
        """Create (or reopen) a run directory; an existing run.json is kept, never rewritten."""
        try:
            path.mkdir(parents=True, exist_ok=True)
        except OSError as exc:
            raise InputError(f"cannot create run directory {path}: {exc.strerror or exc}") from exc
        run = cls(path)
        if not run.run_file.exists():
            write_document(
                run.run_file,
                {
                    "schema_version": SCHEMA_VERSION,
                    "kind": "sparktriage-run",
                    "tool_version": __version__,
                    "created": utc_now(),
                    "command": command,
                },
            )
        return run

    @classmethod
    def open(cls, path: Path) -> "RunDir":
        """Open an existing run directory, checking its schema version."""
        run = cls(path)
        doc = read_document(run.run_file)
        if doc.get("kind") != "sparktriage-run":
            raise InputError(f"{path} is not a sparktriage run directory (run.json kind)")
        if doc.get("schema_version") != SCHEMA_VERSION:
            raise InputError(
                f"{path}: run directory schema_version {doc.get('schema_version')} is not "
                f"supported (this sparktriage reads {SCHEMA_VERSION})"
            )
        return run

    @property
    def run_file(self) -> Path:
        return self.path / "run.json"

    def launch(self, label: str) -> LaunchDir:
        if not _LABEL.fullmatch(label):
            raise InputError(f"launch label {label!r} must be 1-64 of [A-Za-z0-9._-]")
        launch = LaunchDir(self.path / "launches" / label)
        launch.path.mkdir(parents=True, exist_ok=True)
        return launch

    def next_launch(self, prefix: str = "L") -> LaunchDir:
        """A new launch folder, numbered after the existing ones (L001, L002, ...; `prefix`
        replaces the L)."""
        root = self.path / "launches"
        existing = sorted(p.name for p in root.iterdir()) if root.is_dir() else []
        number = 1
        while f"{prefix}{number:03d}" in existing:
            number += 1
        return self.launch(f"{prefix}{number:03d}")

    def existing_launch(self, label: str) -> LaunchDir:
        """A launch folder an earlier command made (`--launch L001`); an input error otherwise."""
        if not _LABEL.fullmatch(label):
            raise InputError(f"launch label {label!r} must be 1-64 of [A-Za-z0-9._-]")
        launch = LaunchDir(self.path / "launches" / label)
        if not launch.path.is_dir():
            have = ", ".join(l.label for l in self.launches()) or "none"
            raise InputError(f"{self.path}: no launch {label} (launches here: {have})")
        return launch

    def has_records(self) -> bool:
        """Whether anything was measured here: a non-empty file in a launch folder."""
        root = self.path / "launches"
        return root.is_dir() and any(f.is_file() and f.stat().st_size > 0
                                     for f in root.rglob("*") if not f.is_symlink())

    def launches(self) -> list[LaunchDir]:
        root = self.path / "launches"
        if not root.is_dir():
            return []
        return [LaunchDir(p) for p in sorted(root.iterdir()) if p.is_dir()]
