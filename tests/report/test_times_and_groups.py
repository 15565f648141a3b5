"""Times as dates with their zone, durations as people read them, each distinct probe result once
(issue 14, items 2 and 4), checked on the Markdown rendering of the pinned eight-node document."""

from __future__ import annotations

import json
import re
from pathlib import Path

import pytest

from sparktriage.report import markdown
from sparktriage.report.format import TIME_ZONE_NOTE, seconds, when
from sparktriage.report.probe_text import group_title, groups

GOLDEN = Path(__file__).parent / "goldens" / "eight_node" / "report.json"


@pytest.fixture(scope="module")
def doc() -> dict:
    doc = json.loads(GOLDEN.read_text(encoding="utf-8"))
    doc["generated_at"], doc["tool_version"] = "2026-03-01T12:00:00Z", "0.1.0"
    return doc


def test_when_states_the_zone_and_converts_offsets_to_utc():
    assert when("2026-03-01T12:00:00Z") == "2026-03-01 12:00:00 UTC"
    assert when("2026-01-01T00:00:00.000000Z") == "2026-01-01 00:00:00 UTC"
    assert when("2026-03-01T14:30:00+02:00") == "2026-03-01 12:30:00 UTC"
    assert when(None) == "unknown" and when("not a time") == "not a time"


def test_durations_read_as_minutes_and_seconds():
    assert [seconds(v) for v in (0.085, 21.4, 140.0, 131.5, 4000.0, None)] == \
        ["0.085 s", "21.4 s", "2 min 20 s", "2 min 12 s", "1 h 07 min", "–"]


def test_markdown_shows_dates_with_zone_and_durations(doc):
    text = markdown.render(doc)
    head = text.split("\n## ", 1)[0]
    assert "generated_at: 2026-03-01 12:00:00 UTC" in head and TIME_ZONE_NOTE in head
    assert "run created: 2026-01-01 00:00:00 UTC" in head
    assert not re.search(r"\d{4}-\d\d-\d\dT\d\d:\d\d", head)  # no raw ISO stamp in the header
    ready = {l["label"]: l["ready_s"] for l in doc["sections"]["startup"]["launches"]}
    assert ready["L001"] > 60
    assert f"ready after {seconds(ready['L001'])}." in text and " min " in seconds(ready["L001"])
    head_row = next(r for r in doc["summary"]["headline"] if r["label"] == "Startup time")
    assert re.fullmatch(r"2 min \d\d s \(\d+\.\d s\)", head_row["value"])


def test_probe_results_are_shown_once_per_distinct_result(doc):
    launches = doc["sections"]["probe"]["launches"]
    grouped = groups(launches)
    assert [labels for labels, _ in grouped] == [[f"L{i:03d}" for i in range(1, 9)], ["L009", "L010"]]
    assert [g["verdict"] for _, g in grouped] == ["healthy", "garbage"]
    text = markdown.render(doc)
    probe = text.split("## Output quality (garbage probe)", 1)[1].split("\n## ", 1)[0]
    assert probe.count("| family | status | what it checked and found |") == 2  # not 10
    assert f"### {group_title([f'L{i:03d}' for i in range(1, 9)])}: **healthy**" in probe
    assert "### Launches L009, L010 (the same result): **garbage** (pattern F4)" in probe
    assert group_title(["L001"]) == "Launch L001"
    changed = json.loads(json.dumps(launches))
    changed[3]["tokens_spent"] = 1  # one launch differs: it gets its own heading
    assert [labels for labels, _ in groups(changed)] == \
        [["L001", "L002", "L003", "L005", "L006", "L007", "L008"], ["L004"], ["L009", "L010"]]


def test_reconciliation_rows_have_no_flattened_details(doc):
    rows = doc["sections"]["reconciliation"]["launches"]
    assert rows and all("details" not in r for r in rows)
    assert all(isinstance(s["cites"], dict) for r in rows for s in r["explanation"])
