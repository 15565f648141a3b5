"""Typed documents: what the writers produce validates against its model; readers refuse a
document with another schema_version, a missing field, a wrong type or an unknown field with one
line naming the file and the field (exit 2), through the commands that read them."""

from __future__ import annotations

import json
import re
from pathlib import Path

import pytest

from documents.validate import validate_run_dir
from sparktriage.bench.workload import Workload
from sparktriage.cli.app import main
from sparktriage.documents import registry
from sparktriage.documents.bench import BenchDocument, WorkloadEntry
from sparktriage.errors import InputError
from sparktriage.progress import Recorder, prefixed, quiet
from sparktriage.store.typed import check, parse
from sparktriage.testbed.synthetic_run import SyntheticSpec, make_run

#  document read by a later stage -> (file in the run, a required field to drop)
READ_BY_REPORT = {
    "launch": ("launches/L001/launch.json", "endpoint"),
    "bench": ("launches/L001/bench.json", "model"),
    "logs": ("launches/L001/logs.json", "phases"),
    "reconcile": ("launches/L001/reconcile.json", "verdict"),
    "stalls": ("launches/L001/stalls.json", "findings"),
    "probe": ("launches/L001/probe.json", "verdict"),
    "sweep": ("sweep.json", "decision"),
}


@pytest.fixture(scope="module")
def synthetic(tmp_path_factory) -> Path:
    return make_run(tmp_path_factory.mktemp("docs") / "run", SyntheticSpec(depths=(0, 2), requests=4))


def _cli(capsys, *args: str) -> tuple[int, str, str]:
    with pytest.raises(SystemExit) as exit_info:
        main(list(args))
    out, err = capsys.readouterr()
    return exit_info.value.code, out, err


def _error_line(err: str) -> str:
    lines = [l for l in err.splitlines() if l.strip()]
    assert len(lines) == 1 and "Traceback" not in err, err  # one line, never pydantic's wording
    assert "validation error" not in err and "For further information" not in err
    return lines[0]


def _copy_run(src: Path, dest: Path) -> Path:
    for path in src.rglob("*"):
        if path.is_file():
            target = dest / path.relative_to(src)
            target.parent.mkdir(parents=True, exist_ok=True)
            target.write_bytes(path.read_bytes())
    return dest


def test_every_document_of_a_synthetic_run_validates(synthetic):
    seen = validate_run_dir(synthetic)
    assert seen == {"launch": 2, "bench": 2, "logs": 2, "reconcile": 2, "stalls": 2, "probe": 2,
                    "sweep": 1}


@pytest.mark.slow
def test_report_json_written_by_the_report_validates(synthetic, tmp_path, capsys):
    code, _, err = _cli(capsys, "report", str(synthetic), "--out", str(tmp_path / "r"),
                        "--format", "md")
    assert code == 0, err
    seen = validate_run_dir(tmp_path / "r")
    assert seen["report"] == 1 and seen["bench"] == 2  # data/ is itself a run directory


@pytest.mark.parametrize("name", sorted(READ_BY_REPORT))
def test_report_refuses_wrong_schema_version(name, synthetic, tmp_path, capsys):
    rel, _ = READ_BY_REPORT[name]
    run = _copy_run(synthetic, tmp_path / "run")
    doc = json.loads((run / rel).read_text())
    doc["schema_version"] = 2
    (run / rel).write_text(json.dumps(doc))
    code, _, err = _cli(capsys, "report", str(run), "--out", str(tmp_path / "r"), "--format", "md")
    assert code == 2
    assert _error_line(err) == (f"error: {rel}: schema_version 2 is not supported "
                                "(this sparktriage reads 1)")


@pytest.mark.parametrize("name", sorted(READ_BY_REPORT))
def test_report_refuses_a_missing_field(name, synthetic, tmp_path, capsys):
    rel, field = READ_BY_REPORT[name]
    run = _copy_run(synthetic, tmp_path / "run")
    doc = json.loads((run / rel).read_text())
    del doc[field]
    (run / rel).write_text(json.dumps(doc))
    code, _, err = _cli(capsys, "report", str(run), "--out", str(tmp_path / "r"), "--format", "md")
    assert code == 2
    assert _error_line(err) == f"error: {rel}: field {field!r} is missing"


def test_report_names_a_nested_field_and_an_unknown_one(synthetic, tmp_path, capsys):
    run = _copy_run(synthetic, tmp_path / "run")
    bench = run / "launches/L002/bench.json"
    doc = json.loads(bench.read_text())
    del doc["workloads"][1]["summary"]["counts"]
    bench.write_text(json.dumps(doc))
    code, _, err = _cli(capsys, "report", str(run), "--out", str(tmp_path / "r"), "--format", "md")
    assert code == 2
    assert _error_line(err) == ("error: launches/L002/bench.json: workloads[1].summary: "
                                "field 'counts' is missing")
    bench.write_bytes((synthetic / "launches/L002/bench.json").read_bytes())
    probe = run / "launches/L001/probe.json"
    doc = json.loads(probe.read_text())
    doc["families"][0]["verdikt"] = "ok"
    probe.write_text(json.dumps(doc))
    code, _, err = _cli(capsys, "report", str(run), "--out", str(tmp_path / "r"), "--format", "md")
    assert code == 2
    assert _error_line(err) == "error: launches/L001/probe.json: families[0]: unknown field 'verdikt'"


