"""`sparktriage selfcheck` against the shared real vLLM CPU server and its own log.

The shared server serves the tiny random-weight Llama: its output IS garbage, and the check must
say so (exit 1) while measuring the tokens exactly, reconciling them with /metrics, parsing the
startup from the log, finding no stall in a healthy start, and writing a report signed with a key
made by the stock ssh-keygen, which then verifies it."""

from __future__ import annotations

import json
import subprocess
import sys

import pytest

from documents.validate import validate_run_dir
from sparktriage.session.selfcheck import has_findings

pytestmark = pytest.mark.vllm


def _selfcheck(*args: str) -> subprocess.CompletedProcess:
    return subprocess.run([sys.executable, "-m", "sparktriage", "selfcheck", *args],
                          capture_output=True, text=True, timeout=900)


def test_selfcheck_on_a_real_server(vllm_server, tmp_path):
    key = tmp_path / "id_ed25519"
    subprocess.run(["ssh-keygen", "-q", "-t", "ed25519", "-N", "", "-C", "customer@example",
                    "-f", str(key)], check=True)
    run = tmp_path / "run"
    result = _selfcheck("--endpoint", vllm_server.base_url, "--log", str(vllm_server.lines_path),
                        "--quick", "--sign", str(key), "--out", str(run), "--json", "-")
    assert result.returncode == 1, result.stderr[-3000:]  # a finding: the output is garbage
    # ... and the probe is the only one: without it (--no-probe) this server exits 0
    doc = json.loads((run / "launches" / "L001" / "selfcheck.json").read_text())
    seen = validate_run_dir(run)  # every typed document, report/data/ included
    assert seen["selfcheck"] == 1 and seen["report"] == 1 and seen["bench"] == 2, seen
    assert all(s["status"] == "ok" for s in doc["steps"]), doc["steps"]
    assert [s["step"] for s in doc["steps"]] == ["bench", "probe", "logs", "stalls", "report"]
    assert doc["probe"]["verdict"] in ("garbage", "suspect") and doc["probe"]["baseline"] is False

    launch = run / "launches" / "L001"
    bench = json.loads((launch / "bench.json").read_text())
    for w in bench["workloads"]:
        assert w["summary"]["counts"]["ok"] == 5
        assert [r["output_tokens"] for r in w["requests"]] == [128] * 6
    assert doc["bench"]["workloads"]["code"]["failed"] == 0
    assert doc["bench"]["workloads"]["code"]["delivered_tokens"] == [128, 128]
    # The checks before measuring, on vLLM itself: the tiny model answers the readiness request
    # with text, a finish reason and its served name; vLLM 0.32 accepts an invented field with
    # 200 (it logs "present in the request but ignored"), which is a caveat, not a finding.
    ready = doc["readiness"]
    assert ready["outcome"] == "answered" and ready["content_chars"] > 0, ready
    assert ready["finish_reason"] in ("length", "stop") and ready["model_answered"] == ready["model_asked"]
    assert doc["fields"]["verdict"] == "accepted" and doc["fields"]["status"] == 200
    assert [f["id"] for f in doc["findings"] if f["severity"] == "finding"] == [], doc["findings"]
    assert {f["id"] for f in doc["findings"]} == {"fields-unchecked"}
    assert has_findings(doc) and not has_findings({**doc, "probe": None})
    assert doc["server"]["version"] == "0.32.0"
    assert doc["server"]["models"][0]["max_model_len"] > 0
    assert all(r["max_gap_s"] < 5.0 for w in bench["workloads"] for r in w["requests"])
    scrapes = [json.loads(line)["when"] for line in (launch / "metrics" / "scrapes.jsonl").read_text().splitlines()]
    assert scrapes == ["before", "during", "during", "after"] * 2  # acceptance windows of 2 requests
    reconcile = json.loads((launch / "reconcile.json").read_text())
    assert reconcile["metrics"]["difference_tokens"] == 0
    assert doc["bench"]["reconcile_verdict"] == reconcile["verdict"]

    logs = json.loads((launch / "logs.json").read_text())
    assert logs["version"] == "0.32.0" and doc["startup"]["complete"] is True
    assert doc["startup"]["phases"][-1]["name"] == "ready"
    assert doc["stalls"] == [] and json.loads((launch / "stalls.json").read_text())["findings"] == []

    report = run / "report"
    assert doc["report"]["signed"] is True and doc["report"]["dir"] == str(report)
    allowed = tmp_path / "allowed_signers"
    allowed.write_text(doc["report"]["allowed_signers_line"] + "\n")
    with open(report / "MANIFEST", "rb") as manifest:
        done = subprocess.run(["ssh-keygen", "-Y", "verify", "-f", str(allowed), "-I",
                               "customer@example", "-n", "sparktriage", "-s",
                               str(report / "MANIFEST.sig")], stdin=manifest,
                              capture_output=True, text=True)
    assert done.returncode == 0, done.stderr
    text = subprocess.run(["pdftotext", str(report / "report.pdf"), "-"], capture_output=True,
                          text=True, check=True).stdout
    assert doc["probe"]["verdict"] in " ".join(text.split()).lower()
    assert json.loads(result.stdout) == doc  # --json -: the data on stdout, the summary on stderr
    assert "output quality: " + doc["probe"]["verdict"].upper() in result.stderr


def test_selfcheck_unreachable_endpoint_exits_3_and_writes_nothing(tmp_path):
    result = _selfcheck("--endpoint", "http://127.0.0.1:9", "--out", str(tmp_path / "run"))
    assert result.returncode == 3
    (line,) = result.stderr.strip().splitlines()
    assert line.startswith("error: cannot connect to http://127.0.0.1:9")
    assert not (tmp_path / "run").exists()


@pytest.mark.parametrize("args, message", [
    (["--baseline", "b.json", "--reference", "http://x"], "give --baseline or --reference"),
    (["--metrics", "http://x/metrics", "--no-metrics"], "give --metrics or --no-metrics"),
    (["--log", "/nonexistent/vllm.log"], "/nonexistent/vllm.log"),
    (["--format", "docx"], "--format 'docx'"),
    (["--sign", "/nonexistent/key"], "/nonexistent/key"),
])
def test_selfcheck_bad_options_exit_2_before_contacting_anything(tmp_path, args, message):
    result = _selfcheck("--endpoint", "http://127.0.0.1:9", *args, "--out", str(tmp_path / "run"))
    assert result.returncode == 2, result.stderr
    assert message in result.stderr and "Traceback" not in result.stderr
    assert not (tmp_path / "run").exists()
