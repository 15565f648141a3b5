"""`sparktriage sweep` refuses bad input with one line and exit 2, before starting anything."""

from __future__ import annotations

import subprocess
import sys

import pytest

DEPLOY = ("lab: {nodes: [{name: local, host: 127.0.0.1}]}\nmodel: {path: /nonexistent}\n"
          "speculative: {method: eagle3, num_speculative_tokens: 3, model: /draft}\n")


def _run(*args, cwd=None):
    return subprocess.run([sys.executable, "-m", "sparktriage", "sweep", *args],
                          capture_output=True, text=True, cwd=cwd, timeout=120)


@pytest.mark.parametrize("args, start", [
    (["--depths", "0,x"], "error: --depths"),
    (["--depths", "0,99"], "error: --depths"),
    (["--max-launches", "2"], "error: --max-launches 2 is fewer than the minimum"),
    (["--workload", "nosuch"], "error: "),
    (["--baseline", "/nonexistent.json"], "error: --baseline"),
])
def test_bad_options_fail_before_anything_runs(tmp_path, args, start):
    (tmp_path / "d.yaml").write_text(DEPLOY)
    result = _run(str(tmp_path / "d.yaml"), "--out", str(tmp_path / "run"), *args)
    assert result.returncode == 2, result.stderr
    assert result.stderr.strip().splitlines()[-1].startswith(start)
    assert "Traceback" not in result.stderr and not (tmp_path / "run").exists()


def test_missing_out_resume_without_state_and_a_bad_deployment(tmp_path):
    (tmp_path / "d.yaml").write_text(DEPLOY)
    assert _run(str(tmp_path / "d.yaml")).stderr.strip().endswith("missing option --out DIR")
    result = _run("--resume", str(tmp_path))
    assert result.returncode == 2 and "no sweep-state.json there" in result.stderr
    (tmp_path / "bad.yaml").write_text("lab: {nodes: []}\nmodel: {}\n")
    result = _run(str(tmp_path / "bad.yaml"), "--out", str(tmp_path / "r"))
    assert result.returncode == 2 and "lab.nodes" in result.stderr and "Traceback" not in result.stderr


def test_plan_keeps_the_deployments_method_and_draft(tmp_path):
    from sparktriage.sweep.plan import plan_sweep
    (tmp_path / "d.yaml").write_text(DEPLOY)
    plan = plan_sweep(tmp_path / "d.yaml", depths=(2, 4))
    assert plan.depths == (0, 2, 4) and plan.depths_requested == (2, 4)
    assert plan.method == "eagle3" and plan.speculative_model == "/draft"
    assert plan.speculative(0) is None
    assert plan.speculative(4).model_dump() == {"method": "eagle3", "num_speculative_tokens": 4,
                                                "model": "/draft", "extra": {}}
    assert plan.max_launches == 9
    assert plan_sweep(tmp_path / "d.yaml", method="ngram").method == "ngram"
