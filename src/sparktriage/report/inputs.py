"""Reading a run directory for the report: every document it may use, tolerant of absence.

The report is a pure function of these files (docs/formats.md gives their places). A file that
is absent is simply not in `RunInputs.files` (the section that needed it says it is missing);
a file that is present but malformed (not JSON or YAML, not an object, an unknown
`schema_version`) stops the report with a one-line error naming the file. A document with a
typed model (`sparktriage.documents`: bench, launch, logs, reconcile, stalls, probe, sweep) is
validated against it: a missing or mistyped field, an unknown field or another
`schema_version` stops the report with a one-line error naming the file and the field (exit 2).
sweep.json is kept as its typed record (`documents.sweep.read`, which also upgrades an older
producer's file), so the sweep section renders the record's fields and validates nothing again.
Other files (run.json, capabilities, bundle and node captures) keep their tolerant reading:
extra fields are ignored there. Files are read in a fixed, sorted order so that everything downstream
(redaction stand-ins above all) is deterministic.
"""

from __future__ import annotations

from dataclasses import dataclass
from functools import cached_property
from pathlib import Path
from typing import Any, Callable

import yaml

from sparktriage import yamlsafe
from sparktriage.documents.bench import BenchDocument, LaunchDocument
from sparktriage.documents.client_code import ClientCodeDocument
from sparktriage.documents.logs import LogsDocument
from sparktriage.documents.probe import ProbeDocument
from sparktriage.documents.reconcile import ReconcileDocument
from sparktriage.documents.stalls import StallsDocument
from sparktriage.documents.sweep import SweepDocument, read as read_sweep
from sparktriage.errors import InputError
from sparktriage.store.documents import read_document_bounded, read_records
from sparktriage.store.rundir import SCHEMA_VERSION
from sparktriage.store.typed import Document, parse

SWEEP_LAUNCHES = "sweep/launches/"  # a session's sweep is a run directory of its own in DIR/sweep
SWEEP_PREFIX = "sweep."
TOP_FILES = ("run.json", "deployment.yaml", "sweep.json", "reproduce.json", "client-code.json",
             "preflight.json")
LAUNCH_FILES = ("launch.json", "capabilities.json", "bench.json", "requests.jsonl", "logs.json",
                "reconcile.json", "stalls.json", "probe.json", "selfcheck-findings.json")
BUNDLE_FILES = ("bundle.json", "environment-diff.json")
NODE_FILES = ("environment.json", "clock.json")
MODELS: dict[str, type[Document]] = {m.FILE: m for m in (  # validated on reading
    LaunchDocument, BenchDocument, LogsDocument, ReconcileDocument, StallsDocument, ProbeDocument,
    ClientCodeDocument)}
# documents kept as their typed records (kind "record"): the file's JSON object becomes one here
RECORDS: dict[str, Callable[[dict, str], Document]] = {SweepDocument.FILE: read_sweep}


@dataclass(frozen=True)
class SourceFile:
    """One input file, parsed: a dict (json, yaml), a list of dicts (jsonl) or a typed record
    (record: a document in RECORDS)."""

    rel: str  # POSIX path relative to the run directory
    kind: str  # json | jsonl | yaml | record
    content: Any

    @property
    def data(self) -> Any:
        """The file's JSON or YAML value (a record's JSON object, as the file gave it)."""
        return self.content.to_dict() if self.kind == "record" else self.content

    def replaced(self, rel: str, data: Any) -> "SourceFile":
        """The same kind of file at `rel` holding `data` (a changed copy: redacted)."""
        if self.kind == "record":
            return SourceFile(rel, "record", RECORDS[rel.rsplit("/", 1)[-1]](data, rel))
        return SourceFile(rel, self.kind, data)


@dataclass(frozen=True)
class RunInputs:
    """The parsed files of one run directory, keyed by relative path (sorted)."""

    root: str
    files: dict[str, SourceFile]

    def doc(self, rel: str) -> dict | None:
        source = self.files.get(rel)
        return source.content if source is not None and source.kind in ("json", "yaml") else None

    @property
    def sweep(self) -> SweepDocument | None:
        """The sweep's record (sweep.json), None without a sweep."""
        source = self.files.get(SweepDocument.FILE)
        return source.content if source is not None else None

    def records(self, rel: str) -> list[dict] | None:
        source = self.files.get(rel)
        return source.content if source is not None and source.kind == "jsonl" else None

    @cached_property  # the files never change after reading (with_files makes a new RunInputs)
    def folders(self) -> dict[str, str]:
        """Every launch of the run directory, its id and its folder: the session's own launches
        (`launches/L001`) and its sweep's (`sweep/launches/S001`). An id names one launch in the
        whole report; where a sweep label is also a session launch's (a run directory written
        before the sweep numbered its launches apart), every sweep launch is `sweep.L001`, ...."""
        top = sorted({rel.split("/")[1] for rel in self.files if rel.startswith("launches/")})
        swept = sorted({rel.split("/")[2] for rel in self.files if rel.startswith(SWEEP_LAUNCHES)})
        prefix = SWEEP_PREFIX if set(top) & set(swept) else ""
        ids = {label: f"launches/{label}" for label in top}
        ids.update({f"{prefix}{label}": f"{SWEEP_LAUNCHES}{label}" for label in swept})
        return dict(sorted(ids.items()))

    @property
    def launches(self) -> list[str]:
        return list(self.folders)

    def folder(self, label: str) -> str:
        """The folder of launch `label` relative to the run directory."""
        return self.folders.get(label, f"launches/{label}")

    def sweep_launch(self, label: str) -> str:
        """The launch id of a label as `sweep.json` gives it: a session's sweep runs in `sweep/`,
        so its labels name folders under `sweep/launches/`."""
        folders = self.folders
        inside = f"{SWEEP_LAUNCHES}{label}"
        return next((i for i, f in folders.items() if f == inside), label)

    def launch_doc(self, label: str, name: str) -> dict | None:
        return self.doc(f"{self.folder(label)}/{name}")

    def launch_records(self, label: str, name: str = "requests.jsonl") -> list[dict] | None:
        return self.records(f"{self.folder(label)}/{name}")

    def bundle_nodes(self, label: str) -> list[str]:
        prefix = f"{self.folder(label)}/bundle/nodes/"
        return sorted({rel[len(prefix):].split("/")[0] for rel in self.files if rel.startswith(prefix)})

    def with_files(self, files: dict[str, SourceFile]) -> "RunInputs":
        return RunInputs(self.root, dict(sorted(files.items())))


