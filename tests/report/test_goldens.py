"""Golden reports of three run directories (issue 14, Must show): report.json pinned whole,
page one's text pinned, no flattened `a.b.c` key and no float in scientific notation in the
Markdown, PDF (pdftotext) or HTML text, and the findings in rank order on page 1 of the PDF.

The run directories are SYNTHETIC (tests/report/golden_runs.py). Regenerate the goldens after a
deliberate change with `SPARKTRIAGE_UPDATE_GOLDENS=1 .venv/bin/python -m pytest
tests/report/test_goldens.py` and review the diff (docs/report.md, Goldens).
"""

from __future__ import annotations

import datetime as dt
import json
import os
import re
import subprocess
from html.parser import HTMLParser
from pathlib import Path

import pytest

from report.golden_runs import RUNS
from sparktriage.report import outline
from sparktriage.report.build import execute, plan_report
from sparktriage.report.markdown import page_one_lines
from sparktriage.report.outline import blocks as B
from sparktriage.report.pdf_text import MAX_CELL, as_cp1252, data_text

GOLDENS = Path(__file__).parent / "goldens"
UPDATE = os.environ.get("SPARKTRIAGE_UPDATE_GOLDENS") == "1"
WHEN = dt.datetime(2026, 3, 1, 12, 0, 0, tzinfo=dt.timezone.utc)
EXTENSIONS = ("json", "jsonl", "yaml", "yml", "md", "pdf", "html", "png", "sig", "txt", "log", "pub")
# a flattened key: lowercase identifiers joined by dots (`nics.ifb0.mac`, `packages.agent-detector`)
FLAT = re.compile(r"(?<![\w/.-])[a-z_][a-z0-9_]*(?:\[\d+\])?(?:\.[a-z_][a-z0-9_-]*(?:\[\d+\])?)+(?![\w/-])")
SCI = re.compile(r"(?<![\w.])\d+(?:\.\d+)?[eE][+-]?\d+(?![\w.])")


@pytest.fixture(scope="module")
def built(tmp_path_factory) -> dict[str, Path]:
    """The three reports, built once (md, pdf, html), unsigned and not anonymized."""
    from sparktriage.redact import run as run_redaction
    out = {}
    for name, make in RUNS.items():
        run_redaction.new_run()  # stand-ins numbered from 1, as in a command of its own
        base = tmp_path_factory.mktemp(f"golden-{name}")
        run = make(base / "run")
        execute(plan_report(run, base / "report", "md,pdf,html", None, False, base / "map.json", WHEN))
        out[name] = base / "report"
    return out


def _normalised(value):
    """report.json without build-time fields, floats to 10 significant digits (the last bits
    of a t-quantile may differ between scipy builds)."""
    if isinstance(value, dict):
        return {k: "<normalised>" if k in ("generated_at", "tool_version") and isinstance(v, str)
                else _normalised(v) for k, v in value.items()}
    if isinstance(value, list):
        return [_normalised(v) for v in value]
    if isinstance(value, float):
        return float(f"{value:.10g}")
    return value


def _check(path: Path, actual: str) -> None:
    if UPDATE:
        path.parent.mkdir(parents=True, exist_ok=True)
        path.write_text(actual, encoding="utf-8")
        return
    assert path.is_file(), f"{path} missing: SPARKTRIAGE_UPDATE_GOLDENS=1 writes it"
    expected = path.read_text(encoding="utf-8")
    assert actual == expected, (f"{path.name} of {path.parent.name} differs from its golden; if the change "
                                "is deliberate, rerun with SPARKTRIAGE_UPDATE_GOLDENS=1 and review the diff")


@pytest.mark.parametrize("name", sorted(RUNS))
def test_report_json_is_pinned_whole(built, name):
    doc = json.loads((built[name] / "report.json").read_text(encoding="utf-8"))
    text = json.dumps(_normalised(doc), indent=1, sort_keys=True, ensure_ascii=False) + "\n"
    assert str(built[name]) not in text and "/tmp/" not in text  # no machine path
    _check(GOLDENS / name / "report.json", text)


@pytest.mark.parametrize("name", sorted(RUNS))
def test_page_one_text_is_pinned(built, name):
    doc = json.loads((built[name] / "report.json").read_text(encoding="utf-8"))
    text = "\n".join(page_one_lines(doc)).rstrip("\n") + "\n"
    md = (built[name] / "report.md").read_text(encoding="utf-8")
    assert text.rstrip("\n") in md  # the Markdown prints exactly this, first
    assert md.index("## Diagnosis") < md.index("## Summary")
    page = (built[name] / "report.html").read_text(encoding="utf-8")
    assert page.index("<h2>Diagnosis</h2>") < page.index("<h2>Summary</h2>")  # first in HTML too
    for finding in doc["page_one"]["findings"]:
        assert f"<h4>{finding['rank']}. " in page
    _check(GOLDENS / name / "page_one.md", text)