def test_bench_rebuild_refuses_a_launch_json_with_a_missing_field(synthetic, tmp_path, capsys):
    run = _copy_run(synthetic, tmp_path / "run")
    meta = run / "launches/L001/launch.json"
    doc = json.loads(meta.read_text())
    del doc["workloads"][0]["max_tokens"]
    meta.write_text(json.dumps(doc))
    code, _, err = _cli(capsys, "bench", "--rebuild", str(run))
    assert code == 2
    assert _error_line(err) == f"error: {meta}: workloads[0]: field 'max_tokens' is missing"


@pytest.mark.parametrize("name", registry.names())
def test_schema_check_refuses_wrong_version_and_missing_field_of_every_kind(name, tmp_path, capsys):
    model = registry.model(name)
    required = [f for f, info in model.model_fields.items() if info.is_required()
                and f not in ("schema_version", "kind")]
    assert required, name  # every document has a required field besides version and kind
    kind = model.model_fields["kind"].annotation.__args__[0]
    path = tmp_path / f"{name}.json"
    path.write_text(json.dumps({"schema_version": 2, "kind": kind}))
    code, _, err = _cli(capsys, "schema", name, "--check", str(path))
    assert code == 2
    assert _error_line(err) == f"error: {path}: schema_version 2 is not supported (this sparktriage reads 1)"
    path.write_text(json.dumps({"schema_version": 1, "kind": kind}))
    code, _, err = _cli(capsys, "schema", name, "--check", str(path))
    assert code == 2
    assert re.fullmatch(rf"error: {re.escape(str(path))}: field '{required[0]}' is missing "
                        r"\(and \d+ more problems\)" if len(required) > 1 else
                        rf"error: {re.escape(str(path))}: field '{required[0]}' is missing",
                        _error_line(err))


def test_schema_command_lists_names_and_prints_json_schema(capsys):
    code, out, _ = _cli(capsys, "schema")
    assert code in (0, None)
    assert [line.split("\t")[0] for line in out.splitlines()] == registry.names()
    code, out, _ = _cli(capsys, "schema", "bench")
    schema = json.loads(out)
    assert schema["title"] == "BenchDocument" and schema["additionalProperties"] is False
    assert schema["properties"]["schema_version"]["const"] == 1
    assert set(schema["required"]) >= {"schema_version", "kind", "endpoint", "model", "workloads"}
    code, _, err = _cli(capsys, "schema", "benchh")
    assert code == 2 and _error_line(err).startswith("error: no document named 'benchh' (known: bench, ")


def test_bench_contract_rules_are_enforced(synthetic):
    """The JSON contract of `bench` (issue 2), rule by rule, through the model."""
    good = json.loads((synthetic / "launches/L001/bench.json").read_text())
    parse(BenchDocument, good, "bench.json")

    def refused(change, message):
        doc = json.loads(json.dumps(good))
        change(doc)
        with pytest.raises(InputError) as info:
            parse(BenchDocument, doc, "bench.json")
        assert str(info.value.one_line()).startswith("bench.json: " + message), info.value.one_line()

    first = lambda d: d["workloads"][0]["requests"][1]  # noqa: E731 - a measured request
    refused(lambda d: d.update(endpoint="ftp://x"), "field 'endpoint'")
    refused(lambda d: d.update(model=""), "field 'model'")
    refused(lambda d: d.update(workloads=[]), "field 'workloads'")
    refused(lambda d: first(d).update(status="fine"), "field 'workloads[0].requests[1].status'")
    refused(lambda d: first(d).update(output_tokens=True), "field 'workloads[0].requests[1].output_tokens' must be int, found bool")
    refused(lambda d: first(d).update(ttft_s="0.1"), "field 'workloads[0].requests[1].ttft_s' must be number, found str")
    refused(lambda d: first(d).update(warmup=1), "field 'workloads[0].requests[1].warmup' must be bool, found int")
    refused(lambda d: first(d).update(chunks=3.5), "field 'workloads[0].requests[1].chunks' must be int")
    refused(lambda d: d["workloads"][0]["summary"]["decode_tok_s"].update(n=99),
            "workloads[0]: summary.decode_tok_s.n is 99 but")
    refused(lambda d: d["workloads"][0]["summary"]["decode_tok_s"].update(ci95_low=1e9),
            "workloads[0]: summary.decode_tok_s mean lies outside its 95% interval")
    refused(lambda d: first(d).update(decode_tok_s=first(d)["decode_tok_s"] * 2),
            "workloads[0]: summary.decode_tok_s.mean")


def test_writer_check_returns_the_document_itself(synthetic):
    """Writers pass the very dict they write through the model: the bytes cannot change."""
    doc = json.loads((synthetic / "launches/L001/bench.json").read_text())
    assert check(BenchDocument, doc) is doc


def test_launch_json_workload_entry_mirrors_the_workload_model():
    assert list(WorkloadEntry.model_fields) == list(Workload.model_fields)
    dumped = Workload(name="w", prompt="p").model_dump(mode="json")
    assert WorkloadEntry.model_validate_json(json.dumps(dumped)).name == "w"


def test_progress_has_one_typed_definition():
    recorder = Recorder()
    forward = prefixed(recorder, "probe-")
    forward("phase", {"name": "sequential"})
    recorder("step", {"name": "bench"})
    quiet("anything", {})
    assert [(e.name, dict(e.details)) for e in recorder.events] == [
        ("probe-phase", {"name": "sequential"}), ("step", {"name": "bench"})]
    src = Path(__file__).resolve().parents[2] / "src" / "sparktriage"
    aliases = [str(p.relative_to(src)) for p in src.rglob("*.py")
               if re.search(r"^\w+ = Callable\[\[str, dict\], None\]", p.read_text(), re.M)
               and p.name != "runner.py"]  # collect/runner.py's Emit is a record sink, not progress
    assert aliases == []
