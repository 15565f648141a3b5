"""The run directory: creation, reopening, launches, schema version."""

from __future__ import annotations

import json

import pytest

from sparktriage.errors import InputError
from sparktriage.store.rundir import SCHEMA_VERSION, RunDir, default_run_path, utc_now


def test_create_reopen_and_launch_numbering(tmp_path):
    run = RunDir.create(tmp_path / "run", ["sparktriage", "bench"])
    meta = json.loads(run.run_file.read_text())
    assert meta["kind"] == "sparktriage-run" and meta["schema_version"] == SCHEMA_VERSION
    assert meta["command"] == ["sparktriage", "bench"] and meta["created"].endswith("Z")
    assert run.next_launch().label == "L001" and run.next_launch().label == "L002"
    again = RunDir.create(tmp_path / "run", ["other"])
    assert json.loads(again.run_file.read_text()) == meta  # run.json is never rewritten
    assert [l.label for l in RunDir.open(tmp_path / "run").launches()] == ["L001", "L002"]
    launch = run.launch("warm-1")
    target = launch.write("x.json", {"kind": "x"})
    assert json.loads(target.read_text()) == {"schema_version": SCHEMA_VERSION, "kind": "x"}


def test_open_refuses_foreign_or_newer_directories(tmp_path):
    (tmp_path / "a").mkdir()
    (tmp_path / "a" / "run.json").write_text('{"kind": "other"}')
    with pytest.raises(InputError, match="is not a sparktriage run directory"):
        RunDir.open(tmp_path / "a")
    run = RunDir.create(tmp_path / "b", [])
    run.run_file.write_text(json.dumps({"kind": "sparktriage-run", "schema_version": 99}))
    with pytest.raises(InputError, match="schema_version 99 is not supported"):
        RunDir.open(tmp_path / "b")


def test_bad_labels_and_unwritable_places(tmp_path):
    run = RunDir.create(tmp_path / "run", [])
    with pytest.raises(InputError, match="launch label"):
        run.launch("../escape")
    (tmp_path / "file").write_text("x")
    with pytest.raises(InputError, match="cannot create run directory"):
        RunDir.create(tmp_path / "file" / "run", [])


def test_default_paths_are_new_and_timestamped(tmp_path):
    first = default_run_path(tmp_path)
    first.mkdir()
    second = default_run_path(tmp_path)
    assert second != first and second.name.startswith(first.name)
    assert utc_now().endswith("Z")
