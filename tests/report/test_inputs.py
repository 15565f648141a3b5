"""Reading a run directory: absent files are fine, malformed ones are one-line errors."""

from __future__ import annotations

import json

import pytest

from sparktriage.errors import InputError
from sparktriage.report.inputs import load_run


def _run(tmp_path, **files):
    root = tmp_path / "run"
    (root / "launches" / "L001").mkdir(parents=True)
    (root / "run.json").write_text(json.dumps({"schema_version": 1, "kind": "sparktriage-run"}))
    for rel, text in files.items():
        path = root / rel.replace("__", "/")
        path.parent.mkdir(parents=True, exist_ok=True)
        path.write_text(text)
    return root


def test_minimal_run_loads_with_everything_else_absent(tmp_path):
    inputs = load_run(_run(tmp_path))
    assert list(inputs.files) == ["run.json"] and inputs.launches == []


def test_torn_last_record_is_tolerated_and_extra_fields_kept(tmp_path):
    root = _run(tmp_path, **{"launches__L001__requests.jsonl": '{"type": "request", "x": 1}\n{"type": "req'})
    inputs = load_run(root)
    assert inputs.records("launches/L001/requests.jsonl") == [{"type": "request", "x": 1}]


@pytest.mark.parametrize("rel, text, fragment", [
    ("launches__L001__bench.json", "{not json", "launches/L001/bench.json:1: not valid JSON"),
    ("launches__L001__probe.json", "[1, 2]", "launches/L001/probe.json: expected a JSON object"),
    ("launches__L001__stalls.json", '{"schema_version": 9}', "schema_version 9 is not supported"),
    ("deployment.yaml", "a: [1,\nb: 2\n", "deployment.yaml:"),
    ("deployment.yaml", "- just\n- a list\n", "expected a YAML mapping"),
    ("launches__L001__requests.jsonl", "{}\nnope\n{}\n", "launches/L001/requests.jsonl:2: malformed record"),
    ("sweep.json", "\xff", "sweep.json"),
])
def test_malformed_documents_name_the_file(tmp_path, rel, text, fragment):
    with pytest.raises(InputError, match=fragment.replace("[", r"\[")):
        load_run(_run(tmp_path, **{rel: text}))


def test_not_a_run_directory(tmp_path):
    with pytest.raises(InputError, match="no such run directory"):
        load_run(tmp_path / "absent")
    with pytest.raises(InputError, match="no run.json"):
        load_run(tmp_path)
    (tmp_path / "run.json").write_text('{"kind": "something-else"}')
    with pytest.raises(InputError, match="not a sparktriage run"):
        load_run(tmp_path)
