"""Append-only raw records and atomic derived documents."""

from __future__ import annotations

import json
import math

import pytest

from sparktriage.errors import InputError
from sparktriage.store.documents import RecordWriter, dumps, read_document, read_records, write_document


def test_records_are_on_disk_as_soon_as_appended(tmp_path):
    path = tmp_path / "r.jsonl"
    writer = RecordWriter(path)
    writer.append({"a": 1})
    assert path.read_text() == '{"a": 1}\n'  # readable before the writer is closed
    writer.append({"b": "é"})
    assert [json.loads(l) for l in path.read_text().splitlines()] == [{"a": 1}, {"b": "é"}]
    writer.close()
    with RecordWriter(path) as again:  # reopening appends, never truncates
        again.append({"c": 3})
    assert [r for r in read_records(path)] == [{"a": 1}, {"b": "é"}, {"c": 3}]


def test_a_torn_last_line_is_the_record_in_flight(tmp_path):
    path = tmp_path / "r.jsonl"
    path.write_text('{"a": 1}\n{"b": 2}\n{"c": ')
    assert list(read_records(path)) == [{"a": 1}, {"b": 2}]


def test_a_broken_line_inside_is_an_error_with_its_line(tmp_path):
    path = tmp_path / "r.jsonl"
    path.write_text('{"a": 1}\n{"b": \n{"c": 3}\n')
    with pytest.raises(InputError, match=r"r\.jsonl:2: malformed record"):
        list(read_records(path))
    with pytest.raises(InputError, match="no such file"):
        list(read_records(tmp_path / "absent.jsonl"))


def test_non_finite_numbers_become_null():
    assert json.loads(dumps({"x": math.nan, "y": [math.inf, 1.5]})) == {"x": None, "y": [None, 1.5]}


def test_documents_are_written_whole(tmp_path):
    path = tmp_path / "d" / "doc.json"
    write_document(path, {"schema_version": 1, "v": math.nan})
    assert read_document(path) == {"schema_version": 1, "v": None}
    assert not list(path.parent.glob("*.tmp")) and path.read_text().endswith("\n")
    path.write_text("{oops")
    with pytest.raises(InputError, match="not a readable JSON document"):
        read_document(path)
