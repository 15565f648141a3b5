"""`sparktriage bench --roofline DEPLOY.yaml` against the simulator: every delivered rate is also
given as a percentage of the deployment's ceiling, in bench.json and on the terminal."""

from __future__ import annotations

import json
import subprocess
import sys

import pytest

DEPLOY = ("lab: {nodes: [{name: a, host: 127.0.0.1}, {name: b, host: 127.0.0.2}]}\n"
          "model: {path: /m}\nparallelism: {tp: 2}\nroofline: {hardware: gb10, model: gpt-oss-120b}\n")


def test_bench_shows_each_rate_as_a_percentage_of_the_ceiling(sim, tmp_path):
    (tmp_path / "d.yaml").write_text(DEPLOY)
    result = subprocess.run([sys.executable, "-m", "sparktriage", "bench", "--endpoint", sim.base_url,
                             "--requests", "2", "--max-tokens", "20", "--out", str(tmp_path / "run"),
                             "--roofline", str(tmp_path / "d.yaml"), "--json", "-"],
                            capture_output=True, text=True, timeout=180)
    assert result.returncode == 0, result.stderr
    doc = json.loads(result.stdout)
    roof = doc["roofline"]
    bytes_node = 5.1e9 * 0.5 * 1.0625 / 2
    t_net = 36 * 2 * (2 * 5e-6 + 2880 * 2 / 25e9)  # 2 nodes: one hop each way + the bytes
    assert roof["ceiling_tok_s"] == pytest.approx(1 / (bytes_node / 273e9 + t_net))
    for row, w in zip(roof["workloads"], doc["workloads"]):
        mean = w["summary"]["decode_tok_s"]["mean"]
        assert row["roofline_pct"] == pytest.approx(100 * mean / roof["ceiling_tok_s"])
        assert f"{row['roofline_pct']:.1f}% of the {roof['ceiling_tok_s']:.1f} tok/s ceiling" in result.stderr
    on_disk = json.loads((tmp_path / "run" / "launches" / "L001" / "bench.json").read_text())
    assert on_disk["roofline"] == roof


def test_bench_roofline_without_a_block_is_a_usage_error(tmp_path):
    (tmp_path / "d.yaml").write_text("lab: {nodes: [{name: a, host: 127.0.0.1}]}\nmodel: {path: /m}\n")
    result = subprocess.run([sys.executable, "-m", "sparktriage", "bench", "--endpoint",
                             "http://127.0.0.1:9", "--roofline", str(tmp_path / "d.yaml"),
                             "--out", str(tmp_path / "run")], capture_output=True, text=True, timeout=60)
    assert result.returncode == 2 and "has no roofline: block" in result.stderr
