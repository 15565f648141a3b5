"""report.md: what a reader sees, links that resolve, text from data that cannot break it."""

from __future__ import annotations

import json
import re

from sparktriage.report import markdown


def test_every_linked_plot_exists_and_every_plot_is_linked(report_built):
    text = (report_built / "report.md").read_text()
    links = re.findall(r"!\[[^\]]*\]\(([^)]+)\)", text)
    plots = json.loads((report_built / "report.json").read_text())["plots"]
    assert sorted(links) == sorted(p["file"] for p in plots)
    assert all((report_built / link).is_file() for link in links)


def test_summary_headline_table_is_pinned(report_built):
    doc = json.loads((report_built / "report.json").read_text())
    text = (report_built / "report.md").read_text()
    expected = ["|  | value | what it is |", "|---|---|---|"] + [
        f"| {h['label']} | {h['value']} | {h['detail']} |" for h in doc["summary"]["headline"]]
    start = text.index("### Headline numbers") + len("### Headline numbers\n\n")
    assert text[start:].splitlines()[:len(expected)] == expected
    assert text.startswith("# sparktriage report\n\n- generated_at: 2026-03-01 12:00:00 UTC ")


def test_text_from_data_cannot_break_tables_or_inject_html():
    assert markdown.esc("a|b<script>\nc`d") == "a\\|b&lt;script&gt; c'd"
    lines = markdown.table(["k", "v"], [["x|y", "<b>"]])
    assert lines[2] == "| x\\|y | &lt;b&gt; |"
