"""The PDF's words read back with poppler's pdftotext (issue 14, item 4 and the PDF text fixes):
methodology paragraphs whole, formulas readable, no literal backticks, table headers whole, one
stability wording, the delivered mean labelled by workload, the probe's families as sentences
with a numbers table, and every plot caption saying what to read.

Reuses the session's built report (tests/conftest.py `report_built`): no new build.
"""

from __future__ import annotations

import json
import re
import subprocess

from sparktriage.report.pdf_text import _clip


def _text(path, layout: bool = False) -> str:
    args = ["pdftotext"] + (["-layout"] if layout else []) + [str(path), "-"]
    return subprocess.run(args, capture_output=True, text=True, check=True).stdout


def _words(text: str) -> str:
    return " ".join(text.replace("\f", " ").split())


def test_methodology_and_formulas_read_whole(report_built):
    doc = json.loads((report_built / "report.json").read_text())
    flat = _words(_text(report_built / "report.pdf"))
    for paragraph in doc["methodology"]:
        words = paragraph["text"].split()
        # every paragraph's last words are in the PDF: nothing cut mid-sentence
        tail = " ".join(words[-5:]).replace("`", "").replace("√", "sqrt")
        assert _words(tail) in flat, paragraph["title"]
    assert "[...]" not in flat
    assert "sqrtn" not in flat and "s/sqrt(n)" in flat.replace(" ", "")
    assert "`" not in flat
    assert "sparktriage report data --out OTHER_DIR" in flat  # the code span, set in Courier


def test_headers_whole_and_one_stability_wording(report_built):
    flat = _words(_text(report_built / "report.pdf"))
    for header in ("delivered mean (workload)", "acceptance length", "peak / delivered",
                   "what it checked and found", "quantity", "stability"):
        assert header in flat, header
    # a header word split across lines would show as a fragment followed by its rest
    assert not re.search(r"\baccep(tance)?\s+tance\b|\bdeliv\s+ered\b", flat)
    doc = json.loads((report_built / "report.json").read_text())
    verdict = next(v for v in doc["summary"]["verdicts"] if v["topic"] == "Stability across launches")
    pools = doc["sections"]["protocol"]["across"]
    if verdict["verdict"] == "not measured":
        assert all(p["n_launches"] < 2 for p in pools)
        assert "stable: yes" not in flat.lower()
    assert not re.search(r"\|\s*yes\s*\|", (report_built / "report.md").read_text())
    single = [p for p in pools if p["n_launches"] < 2]
    if single:
        assert "not measured (one launch)" in flat


def test_probe_families_are_sentences_with_a_numbers_table(report_built):
    doc = json.loads((report_built / "report.json").read_text())
    flat = _words(_text(report_built / "report.pdf"))
    md = (report_built / "report.md").read_text()
    launch = doc["sections"]["probe"]["launches"][0]
    for family in launch["families"]:
        assert family["sentence"].startswith(f"The {family['name']} family ")
        assert not re.search(r"\w=\S", family["sentence"])  # no key=value
        assert _words(family["sentence"])[:60] in flat
        for name, quantity, value in family["numbers"]:
            assert f"| {name} | {quantity} | {value} |" in md
    assert "| family | quantity | value |" in md
    assert not re.search(r"\b[a-z_]+=[0-9]", md.split("## Output quality", 1)[1].split("\n## ", 1)[0])


def test_every_plot_caption_says_what_to_read(report_built):
    doc = json.loads((report_built / "report.json").read_text())
    flat = _words(_text(report_built / "report.pdf"))
    mine = [p for p in doc["plots"] if p["file"].startswith(("plots/startup", "plots/delivered_vs"))]
    assert {p["file"] for p in mine} >= {"plots/delivered_vs_logged.png"}
    assert any(p["file"].startswith("plots/startup") for p in mine)
    for plot in mine:
        assert plot["caption"].startswith("What to read:"), plot["file"]
        assert _words(plot["caption"]) in flat  # whole: the report's own words are never cut