class _Text(HTMLParser):
    def __init__(self) -> None:
        super().__init__()
        self.parts: list[str] = []

    def handle_data(self, data: str) -> None:
        self.parts.append(data)


def _texts(report: Path) -> dict[str, str]:
    parser = _Text()
    parser.feed((report / "report.html").read_text(encoding="utf-8"))
    pdf = subprocess.run(["pdftotext", "-layout", str(report / "report.pdf"), "-"],
                         capture_output=True, text=True, check=True).stdout
    return {"md": (report / "report.md").read_text(encoding="utf-8"), "html": " ".join(parser.parts),
            "pdf": pdf}


def _flattened(text: str) -> list[str]:
    return sorted({m for m in FLAT.findall(text) if m.rsplit(".", 1)[-1] not in EXTENSIONS})


def test_the_text_checks_see_what_they_forbid():
    sample = "nics.ifb0.mac 9000 | packages.agent-detector 1.2 | captured_at 1.79611e+09 | 3E10 tok"
    assert _flattened(sample) == ["nics.ifb0.mac", "packages.agent-detector"]
    assert SCI.findall(sample) == ["1.79611e+09", "3E10"]
    fine = "see reconcile.json and deployment.yaml; vLLM 0.32.0; 2.9.0+cu130; 1,234.5 tok/s; L001e"
    assert _flattened(fine) == [] and SCI.findall(fine) == []


@pytest.mark.parametrize("name", sorted(RUNS))
def test_no_flattened_keys_and_no_exponents_in_any_rendering(built, name):
    for kind, text in _texts(built[name]).items():
        assert len(text) > 2000, kind  # the whole report, not an empty extraction
        assert _flattened(text) == [], (name, kind)
        assert SCI.findall(text) == [], (name, kind)


def test_pdf_page_one_lists_the_findings_in_rank_order(built):
    report = built["eight_node"]
    doc = json.loads((report / "report.json").read_text(encoding="utf-8"))
    findings = doc["page_one"]["findings"]
    assert [f["area"] for f in findings] == ["correctness", "throughput", "startup", "measurement"]
    page1 = subprocess.run(["pdftotext", "-f", "1", "-l", "1", str(report / "report.pdf"), "-"],
                           capture_output=True, text=True, check=True).stdout
    flat = " ".join(page1.split())
    positions = [flat.find(f"{f['rank']}. {' '.join(f['title'].split())}") for f in findings]
    assert -1 not in positions, (positions, flat[:3000])
    assert positions == sorted(positions)
    assert flat.find("Deployment.") < flat.find("metric") < positions[0]  # deployment, results, findings
    page2 = subprocess.run(["pdftotext", "-f", "2", "-l", "2", str(report / "report.pdf"), "-"],
                           capture_output=True, text=True, check=True).stdout
    assert "Findings, ranked by impact" not in page2 and "Headline numbers" in page2


def _as_printed(text: B.Text) -> str:
    """A Text in the PDF's character repertoire (what pdftotext can give back)."""
    return "".join(as_cp1252(s.text) if s.own else as_cp1252(data_text(s.text), MAX_CELL) for s in text)


def _pieces(item) -> list[str]:
    if isinstance(item, (B.Heading, B.Paragraph)):
        return [_as_printed(item.text)]
    if isinstance(item, B.Bullets):
        return [f"- {_as_printed(t)}" for t in item.items]
    if isinstance(item, B.Fields):
        return [f"{label}: {_as_printed(value)}" for label, value in item.items]
    if isinstance(item, B.Code):
        return [as_cp1252(line, MAX_CELL) for line in item.lines]
    if isinstance(item, B.Figure):
        return [as_cp1252(data_text(item.caption))]
    return []  # tables: cells interleave in pdftotext's reading order (test_pdf_text checks headers)


@pytest.mark.parametrize("name", sorted(RUNS))
def test_the_pdf_prints_the_section_models_words(built, name):
    """The PDF words nothing itself (issue 23, item 3): every heading, paragraph, list item,
    labelled fact, command and caption of the section model's paged version is in its text,
    in order, and everything else it prints is the page footer."""
    doc = json.loads((built[name] / "report.json").read_text(encoding="utf-8"))
    model = outline.build(doc)
    raw = subprocess.run(["pdftotext", str(built[name] / "report.pdf"), "-"], capture_output=True,
                         text=True, check=True).stdout
    pages = raw.split("\f")
    footers = [model.page_label.format(page=n) for n in range(1, len(pages) + 1)]
    text = "".join("".join(page.replace(footer, "", 1).split()) for page, footer in zip(pages, footers))
    at = 0
    for item in B.in_order(model, paged=True):
        for piece in _pieces(item):
            # report.json is written through the JSON writer's redaction, which takes the
            # methodology's "bearer credentials" for a bearer token; the renderings, made from
            # the document before it was written, print the words
            piece = piece.replace("bearer REDACTED-bearer-1", "bearer credentials")
            found = text.find("".join(piece.split()), at)
            assert found >= 0, (name, piece[:200])
            at = found
