"""The sweep record is the file: every sweep.json the tests and goldens produce (the golden run
directories, every session of the consistency runs, a sweep's own contract document) read into
a `SweepDocument` and written again is the same bytes; an older producer's sweep.json is
upgraded on reading (its statistics summarised from its launches) without the upgrade being
written back."""

from __future__ import annotations

import json
from pathlib import Path

import pytest

from report.consistency_runs import CASES, make
from report.golden_runs import RUNS
from sparktriage.documents.sweep import SweepDocument, SweepJson, read
from sparktriage.errors import InputError
from sparktriage.redact import run as run_redaction
from sparktriage.stats.summary import summarize
from sparktriage.store.documents import write_document

SESSIONS = [c for c in CASES if c.kind == "session"]


def _sweep_files(root: Path) -> list[Path]:
    return sorted(p for p in (root / "sweep.json", root / "sweep" / "sweep.json") if p.is_file())


@pytest.fixture(scope="module")
def produced(tmp_path_factory) -> list[Path]:
    base = tmp_path_factory.mktemp("sweeps")
    files = []
    for name, maker in RUNS.items():
        run_redaction.new_run()
        files += _sweep_files(maker(base / name))
    for case in SESSIONS:
        files += _sweep_files(make(base / case.name, case))
    return files


def test_every_produced_sweep_json_round_trips_byte_for_byte(produced, tmp_path):
    assert len(produced) >= 2 * len(SESSIONS) + 2  # both copies of each session, two goldens
    for path in produced:
        original = path.read_bytes()
        record = read(json.loads(original), str(path))
        again = tmp_path / "again.json"
        write_document(again, record.to_dict())
        assert again.read_bytes() == original, path


def test_the_sweeps_own_documents_are_contract_records(produced):
    sessions = [p for p in produced if p.parent.name == "sweep"]
    assert len(sessions) == len(SESSIONS)
    for path in sessions:
        text = path.read_text(encoding="utf-8")
        record = SweepJson.model_validate_json(text)
        assert json.dumps(record.to_dict(), indent=2, ensure_ascii=False) + "\n" == text


def test_an_integer_in_a_float_field_stays_an_integer():
    doc = {"schema_version": 1, "kind": "sweep", "method": "ngram", "workload": "w",
           "budget_minutes": 30, "depths": [{"depth": 0, "launches": [
               {"label": "L001", "delivered_tok_s": 500, "extra": 1}]}],
           "decision": {"reason": "r", "depth": 0}}
    record = read(doc)
    assert record.budget_minutes == 30.0 and isinstance(record.budget_minutes, float)
    assert record.depths[0].launches[0].delivered_tok_s == 500.0
    assert json.dumps(record.to_dict()) == json.dumps(doc)  # keys in the file's order, 500 not 500.0


def test_an_old_sweep_json_is_upgraded_on_reading_and_written_as_it_was():
    rates = [30.0, 31.0, 32.5]
    doc = {"schema_version": 1, "kind": "sweep", "method": "ngram", "workload": "w",
           "depths": [{"depth": 2, "launches": [
               {"label": f"L00{i}", "delivered_tok_s": r, "acceptance_length": 2.0 + i / 10}
               for i, r in enumerate(rates)]},
               {"depth": 0, "launches": [], "mean_tok_s": 20.0, "ci95_low": None,
                "ci95_high": None}],
           "decision": {"depth": 2, "reason": "highest mean delivered tok/s"}}
    record = read(doc)
    two, zero = record.depths
    expected = summarize(rates)
    assert (two.n, two.mean_tok_s, two.ci95_low, two.ci95_high) == (
        3, expected.mean, expected.ci95_low, expected.ci95_high)
    assert two.mean_tok_s == pytest.approx(31.1667, abs=1e-4) and two.ci95_low < 30.0
    assert two.acceptance_length == pytest.approx(2.1)
    assert (zero.n, zero.mean_tok_s, zero.acceptance_length) == (0, 20.0, None)  # kept as given
    assert record.to_dict() == doc and list(record.to_dict()["depths"][1]) == list(doc["depths"][1])


def test_the_upgrade_summarises_end_to_end_rates_when_the_sweep_compared_them():
    doc = {"schema_version": 1, "kind": "sweep", "method": "ngram", "workload": "w",
           "depths": [{"depth": 1, "launches": [
               {"label": "L001", "delivered_tok_s": 50.0, "e2e_tok_s": 20.0},
               {"label": "L002", "delivered_tok_s": 52.0, "e2e_tok_s": 22.0}]}],
           "decision": {"depth": 1, "reason": "r", "basis": "e2e"}}
    assert read(doc).depths[0].mean_tok_s == 21.0


def test_a_malformed_sweep_json_is_one_line_naming_the_field():
    doc = {"schema_version": 1, "kind": "sweep", "method": "ngram", "workload": "w",
           "depths": [{"depth": "two", "launches": []}], "decision": {"depth": 2, "reason": "r"}}
    with pytest.raises(InputError, match=r"^sweep.json: field 'depths\[0\].depth' must be int"):
        read(doc)



def test_the_reports_data_copy_is_the_file_not_its_upgrade(tmp_path):
    """The golden demo's sweep.json has no per-depth statistics (another producer's): the report
    renders the upgraded record, and its data copy is the file as it was."""
    from sparktriage.report.build import execute, plan_report
    from sparktriage.report.inputs import load_run

    run_redaction.new_run()
    run = RUNS["demo"](tmp_path / "run")
    original = (run / "sweep.json").read_bytes()
    assert b"mean_tok_s" not in original
    sweep = load_run(run).sweep
    assert all(d.n == len(d.launches) and d.mean_tok_s is not None for d in sweep.depths)
    execute(plan_report(run, tmp_path / "report", "md", None, False, tmp_path / "map.json"))
    assert (tmp_path / "report" / "data" / "sweep.json").read_bytes() == original
