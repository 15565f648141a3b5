"""docs/formats.md against the document models: every documented field exists in the model's
JSON Schema (with the same required mark) and every field of the schema is documented."""

from __future__ import annotations

import re
from pathlib import Path

from documents.schema_fields import field_lines
from sparktriage.documents import registry

FORMATS = Path(__file__).resolve().parents[2] / "docs" / "formats.md"


def _documented(path: Path = FORMATS) -> dict[str, dict[str, set[str]]]:
    block = re.search(r"```fields\n(.*?)```", path.read_text(encoding="utf-8"), re.S)
    assert block, "docs/formats.md has no ```fields block"
    out: dict[str, dict[str, set[str]]] = {}
    for line in block.group(1).splitlines():
        head, _, fields = line.partition(": ")
        name, _, path = head.partition(" ")
        out.setdefault(name, {})[path] = {f.strip() for f in fields.split(",")}
    return out


def test_every_document_model_is_documented_and_nothing_else():
    assert sorted(_documented()) == registry.names()


def test_documented_fields_are_the_schema_fields_both_ways():
    documented = _documented()
    for name in registry.names():
        actual = {path: set(fields) for path, fields in field_lines(registry.json_schema(name)).items()}
        missing_in_docs = {(p, f) for p, fs in actual.items() for f in fs - documented[name].get(p, set())}
        missing_in_schema = {(p, f) for p, fs in documented[name].items() for f in fs - actual.get(p, set())}
        assert not missing_in_docs, f"{name}: fields of the model not in docs/formats.md: {sorted(missing_in_docs)}"
        assert not missing_in_schema, f"{name}: documented fields the model lacks: {sorted(missing_in_schema)}"


def test_the_checker_sees_a_drift(tmp_path):
    """The check is not vacuous: a field dropped from one line, or a required mark changed,
    shows up."""
    text = FORMATS.read_text(encoding="utf-8")
    changed = text.replace("sweep decision: depth!, reason!,", "sweep decision: depth, reason!,")
    assert changed != text
    fake = tmp_path / "formats.md"
    fake.write_text(changed, encoding="utf-8")
    documented = _documented(fake)
    actual = field_lines(registry.json_schema("sweep"))
    assert set(actual["decision"]) != documented["sweep"]["decision"]
