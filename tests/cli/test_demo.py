"""`sparktriage demo` end to end on the real CPU vLLM: two launches of the bundled tiny MoE
(depth 0 and ngram depth 2) through the launch supervisor and its collectors, the protocol with
reconciliation, the garbage probe against the committed fingerprint, stall classification,
the sweep decision and a signed report checked with the stock ssh-keygen and sha256sum."""

from __future__ import annotations

import json
import socket
import subprocess
import sys
from pathlib import Path

import pytest
import yaml

from bench_contract import check_bench_document
from documents.validate import validate_run_dir
from sparktriage.session.demo import scratch_folder
from sparktriage.store.rundir import RunDir
from sparktriage.sweep.evidence.launch import workload_rate

pytestmark = [pytest.mark.vllm, pytest.mark.slow]
TOKENS = 96


@pytest.fixture(scope="module")
def demo_run(demo_session):
    """The session's one demo run (tests/conftest.py `demo_session`: also the redaction
    conformance test's demo case), as (run directory, result with text output)."""
    assert demo_session.tokens == TOKENS
    result = demo_session.result
    return demo_session.run, subprocess.CompletedProcess(
        result.args, result.returncode, result.stdout.decode(), result.stderr.decode())


def _folder(run, label: str):
    """A launch folder of the demo: `L001` (the session's) or `S001` (the sweep's, in DIR/sweep)."""
    if label.startswith("S"):
        return run / "sweep" / "launches" / label
    return run / "launches" / label


def test_demo_session_succeeds_and_summarises(demo_run):
    run, result = demo_run
    assert result.returncode == 0, result.stderr[-3000:]
    doc = json.loads(result.stdout)
    assert doc == json.loads((run / "demo.json").read_text())
    assert doc["kind"] == "demo" and doc["schema_version"] == 1
    assert all(s["status"] == "ok" for s in doc["steps"]), doc["steps"]
    # the session's protocol launch, then the sweep's own launches (one per depth, DIR/sweep)
    assert [(l["label"], l["depth"], l["outcome"]) for l in doc["launches"]] == [
        ("L001", 0, "completed"), ("S001", 0, "completed"), ("S002", 2, "completed")]
    assert all(l["stall_findings"] == 0 for l in doc["launches"])
    assert doc["probe"]["verdict"] == "healthy" and doc["probe"]["baseline"] is True
    assert "Delivered tokens: tiny" in result.stderr or "Delivered tokens: tiny" in result.stdout
    for launch in doc["launches"]:  # every server is gone: its port refuses connections
        spec = yaml.safe_load((_folder(run, launch["label"]) / "deployment.yaml").read_text())
        with socket.socket() as s:
            assert s.connect_ex(("127.0.0.1", spec["serve"]["port"])) != 0


def test_the_demo_leaves_nothing_in_the_temporary_folder(demo_run, demo_session):
    """Its servers' temporary folder is the demo's own scratch folder (named by the run
    directory, so a resume finds it), removed at the end with what vLLM left there."""
    run, result = demo_run
    assert result.returncode == 0, result.stderr[-3000:]
    temp = yaml.safe_load((run / "deployment.yaml").read_text())["env"]["TMPDIR"]
    assert Path(temp).parent == scratch_folder(RunDir(run)) and not Path(temp).parent.exists()
    assert len(temp) + 1 + 36 < 107  # room for vLLM's socket names (UUIDs)
    assert demo_session.temp_left == frozenset()


def test_every_document_the_demo_wrote_validates_against_its_model(demo_run):
    run, _ = demo_run
    seen = validate_run_dir(run)  # run dir and report/data/ (itself a run directory)
    # the session's launch L001 and the sweep's two launches (DIR/sweep/launches: each with the
    # gate's probe), the sweep's own sweep.json beside the top one, and report/data/ copies of
    # all three launches (the report reads the sweep's launches in DIR/sweep/launches too)
    assert seen == {"demo": 1, "sweep": 3, "report": 1, "launch": 6, "bench": 6, "logs": 6,
                    "reconcile": 6, "stalls": 2, "probe": 6}, seen


