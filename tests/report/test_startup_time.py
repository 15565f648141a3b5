"""One startup-time definition (issue 14, item 7): on one run directory, the launch's stdout,
the `logs` view, selfcheck's and the demo's summary lines, the report's startup section and its
headline all show the same number, computed by logs/startup_time.py from the server's log.

The run is synthetic except for its server log: the real line records of a recorded vLLM CPU
startup (tests/fixtures/logs/recorded/plain.lines.jsonl) in the launch's bundle, read by the
real log analyzer the launch uses.
"""

from __future__ import annotations

import datetime as dt
import json
import shutil
from pathlib import Path

import pytest

from sparktriage.cli.demo import render_summary as demo_lines
from sparktriage.cli.launch import outcome_line
from sparktriage.cli.selfcheck import render_summary as selfcheck_lines
from sparktriage.launch.run import _startup_timeline
from sparktriage.logs import startup_time
from sparktriage.logs.render import render as logs_view
from sparktriage.report.format import number
from sparktriage.report.readable import duration
from sparktriage.report.inputs import load_run
from sparktriage.report.model import Context, build_document
from sparktriage.store.rundir import LaunchDir
from sparktriage.testbed.synthetic_run import SyntheticSpec, make_run

RECORDED = Path(__file__).parent.parent / "fixtures" / "logs" / "recorded" / "plain.lines.jsonl"


@pytest.fixture(scope="module")
def run(tmp_path_factory) -> Path:
    root = make_run(tmp_path_factory.mktemp("startup") / "run",
                    SyntheticSpec(nodes=1, requests=3, max_tokens=16))
    launch = root / "launches" / "L001"
    node = json.loads((launch / "bundle" / "bundle.json").read_text())["nodes"][0]
    logs = launch / "bundle" / "nodes" / node / "logs"
    logs.mkdir(parents=True, exist_ok=True)
    shutil.copyfile(RECORDED, logs / "server.lines.jsonl")
    (launch / "stalls.json").unlink()  # the startup section reads the real logs.json
    return root


def test_every_place_shows_the_same_startup_time(run: Path):
    launch = LaunchDir(run / "launches" / "L001")
    summary = _startup_timeline(launch)  # what launch_once puts in its result; writes logs.json
    logs = json.loads((launch.path / "logs.json").read_text())
    took = logs["startup"]["startup_s"]
    assert summary["startup_s"] == took and took is not None and took > 1.0
    phases = [(dt.datetime.fromisoformat(p["start"]).timestamp(),
               dt.datetime.fromisoformat(p["end"]).timestamp() if p["end"] else None)
              for p in logs["phases"]]
    assert took == pytest.approx(startup_time.span(phases), abs=0.002)  # one definition
    assert logs["startup"]["definition"] == startup_time.DEFINITION
    said = startup_time.words(took)
    assert said == f"startup {took:.1f} s (first server log line to ready)"

    # stdout of launch, the logs view, selfcheck and the demo
    assert said in outcome_line({"label": "L001", "outcome": "completed", "ready_s": took + 40,
                                 "startup": summary})
    assert said in logs_view(logs).text()
    check = {"run": str(run), "launch": "L001", "probe": None, "bench": None, "stalls": None,
             "report": None, "steps": [],
             "startup": {"complete": True, "startup_s": startup_time.of_logs(logs)}}
    assert any(said in line for line in selfcheck_lines(check))
    demo = {"run": str(run), "probe": None, "bench": None, "sweep": None, "report": None, "steps": [],
            "launches": [{"label": "L001", "depth": 0, "outcome": "completed", "ready_s": took + 40,
                          "startup_s": startup_time.of_logs(logs), "delivered_tok_s": None,
                          "e2e_tok_s": None, "acceptance_length": None, "stall_findings": 0}]}
    assert any(said in line for line in demo_lines(demo))
    assert not any(f"{took + 40:.1f}" in line for line in demo_lines(demo))  # not the spawn wait

    # the report: startup section, headline, methodology
    doc = build_document(load_run(run), Context(generated_at="2026-01-02T00:00:00Z"))
    section, = doc["sections"]["startup"]["launches"]
    assert section["ready_s"] == pytest.approx(took, abs=0.002)
    head = next(h for h in doc["summary"]["headline"] if h["label"] == "Startup time")
    assert head["value"] == f"{duration(took)} ({number(took)} s)"  # `1 min 15 s (75.4 s)`
    assert "one launch" in head["detail"] and startup_time.SHORT in head["detail"]
    method = next(p for p in doc["methodology"] if p["title"] == "Startup time")
    assert startup_time.DEFINITION in method["text"]


def test_span_is_earliest_start_to_latest_end_and_none_while_open():
    assert startup_time.span([(10.0, 20.0), (12.0, 50.0), (11.0, 30.0)]) == 40.0
    assert startup_time.span([(10.0, 20.0), (25.0, None)]) is None  # still starting
    assert startup_time.span([]) is None
    assert startup_time.words(None).startswith("startup time unknown")


def test_one_launch_stability_has_one_wording(run: Path):
    """One launch per configuration: the verdict and every row say "not measured", never
    "stable: yes" beside "Stability: not measured"."""
    from sparktriage.report import markdown
    from sparktriage.report.format import ONE_LAUNCH

    doc = build_document(load_run(run), Context(generated_at="2026-01-02T00:00:00Z"))
    verdict = next(v for v in doc["summary"]["verdicts"] if v["topic"] == "Stability across launches")
    assert verdict["verdict"] == "not measured"
    md = markdown.render(doc)
    across = md.split("### Across launches", 1)[1].split("\n\n", 2)[1]
    rows = [line for line in across.splitlines() if line.startswith("| ") and "---" not in line][1:]
    assert rows and all(line.rstrip(" |").endswith(ONE_LAUNCH) for line in rows)
    assert "| yes |" not in md and "stable: yes" not in md
