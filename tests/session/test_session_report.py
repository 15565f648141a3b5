"""`session run` to its end (the simulator as `vllm serve`) on a deployment with a roofline:
the run's deployment is written at the top of the run directory, so the report has its
deployment and roofline sections; the sweep's launches are built by the sweep's plan (ngram
lookup settings included); the report restates the sweep's own statistics and tests; the same
roofline share prints alike everywhere in the report."""

from __future__ import annotations

import json
import re

import pytest
import yaml

from session_helpers import engine_pids, run_to_end, session_argv, write_deployment

pytestmark = pytest.mark.slow  # the simulator as vLLM, a few launches

OPTIONS = ["--launches", "1", "--depths", "0,2", "--requests", "2", "--max-tokens", "16",
           "--workload", "code", "--no-probe", "--format", "md"]


def test_session_run_report_has_deployment_and_roofline_sections(tmp_path):
    from sparktriage.report.readable import percent
    deploy = write_deployment(tmp_path)
    doc = yaml.safe_load(deploy.read_text())
    doc["roofline"] = {"hardware": "gb10", "model": "kimi-k2"}
    deploy.write_text(yaml.safe_dump(doc, sort_keys=False))
    run = tmp_path / "run"
    done = run_to_end(session_argv("run", str(deploy), "--out", str(run), *OPTIONS, "--json", "-"))
    assert done.returncode in (0, 1), done.stderr[-3000:]
    assert "Traceback" not in done.stderr
    assert engine_pids(str(tmp_path / "model-under-test")) == []
    top = yaml.safe_load((run / "deployment.yaml").read_text())
    assert top["roofline"]["hardware"] == "gb10" and top["roofline"]["model"] == "kimi-k2"
    assert top.get("speculative") is None  # the deployment as given (none here)
    # the sweep's launches at depth 2 run the sweep plan's deployment: ngram with its lookup
    for launch in (run / "sweep" / "launches").iterdir():
        spec = yaml.safe_load((launch / "deployment.yaml").read_text()).get("speculative")
        if spec:
            assert spec["num_speculative_tokens"] == 2 and spec["method"] == "ngram"
            assert spec["extra"] == {"prompt_lookup_max": 4, "prompt_lookup_min": 2}
    report = json.loads((run / "report" / "report.json").read_text())
    sections = report["sections"]
    assert sections["deployment"]["status"] == "present"
    roof = sections["roofline"]
    assert roof["status"] == "present" and roof["fractions"], roof
    # the sweep section restates sweep.json: its means, intervals and tests
    sweep = json.loads((run / "sweep.json").read_text())
    by_depth = {d["depth"]: d for d in sweep["depths"]}
    for point in sections["sweep"]["points"]:
        assert point["mean"] == by_depth[point["depth"]]["mean_tok_s"]
        assert point["ci95_low"] == by_depth[point["depth"]]["ci95_low"]
    assert [(c["depth"], c["versus"], c["test"]) for c in sections["sweep"]["comparisons"]] == \
        [(c["depth"], c["versus"], c["test"]) for c in sweep["comparisons"]]
    # one number formatter: every share of the roofline prints as readable.percent does
    text = "\n".join(p.read_text() for p in (run / "report").glob("*.md"))
    assert "Roofline" in text or "roofline" in text
    best = max(f["fraction"] for f in roof["fractions"])
    assert percent(best) in text
    whole = f"{best * 100:.0f}%"
    if whole != percent(best):
        assert not re.search(rf"(?<![\d.]){re.escape(whole)}", text), whole
