"""The report names the cross-node environment differences that can change results (a package
version, an NCCL variable planted on one node), in readable words, and counts the noise."""

from __future__ import annotations

import datetime as dt
import json
import subprocess

from sparktriage.report.build import execute, plan_report
from sparktriage.testbed.synthetic_run import SyntheticSpec, make_run

SPEC = SyntheticSpec(depths=(0,), launches_per_depth=1, requests=3, warmup=0, max_tokens=16,
                     nodes=2, plant=False)


def test_planted_difference_between_nodes_is_shown_as_a_table(tmp_path):
    run = make_run(tmp_path / "run", SPEC)
    node = run / "launches/L001/bundle/nodes/node-02/environment.json"
    env = json.loads(node.read_text())
    env["env"]["NCCL_IB_DISABLE"] = "1"
    env["packages"]["einops"] = "0.6.0"
    node.write_text(json.dumps(env))
    out = tmp_path / "report"
    execute(plan_report(run, out, "md,pdf", None, False, None,
                        dt.datetime(2026, 3, 1, tzinfo=dt.timezone.utc)))
    md = (out / "report.md").read_text()
    assert "settings that differ between nodes and can change results" in md
    row = next(line for line in md.splitlines() if "env NCCL_IB_DISABLE" in line)
    assert "1" in row and "(absent)" in row
    assert any("package einops" in line and "0.6.0" in line for line in md.splitlines())
    assert "env.NCCL_IB_DISABLE" not in md and "packages.einops" not in md
    text = subprocess.run(["pdftotext", "-layout", str(out / "report.pdf"), "-"],
                          capture_output=True, text=True, check=True).stdout
    assert "env NCCL_IB_DISABLE" in text and "package einops" in text
