"""What the report shows is what the run holds (issue 14, items 3-4): the delivered-vs-logged
plot gets the log's windows from the logs document's window list, the environment appears as
what matters, once, and labels say what a number is an average of."""

from __future__ import annotations

import json
from pathlib import Path


def _json(path: Path):
    return json.loads(path.read_text(encoding="utf-8"))


def test_delivered_vs_logged_series_has_every_log_window(report_run: Path, report_built: Path):
    report = _json(report_built / "report.json")
    series = {s["label"]: s for s in report["sections"]["reconciliation"]["series"]}
    assert set(series) == {"L001", "L002", "L003", "L004"}
    for label, item in series.items():
        logs = _json(report_run / "launches" / label / "logs.json")
        windows = logs["throughput"]["windows"]
        assert logs["throughput"]["generation"]["windows"] == len(windows)  # a count, not a list
        assert [w["tok_s"] for w in item["logged"]] == [w["generation"] for w in windows]
        first = item["delivered"][0]["t"]
        assert all(w["t"] > first for w in item["logged"])  # on the delivered time axis
