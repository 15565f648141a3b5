"""No verdict without evidence: delivered vs logged with nothing on the server's side (every
/metrics scrape failed, no log) is "not measured" in reconcile.json, the report and selfcheck's
summary lines, never "consistent" (issue 14, item 7)."""

from __future__ import annotations

import json
from pathlib import Path

from sparktriage.cli.progress import protocol_lines
from sparktriage.reconcile.launch import reconcile_launch
from sparktriage.measure.steps import bench_summary
from sparktriage.store.rundir import LaunchDir
from sparktriage.testbed.synthetic_run import SyntheticSpec, make_run

SPEC = SyntheticSpec(depths=(0,), requests=3, warmup=1, max_tokens=16, nodes=1)


def _failed_scrapes(launch: Path) -> None:
    """Every /metrics scrape answered 404, as the recorder writes it."""
    folder = launch / "metrics"
    folder.mkdir(exist_ok=True)
    lines = []
    for n, (when, workload) in enumerate([(w, k) for k in ("code", "prose")
                                          for w in ("before", "after")]):
        lines.append(json.dumps({"n": n, "when": when, "workload": workload,
                                 "url": "http://127.0.0.1:8000/metrics", "file": None,
                                 "t": 1_767_225_700.0 + n,
                                 "error": "GET /metrics: HTTP 404 Not Found"}))
    (folder / "scrapes.jsonl").write_text("\n".join(lines) + "\n", encoding="utf-8")


def _no_evidence_run(root: Path) -> Path:
    run = make_run(root, SPEC)
    launch = run / "launches" / "L001"
    (launch / "logs.json").unlink()  # no log was given
    _failed_scrapes(launch)
    reconcile_launch(LaunchDir(launch))  # the real reconciliation, no logs
    return run


def test_reconcile_with_only_failed_scrapes_is_not_measured(tmp_path):
    run = _no_evidence_run(tmp_path / "run")
    doc = json.loads((run / "launches" / "L001" / "reconcile.json").read_text())
    assert doc["verdict"] == "not_measured"
    assert doc["metrics"]["generation_tokens"] is None
    codes = [r["code"] for r in doc["reasons"]]
    assert "metrics_failed" in codes and "not_measured" in codes
    text = next(r["text"] for r in doc["reasons"] if r["code"] == "not_measured")
    assert "every /metrics scrape failed (GET /metrics: HTTP 404 Not Found)" in text
    assert "no server log was given" in text
    assert "consistent" not in json.dumps(doc["reasons"])


def test_report_and_selfcheck_lines_say_not_measured(tmp_path, report_build):
    run = _no_evidence_run(tmp_path / "run")
    out = tmp_path / "report"
    report_build(run, out, anonymize=False, formats="md")
    report = json.loads((out / "report.json").read_text())
    row = next(v for v in report["summary"]["verdicts"] if v["topic"] == "Delivered vs logged")
    assert row["verdict"] == "not measured"
    assert "HTTP 404" in row["detail"]
    md = (out / "report.md").read_text()
    assert "| Delivered vs logged | not measured |" in md
    assert "consistent" not in md.split("## ")[1]  # the summary section

    bench = json.loads((run / "launches" / "L001" / "bench.json").read_text())
    bench["reconcile"] = json.loads((run / "launches" / "L001" / "reconcile.json").read_text())
    lines = protocol_lines(bench_summary(bench))
    assert lines[-1] == ("delivered vs logged (/metrics and the log): not measured "
                         "(no usable /metrics scrape and no log)")
    assert not any("consistent" in line for line in lines)
