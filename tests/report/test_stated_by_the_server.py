"""Page one's deployment line and Context row from what the server states (a selfcheck run has
no deployment file): the log's `non-default args` line and engine config (logs.json), and
`/v1/models` (launch.json). "not recorded" only where no source has the fact."""

from __future__ import annotations

import json
from pathlib import Path

from sparktriage.measure.steps import logs_step
from sparktriage.report import page_one
from sparktriage.report.inputs import load_run
from sparktriage.store.documents import write_document
from sparktriage.store.rundir import RunDir

LOG = Path(__file__).parents[1] / "fixtures" / "logs" / "vllm-cpu-startup.log"  # real vLLM 0.32 CPU


def _run(tmp_path: Path, with_log: bool, preflight: dict | None = None) -> dict:
    run = RunDir.create(tmp_path / "run", ["sparktriage", "selfcheck"])
    launch = run.next_launch()
    if with_log:
        logs_step(launch, [str(LOG)])  # as selfcheck --log writes it
    if preflight is not None:
        write_document(run.path / "preflight.json", preflight)
    inputs = load_run(run.path)
    sections = {"protocol": {"status": "missing", "launches": []}, "sweep": {"status": "missing"}}
    return {**page_one.deployment(inputs, sections), "context": page_one._context(inputs, sections)}


def test_the_log_states_version_quantization_and_parallelism(tmp_path):
    line = _run(tmp_path, with_log=True)
    assert line["engine"] == "vLLM 0.32.0"
    assert line["quantization"] == "none (the log's engine config)"
    assert "1 GPU by the log" in line["line"] and "(TP 1)" in line["line"], line["line"]
    assert line["context"]["notes"] == "max model length 512 tokens"  # non-default args


def test_without_any_source_the_facts_are_not_recorded(tmp_path):
    line = _run(tmp_path, with_log=False)
    assert line["engine"] == "vLLM version not recorded" and line["quantization"] == "not recorded"
    assert "node count not recorded" in line["line"]
    assert line["context"]["notes"] == "max model length not recorded"


def test_the_kv_cache_from_the_metrics_config_info(tmp_path):
    from sparktriage.metrics.prometheus import parse_text
    from sparktriage.session.preflight import _config_info
    page = parse_text((Path(__file__).parents[1] / "fixtures" / "metrics" / "ngram-after.prom").read_text())
    line = _run(tmp_path, with_log=True, preflight={"kind": "preflight",
                                                   "metrics": {"config_info": _config_info(page)}})
    assert line["context"]["notes"] == ("max model length 512 tokens; KV cache 1,048,576 tokens, auto "
                                        "(the server's vllm:cache_config_info)")