def _check_version(doc: dict, rel: str) -> None:
    version = doc.get("schema_version")
    if version is not None and version != SCHEMA_VERSION:
        raise InputError(f"{rel}: schema_version {version!r} is not supported (this sparktriage "
                         f"reads {SCHEMA_VERSION})")


def _read_json(path: Path, rel: str) -> dict:
    doc = read_document_bounded(path, name=rel, follow_symlinks=False)  # capped, never a link
    if not isinstance(doc, dict):
        raise InputError(f"{rel}: expected a JSON object, found {type(doc).__name__}")
    _check_version(doc, rel)
    return doc


def _read_jsonl(path: Path, rel: str) -> list[dict]:
    return list(read_records(path, name=rel, objects_only=True))


def _read_yaml(path: Path, rel: str) -> dict:
    try:
        doc, _ = yamlsafe.load(yamlsafe.read_text(path), rel)
    except UnicodeDecodeError as exc:
        raise InputError(f"{rel}: not UTF-8 text ({exc.reason})") from exc
    except yaml.YAMLError as exc:
        mark = getattr(exc, "problem_mark", None)
        where = f"{rel}:{mark.line + 1}" if mark is not None else rel
        problem = getattr(exc, "problem", None) or getattr(exc, "reason", None) or "malformed"
        raise InputError(f"{where}: not valid YAML ({problem})") from exc
    except OSError as exc:
        raise InputError(f"{rel}: unreadable ({exc.strerror or exc})") from exc
    if doc is None:
        doc = {}
    if not isinstance(doc, dict):
        raise InputError(f"{rel}: expected a YAML mapping, found {type(doc).__name__}")
    _check_version(doc, rel)
    return doc


def _load(path: Path, rel: str) -> SourceFile:
    if rel.endswith(".jsonl"):
        return SourceFile(rel, "jsonl", _read_jsonl(path, rel))
    if rel.endswith((".yaml", ".yml")):
        return SourceFile(rel, "yaml", _read_yaml(path, rel))
    doc = _read_json(path, rel)
    if rel in RECORDS:
        return SourceFile(rel, "record", RECORDS[rel](doc, rel))
    model = MODELS.get(rel.rsplit("/", 1)[-1]) if "/bundle/" not in rel else None
    if model is not None:
        parse(model, doc, rel)
    return SourceFile(rel, "json", doc)


def _candidates(root: Path) -> list[str]:
    rels = [name for name in TOP_FILES]
    for where in ("launches", SWEEP_LAUNCHES.rstrip("/")):
        rels += _launch_candidates(root, where)
    return rels


def _launch_candidates(root: Path, where: str) -> list[str]:
    rels: list[str] = []
    launches = root / where
    if _real_dir(root / where.split("/")[0]) and launches.is_dir() and not launches.is_symlink():
        for launch in sorted(p for p in launches.iterdir() if _real_dir(p)):
            base = f"{where}/{launch.name}"
            rels += [f"{base}/{name}" for name in LAUNCH_FILES]
            rels += [f"{base}/bundle/{name}" for name in BUNDLE_FILES]
            nodes = launch / "bundle" / "nodes"
            if nodes.is_dir():
                for node in sorted(p for p in nodes.iterdir() if _real_dir(p)):
                    rels += [f"{base}/bundle/nodes/{node.name}/{name}" for name in NODE_FILES]
    return rels


def _real_dir(path: Path) -> bool:
    return path.is_dir() and not path.is_symlink()


def _check_no_link(root: Path, rel: str) -> None:
    """Refuse a run-directory input reached through a symbolic link (its target could be any
    local file, which the report would then publish)."""
    path = root
    for part in rel.split("/"):
        path = path / part
        if path.is_symlink():
            raise InputError(f"{rel}: a symbolic link in the run directory (not followed)",
                             hint="replace it with the file itself")


def load_run(root: Path) -> RunInputs:
    """Parse every report input of a run directory; InputError on the first malformed file."""
    if not root.is_dir():
        raise InputError(f"{root}: no such run directory")
    if not (root / "run.json").is_file():
        raise InputError(f"{root}: not a sparktriage run directory (no run.json)")
    files: dict[str, SourceFile] = {}
    for rel in _candidates(root):
        path = root / rel
        _check_no_link(root, rel)
        if path.is_file():
            files[rel] = _load(path, rel)
    run = files["run.json"].content
    if run.get("kind") not in (None, "sparktriage-run"):
        raise InputError(f"run.json: kind {run.get('kind')!r} is not a sparktriage run")
    return RunInputs(str(root), dict(sorted(files.items())))
