"""The JSON contract of `bench` (issue 2): the typed model `documents.bench.BenchDocument`
encodes it (names, types, finite rates, the decode summary over the measured ok requests, its
interval around its mean); shared by several tests."""

from __future__ import annotations

from sparktriage.documents.bench import BenchDocument
from sparktriage.store.typed import parse


def check_bench_document(doc: dict) -> None:
    """Fail (InputError naming the field) unless `doc` keeps the contract."""
    parse(BenchDocument, doc, "bench.json")
