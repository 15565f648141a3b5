"""The whole build: determinism, rebuild from the report's own data, safe replacement."""

from __future__ import annotations

import datetime as dt
import json
import re
import subprocess

import pytest

from sparktriage.errors import InputError, UsageError
from sparktriage.report.build import plan_report
from sparktriage.report.format import when
from sparktriage.signing import manifest

LATER = dt.datetime(2026, 3, 2, 8, 30, 15, tzinfo=dt.timezone.utc)
STAMP, LATER_STAMP = "2026-03-01T12:00:00Z", "2026-03-02T08:30:15Z"
PDF_DATE, LATER_PDF_DATE = b"D:20260301120000", b"D:20260302083015"


def _files(folder):
    return {rel: (folder / rel).read_bytes() for rel in manifest.folder_files(folder)}


def test_two_builds_are_byte_identical_except_generated_at(report_run, report_built, report_keys, tmp_path,
                                                           report_build):
    same = tmp_path / "same"
    report_build(report_run, same, report_keys["main"])
    assert _files(same) == _files(report_built)
    for name in ("MANIFEST", "MANIFEST.sig"):  # Ed25519 is deterministic: same signature too
        assert (same / name).read_bytes() == (report_built / name).read_bytes()
    later = tmp_path / "later"
    report_build(report_run, later, report_keys["main"], now=LATER)
    a, b = _files(report_built), _files(later)
    assert set(a) == set(b)
    differing = sorted(rel for rel in a if a[rel] != b[rel])
    assert differing == ["report.json", "report.md", "report.pdf"]
    for rel in differing:  # the timestamp is the only difference, byte for byte, in MD and PDF too
        # report.json holds the ISO stamp; the Markdown and PDF text its readable form (format.when)
        stamps = [(STAMP, LATER_STAMP), (when(STAMP), when(LATER_STAMP))]
        assert any(old.encode() in a[rel] for old, _ in stamps)
        swapped = a[rel]
        for old, new in stamps:
            swapped = swapped.replace(old.encode(), new.encode())
        other = b[rel]
        if rel == "report.pdf":  # and the PDF's creation date, which is generated_at too, and
            swapped = swapped.replace(PDF_DATE, LATER_PDF_DATE)  # the /ID reportlab digests it into
            swapped, other = (re.sub(rb"/ID \n\[<[0-9a-f]+><[0-9a-f]+>\]", b"/ID", x)
                              for x in (swapped, other))
        assert swapped == other, rel
    changed = [line for line in (later / "MANIFEST").read_text().splitlines()
               if line not in (report_built / "MANIFEST").read_text().splitlines()]
    assert sorted(line.split("  ")[1] for line in changed) == differing


def test_report_rebuilt_from_its_data_folder_has_the_same_numbers(report_built, tmp_path, report_build):
    again = tmp_path / "again"
    report_build(report_built / "data", again, anonymize=False)
    first = json.loads((report_built / "report.json").read_text())
    second = json.loads((again / "report.json").read_text())
    for key in ("sections", "warnings", "data_files", "plots"):
        assert second[key] == first[key], key
    assert second["summary"]["headline"] == first["summary"]["headline"]
    for plot in first["plots"]:
        assert (again / plot["file"]).read_bytes() == (report_built / plot["file"]).read_bytes()


def test_private_map_is_outside_the_report(report_built, report_run):
    map_path = report_built.parent / "report.private-map.json"
    assert map_path.is_file() and not (report_built / "report.private-map.json").exists()
    doc = json.loads(map_path.read_text())
    assert doc["anonymized"] and "spark-a1.lab.acme-ai.net" in doc["hosts"]
    with pytest.raises(UsageError, match="outside the report folder"):
        plan_report(report_run, report_built, map_path=report_built / "map.json")


def test_existing_non_report_folder_is_never_overwritten(report_run, tmp_path, report_build):
    out = tmp_path / "mine"
    out.mkdir()
    (out / "thesis.tex").write_text("precious")
    with pytest.raises(InputError, match="not a sparktriage report folder"):
        report_build(report_run, out, formats="md")
    assert (out / "thesis.tex").read_text() == "precious"
    assert [p.name for p in tmp_path.iterdir()] == ["mine"]  # no temporary folder left behind


def test_rebuilding_in_place_replaces_a_previous_report(report_run, tmp_path, report_build):
    out = tmp_path / "r"
    report_build(report_run, out, formats="md")
    (out / "stale.txt").write_text("old")
    report_build(report_run, out, formats="md")
    assert not (out / "stale.txt").exists() and (out / "report.md").exists()
    assert not (out / "report.pdf").exists()


@pytest.mark.parametrize("kwargs, fragment", [
    ({"formats": "docx"}, "choose from md, pdf, html"),
    ({"formats": ""}, "choose from"),
])
def test_bad_plans(report_run, kwargs, fragment):
    with pytest.raises(UsageError, match=fragment):
        plan_report(report_run, **kwargs)


def test_out_cannot_hold_the_run(report_run):
    with pytest.raises(UsageError, match="cannot be the run directory"):
        plan_report(report_run, report_run)
    with pytest.raises(UsageError, match="cannot be the run directory"):
        plan_report(report_run, report_run.parent)


def test_a_run_with_nothing_but_run_json_still_gives_a_report(tmp_path, report_build):
    run = tmp_path / "run"
    run.mkdir()
    (run / "run.json").write_text('{"schema_version": 1, "kind": "sparktriage-run"}')
    report_build(run, tmp_path / "out", anonymize=False)
    markdown = (tmp_path / "out" / "report.md").read_text()
    assert markdown.count("**Missing.**") == 8  # every section says it is missing, and how to fix it
    assert "sparktriage bench --endpoint URL" in markdown
    assert (tmp_path / "out" / "report.pdf").read_bytes().startswith(b"%PDF-")


def test_hostile_and_odd_text_renders(tmp_path, report_build):
    run = tmp_path / "run"
    (run / "launches" / "L001").mkdir(parents=True)
    (run / "run.json").write_text(json.dumps({"schema_version": 1, "kind": "sparktriage-run",
                                              "command": ["x", "<script>alert(1)</script>"]}))
    huge = "A" * 200_000
    odd = "ctl\x00\x1b[31m red \u2603 \u6f22\u5b57 \U0001F600 | <b>bold</b> & ]]>"
    yaml_odd = odd.replace("\x00", "").replace("\x1b", "")  # YAML forbids raw control characters
    (run / "deployment.yaml").write_text(f"name: '{yaml_odd}'\nblob: {huge}\nlist: [1, 2.5e300, null, true]\n")
    (run / "launches" / "L001" / "probe.json").write_text(json.dumps({
        "schema_version": 1, "kind": "probe", "verdict": "suspect", "pattern": "F3", "families": [
            {"name": odd, "status": "suspect", "numbers": {"x": float("1e308")},
             "evidence": [huge, {"text": odd, "n": 1}]}]}))
    report_build(run, tmp_path / "out", anonymize=True)
    text = subprocess.run(["pdftotext", str(tmp_path / "out" / "report.pdf"), "-"],
                          capture_output=True, text=True, check=True).stdout
    assert "suspect" in text and "[... in report.md]" in " ".join(text.split())  # clipped, marked
    markdown = (tmp_path / "out" / "report.md").read_text()
    outside_code = re.sub(r"`[^`\n]*`", "", re.sub(r"```.*?```", "", markdown, flags=re.S))
    assert "<script>" not in outside_code and "<b>" not in outside_code  # code spans show it literally
    assert "&lt;b&gt;bold&lt;/b&gt;" in markdown
