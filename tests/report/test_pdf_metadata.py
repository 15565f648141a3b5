"""The PDF carries true metadata (issue 14, item 8): the title names the deployment, the
creation date is the report's generated_at (not reportlab's 2000-01-01), and the producer names
sparktriage and ReportLab. Read back with poppler's pdfinfo."""

from __future__ import annotations

import json
import subprocess
from pathlib import Path

from reportlab import Version


def _info(pdf: Path) -> dict[str, str]:
    out = subprocess.run(["pdfinfo", "-isodates", str(pdf)], capture_output=True, text=True,
                         check=True, timeout=60).stdout
    return {k.strip(): v.strip() for k, _, v in (line.partition(":") for line in out.splitlines())}


def test_pdf_metadata_is_true(report_built: Path):
    report = json.loads((report_built / "report.json").read_text(encoding="utf-8"))
    info = _info(report_built / "report.pdf")
    assert report["generated_at"] == "2026-03-01T12:00:00Z"
    assert info["CreationDate"] == "2026-03-01T12:00:00Z"
    assert info["ModDate"] == "2026-03-01T12:00:00Z"
    assert info["Title"] == "sparktriage report: synthetic-moe-fp4"
    assert info["Producer"] == f"sparktriage {report['tool_version']} with ReportLab {Version}"
    assert info["Creator"] == f"sparktriage {report['tool_version']}"


def test_pdf_date_follows_the_report_time_not_the_environment(report_run, report_build, tmp_path,
                                                             monkeypatch):
    import datetime as dt

    monkeypatch.setenv("SOURCE_DATE_EPOCH", "946684800")  # ignored: `now` is given
    when = dt.datetime(2026, 7, 4, 9, 30, 15, tzinfo=dt.timezone.utc)
    report_build(report_run, tmp_path / "r", now=when, formats="pdf")
    assert _info(tmp_path / "r" / "report.pdf")["CreationDate"] == "2026-07-04T09:30:15Z"
    import os
    assert os.environ["SOURCE_DATE_EPOCH"] == "946684800"  # restored after the build
