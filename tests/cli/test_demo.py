"""`sparktriage demo` end to end: a real vLLM start, the protocol, JSON on stdout, teardown."""

from __future__ import annotations

import json
import socket
import subprocess
import sys

import pytest

from bench_contract import check_bench_document

pytestmark = pytest.mark.vllm


def test_demo_runs_the_protocol_on_the_local_cpu_vllm(testbed, tmp_path):
    run = tmp_path / "run"
    result = subprocess.run([sys.executable, "-m", "sparktriage", "demo", "--requests", "2",
                             "--max-tokens", "32", "--out", str(run), "--json", "-"],
                            capture_output=True, text=True, timeout=600)
    assert result.returncode == 0, result.stderr[-3000:]
    doc = json.loads(result.stdout)
    check_bench_document(doc)
    assert doc["model"] == "tiny" and [w["name"] for w in doc["workloads"]] == ["code", "prose"]
    for w in doc["workloads"]:
        assert [r["output_tokens"] for r in w["requests"]] == [32, 32, 32]
        assert all(r["token_source"] == "token_ids" for r in w["requests"])
        assert w["summary"]["counts"] == {"measured": 2, "warmup": 1, "ok": 2, "error": 0, "incomplete": 0}
    launch = run / "launches" / "L001"
    assert json.loads((launch / "bench.json").read_text()) == doc
    log = (launch / "server.log").read_text()
    assert "Application startup complete" in log
    assert "server ready after" in result.stderr and "Delivered tokens: tiny" in result.stderr
    port = int(doc["endpoint"].rsplit(":", 1)[1])
    with socket.socket() as s:  # the server is gone: its port refuses connections
        assert s.connect_ex(("127.0.0.1", port)) != 0
