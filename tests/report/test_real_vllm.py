"""A report built from real `bench` runs against the real vLLM CPU test bed.

The protocol results (launch.json, requests.jsonl, bench.json) are measured on the shared
`vllm_server`; the documents of stages other helpers build (logs, stalls, probe, reconcile,
bundle environment) are SYNTHETIC, written in their contract shapes by
sparktriage.testbed.synthetic_run.add_side_documents.
"""

from __future__ import annotations

import json
import subprocess

import pytest

from sparktriage.bench.client import ClientSettings
from sparktriage.bench.protocol import ProtocolPlan, run_protocol
from sparktriage.bench.workload import load_workloads
from sparktriage.report.build import execute, plan_report
from sparktriage.report.format import number
from sparktriage.signing.signing import SignSpec
from sparktriage.signing.verify import verify
from sparktriage.store.rundir import RunDir
from sparktriage.testbed.synthetic_run import add_side_documents, planted_values

API_SECRET = "sk-live-4f8Hq2ZxP9mLw3Tn7Rb5Vc1K"


@pytest.mark.vllm
def test_signed_report_of_two_real_launches(vllm_server, report_keys, tmp_path):
    run = RunDir.create(tmp_path / "run", ["sparktriage", "bench", "--endpoint",
                                           vllm_server.base_url, "--api-key", API_SECRET])
    workloads = tuple(w.model_copy(update={"requests": 4, "warmup": 1, "max_tokens": 32})
                      for w in load_workloads(["code,prose"]))
    # a generous stall limit: this test is about the report, and a shared 2-core machine under
    # heavy load can keep the CPU server from answering for a minute
    settings = ClientSettings(base_url=vllm_server.base_url, stall_timeout_s=300.0)
    plan = ProtocolPlan(settings, None, workloads)
    for _ in range(2):
        launch = run.next_launch()
        run_protocol(plan, launch)
        add_side_documents(launch.path)
    out = tmp_path / "report"
    outcome = execute(plan_report(run.path, out, "md,pdf", SignSpec(str(report_keys["main"])), False))
    assert outcome.signed

    document = json.loads((out / "report.json").read_text())
    launches = document["sections"]["protocol"]["launches"]
    for launch in launches:  # the report's per-launch numbers are the bench stage's own
        bench = json.loads((run.path / "launches" / launch["label"] / "bench.json").read_text())
        for ours, theirs in zip(launch["workloads"], bench["workloads"]):
            assert ours["decode_tok_s"]["mean"] == theirs["summary"]["decode_tok_s"]["mean"]
            measured = [r for r in theirs["requests"] if not r["warmup"] and r["status"] == "ok"]
            rated = [r for r in measured if r["decode_tok_s"] is not None]
            assert len(measured) == 4
            # A request whose tokens all arrive in one read (a CPU-starved server flushing a
            # burst) has no decode interval and so no rate: n counts the requests that have one.
            assert ours["decode_tok_s"]["n"] == theirs["summary"]["decode_tok_s"]["n"] == len(rated)
            assert ours["output_tokens"] == 4 * 32  # ignore_eos: every request yields 32 tokens
    pools = document["sections"]["protocol"]["across"]
    assert {tuple(p["launches"]) for p in pools} == {("L001", "L002")}  # same server: pooled

    text = subprocess.run(["pdftotext", "-layout", str(out / "report.pdf"), "-"],
                          capture_output=True, text=True, check=True).stdout
    # page 1 is the diagnosis (page_one), page 2 the summary with the headline numbers
    first = " ".join(" ".join(text.split("\f")[:2]).split())  # table cells may wrap
    # (A value is unknown when every response of a launch arrived in one burst: no decode rate.)
    for pool in pools:
        d = pool["decode_tok_s"]
        shown = [f"{number(d['mean'])} tok/s" if d["mean"] is not None else None,
                 number(d["ci95_low"]) if d["ci95_low"] is not None else None,
                 number(d["ci95_high"]) if d["ci95_high"] is not None else None]
        for value in filter(None, shown):
            assert value in first, value
    for launch in launches:  # per-launch table: every launch's mean for every workload
        for w in launch["workloads"]:
            if w["decode_tok_s"]["mean"] is not None:
                assert number(w["decode_tok_s"]["mean"]) in " ".join(text.split())

    everything = b"".join(p.read_bytes() for p in out.rglob("*") if p.is_file())
    assert API_SECRET.encode() not in everything
    assert not [s for s in planted_values() if s.encode() in everything]

    allowed = tmp_path / "allowed_signers"
    allowed.write_text(outcome.allowed_signers_line + "\n")
    done = subprocess.run(["ssh-keygen", "-Y", "verify", "-f", str(allowed), "-I", outcome.identity,
                           "-n", "sparktriage", "-s", str(out / "MANIFEST.sig")],
                          stdin=open(out / "MANIFEST", "rb"), capture_output=True, text=True)
    assert done.returncode == 0, done.stderr
    assert verify(out, allow_untrusted=True).ok