def test_demo_measures_exact_tokens_and_reconciles(demo_run):
    run, _ = demo_run
    first = json.loads((run / "launches" / "L001" / "bench.json").read_text())
    check_bench_document(first)
    assert [w["name"] for w in first["workloads"]] == ["code", "prose"]
    for w in first["workloads"]:
        assert [r["output_tokens"] for r in w["requests"]] == [TOKENS] * 4
        assert w["summary"]["counts"]["ok"] == 3
    reconcile = json.loads((run / "launches" / "L001" / "reconcile.json").read_text())
    assert reconcile["metrics"]["difference_tokens"] == 0  # /metrics rose by what was delivered
    second = json.loads((_folder(run, "S002") / "bench.json").read_text())
    assert [w["name"] for w in second["workloads"]] == ["code"]
    assert "speculative_config=SpeculativeConfig(method='ngram'" in (
        _folder(run, "S002") / "server.log").read_text()


def test_demo_sweep_document_matches_its_launches(demo_run):
    run, _ = demo_run
    sweep = json.loads((run / "sweep.json").read_text())
    assert sweep["kind"] == "sweep" and sweep["method"] == "ngram" and sweep["workload"] == "code"
    assert [d["depth"] for d in sweep["depths"]] == [0, 2]
    for entry in sweep["depths"]:
        (launch,) = entry["launches"]
        bench = json.loads((_folder(run, launch["label"]) / "bench.json").read_text())
        assert launch["delivered_tok_s"] == workload_rate(bench, "code")
        assert launch["e2e_tok_s"] == workload_rate(bench, "code", "e2e_tok_s") > 0
    spec = sweep["depths"][1]["launches"][0]["acceptance_length"]
    assert spec is not None and spec > 1.0  # ngram drafts were accepted on the code workload
    decision = sweep["decision"]
    gates = {d["depth"]: d["gate"] for d in sweep["depths"]}
    assert decision["depth"] in (0, 2) and decision["provisional"] is True, (decision, gates)  # one launch per depth
    basis = "e2e_tok_s" if decision["basis"] == "e2e" else "delivered_tok_s"
    best = max(sweep["depths"], key=lambda d: d["launches"][0][basis])
    assert decision["depth"] == best["depth"]


def test_demo_report_is_signed_and_verifies_with_stock_tools(demo_run, tmp_path):
    run, _ = demo_run
    doc = json.loads((run / "demo.json").read_text())
    report = run / "report"
    assert doc["report"]["dir"] == str(report) and doc["report"]["verified"] is True
    assert not [p for p in report.rglob("*") if "demo_ed25519" in p.name]  # the key stays out
    sums = subprocess.run(["sha256sum", "--check", "--strict", "MANIFEST"], cwd=report,
                          capture_output=True, text=True)
    assert sums.returncode == 0, sums.stdout[-2000:]
    allowed = tmp_path / "allowed_signers"
    allowed.write_text(doc["report"]["allowed_signers_line"] + "\n")
    with open(report / "MANIFEST", "rb") as manifest:
        done = subprocess.run(["ssh-keygen", "-Y", "verify", "-f", str(allowed), "-I",
                               "sparktriage-demo", "-n", "sparktriage", "-s",
                               str(report / "MANIFEST.sig")], stdin=manifest,
                              capture_output=True, text=True)
    assert done.returncode == 0, done.stderr
    text = subprocess.run(["pdftotext", "-layout", str(report / "report.pdf"), "-"],
                          capture_output=True, text=True, check=True).stdout
    flat = " ".join(text.split())
    assert "Speculative-depth sweep" in flat and "healthy" in flat
    assert f"Decision: depth {doc['sweep']['depth']}" in flat


@pytest.mark.parametrize("args, start", [(["--depths", "0,x"], "error: --depths"),
                                         (["--depths", "0,17"], "error: --depths"),
                                         (["--format", "docx"], "error: --format 'docx'")])
def test_demo_rejects_bad_options_before_starting_anything(tmp_path, args, start):
    result = subprocess.run([sys.executable, "-m", "sparktriage", "demo", *args,
                             "--out", str(tmp_path / "run")], capture_output=True, text=True)
    assert result.returncode == 2
    assert result.stderr.strip().splitlines()[-1].startswith(start)
    assert not (tmp_path / "run").exists()