def test_clip_cuts_at_a_sentence_end():
    text = "First sentence is here. " * 40
    cut = _clip(text, 100)
    assert cut.endswith("here. [... in report.md]") or cut.endswith("here. [... in report.md]".strip())
    assert "sentence is here." in cut and len(cut) < 140
    assert _clip(text, None) == text


def test_delivered_vs_logged_draws_every_log_window_from_the_list(report_run, report_built):
    """The plot's bars come from the logs document's window list (not the window count), each
    over its own span, on the same time axis as the requests."""
    from sparktriage.report.plots import _figure, _log_bars

    doc = json.loads((report_built / "report.json").read_text())
    series = doc["sections"]["reconciliation"]["series"]
    for item in series:
        logs = json.loads((report_run / "launches" / item["label"] / "logs.json").read_text())
        windows = logs["throughput"]["windows"]
        assert len(item["logged"]) == len(windows)
        assert all(w["start"] is not None and w["t"] - w["start"] == 10.0 for w in item["logged"])
        assert item["requests"] and all(a < b for a, b in item["requests"])
        first_sent = item["requests"][0][0]
        assert first_sent == 0.0  # the axis starts at the launch's first request
        axes = _figure(3, 2).add_subplot()
        _log_bars(axes, item["logged"])
        bars = [c for c in axes.collections if c.get_segments()]
        assert sum(len(c.get_segments()) for c in bars) == len(windows)
        starts = sorted(seg[0][0] for c in bars for seg in c.get_segments())
        assert starts == sorted(w["start"] for w in item["logged"])
    png = (report_built / "plots" / "delivered_vs_logged.png").read_bytes()
    assert png.startswith(b"\x89PNG")


def test_stalls_drawn_per_node_and_labelled_by_cause(report_built):
    """Every classified stall is a hatched box on its own node's row, labelled with its cause."""
    from sparktriage.report.plots import _phase_colors, gantt_figure

    doc = json.loads((report_built / "report.json").read_text())
    launches = [l for l in doc["sections"]["startup"]["launches"] if l["phases"]]
    stalls = [(l["label"], f) for l in launches for f in l["findings"]]
    assert stalls, "the synthetic run has stalls"
    figure = gantt_figure(launches, 1, 1, _phase_colors(launches))
    axes = figure.axes[0]
    rows = [t.get_text() for t in axes.get_yticklabels()]
    labels = [t for t in axes.texts]
    assert sorted(t.get_text() for t in labels) == sorted(f["id"] for _, f in stalls)
    for (label, finding), text in zip(stalls, labels):
        row = round(text.xy[1])
        assert rows[row] == f"{label} {finding['node']}"  # on the stalled node's row
        assert text.xy[0] == finding["end"]


def test_the_pdf_words_are_the_markdowns(report_built):
    """Where the PDF once worded a section itself, it now prints the section model's words, the
    Markdown's (issue 23, item 3): these phrases are in both, the PDF's old ones in neither."""
    flat = _words(_text(report_built / "report.pdf"))
    md = _words((report_built / "report.md").read_text(encoding="utf-8"))
    for phrase in ("- generated_at: 2026-03-01 12:00:00 UTC (the only field that changes",
                   "- redaction:", "Per launch", "log mean (active)", "max tok/chunk", "MAD",
                   "between-launch var", "What changes behaviour", "Source: launches/L002/stalls.json",
                   "vLLM's own durations:", "Baseline: none;", "time per token (floor)",
                   "Signer identity: consultant@example.com; key fingerprint SHA256:",
                   "observed: in the sweep's launches", "cause: sweep/decision", "fix: set speculative",
                   "Files"):
        assert phrase in flat and phrase in md.replace("`", ""), phrase
    for old in ("sparktriage report: diagnosis", "Observed:", "Evidence:", "log active", "Ceiling ",
                "Timeline only:", "Fix: warm", "Launch L002 (ready after"):
        assert old not in flat, old
    # the paged short version: one table of phase durations, said to be short, in the PDF only
    intro = "Phase durations in seconds (report.md lists every start and end):"
    assert intro in flat and intro not in md
