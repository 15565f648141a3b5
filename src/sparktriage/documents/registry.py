"""The registry of typed documents: every document one stage writes and a later stage reads,
by name (`sparktriage schema NAME`), with the file name it has in a run directory.

The models are the modules of this package (`documents/bench.py`, ...); this module only lists
them. `model_for_file` maps a run-directory file name to its model, for
readers that walk a run directory (the report)."""

from __future__ import annotations

import json

from sparktriage.documents.bench import BenchDocument, LaunchDocument
from sparktriage.documents.client_code import ClientCodeDocument
from sparktriage.documents.launch import LaunchResult
from sparktriage.documents.logs import LogsDocument
from sparktriage.documents.probe import ProbeDocument
from sparktriage.documents.reconcile import ReconcileDocument
from sparktriage.documents.report import ReportDocument
from sparktriage.documents.session import DemoDocument, SelfcheckDocument
from sparktriage.documents.stalls import StallsDocument
from sparktriage.documents.sweep import SweepDocument
from sparktriage.errors import UsageError
from sparktriage.store.typed import Document

MODELS: dict[str, type[Document]] = {m.NAME: m for m in (
    BenchDocument, LaunchDocument, LaunchResult, LogsDocument, StallsDocument, ProbeDocument,
    ReconcileDocument, SweepDocument, SelfcheckDocument, DemoDocument, ReportDocument,
    ClientCodeDocument)}
BY_FILE: dict[str, type[Document]] = {m.FILE: m for m in MODELS.values() if m.FILE}


def names() -> list[str]:
    return sorted(MODELS)


def model(name: str) -> type[Document]:
    try:
        return MODELS[name]
    except KeyError:
        raise UsageError(f"no document named {name!r} (known: {', '.join(names())})") from None


def model_for_file(file_name: str) -> type[Document] | None:
    """The model of a run-directory file by its base name (`bench.json`), or None."""
    return BY_FILE.get(file_name)


def listing() -> list[str]:
    """One line per document: name, run-directory file (or -), what it is."""
    out = []
    for name in names():
        model = MODELS[name]
        summary = (model.__doc__ or "").strip().splitlines()[0]
        out.append(f"{name}\t{model.FILE or '-'}\t{summary}")
    return out


def json_schema(name: str) -> dict:
    return model(name).model_json_schema()


def json_schema_text(name: str) -> str:
    return json.dumps(json_schema(name), indent=2) + "\n"
