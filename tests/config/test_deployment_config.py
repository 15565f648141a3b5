"""Deployment and lab YAML: every problem reported at file:line, relative paths, lab files."""

from __future__ import annotations

import subprocess
import sys
import textwrap
from pathlib import Path

import pytest

from sparktriage.config.deployment import load_deployment
from sparktriage.config.lab import Lab
from sparktriage.errors import ConfigError

GOOD = """\
schema_version: 1
name: two-sparks
lab:
  nodes:
    - name: spark-01
      host: 10.0.0.1
      ssh: spark-01
    - name: spark-02
      host: 10.0.0.2
      ssh: admin@spark-02
model:
  path: /models/Kimi-K2-NVFP4
parallelism:
  tp: 2
serve:
  port: 8000
env:
  NCCL_IB_GID_INDEX: 3
"""


def _write(tmp_path: Path, text: str, name: str = "d.yaml") -> Path:
    path = tmp_path / name
    path.write_text(textwrap.dedent(text))
    return path


def _error(path: Path) -> ConfigError:
    with pytest.raises(ConfigError) as info:
        load_deployment(path)
    return info.value


def test_good_deployment_loads_with_defaults(tmp_path):
    dep = load_deployment(_write(tmp_path, GOOD))
    assert isinstance(dep.lab, Lab) and [n.name for n in dep.lab.nodes] == ["spark-01", "spark-02"]
    assert dep.env == {"NCCL_IB_GID_INDEX": "3"}  # numbers become strings, as env values are
    assert dep.engine.vllm == ["vllm"] and dep.timeouts.startup_s == 1800


def test_unknown_key_is_reported_at_its_line(tmp_path):
    path = _write(tmp_path, GOOD.replace("  port: 8000", "  port: 8000\n  prot: 9000"))
    error = _error(path)
    assert error.one_line() == f"{path}:17: serve.prot: unknown key"


def test_every_problem_is_collected_with_its_line(tmp_path):
    text = GOOD.replace("  tp: 2", "  tp: zero\n  pipeline: 2").replace(
        "      ssh: spark-01", "      ssh: spark-01\n      gpu_count: 1")
    path = _write(tmp_path, text)
    error = _error(path)
    assert error.errors == [
        f"{path}:8: lab.nodes[0].gpu_count: unknown key",
        f"{path}:15: parallelism.tp: expected an integer",
        f"{path}:16: parallelism.pipeline: unknown key",
    ]
    assert error.one_line().startswith(f"{path}:8: lab.nodes[0].gpu_count: unknown key (and 2 more")


def test_missing_required_and_duplicate_keys(tmp_path):
    error = _error(_write(tmp_path, GOOD.replace("  path: /models/Kimi-K2-NVFP4", "  name: x")))
    assert error.one_line() == f"{tmp_path / 'd.yaml'}:11: model.path: required key missing"
    error = _error(_write(tmp_path, GOOD + "serve:\n  port: 1\n", "dup.yaml"))
    assert "serve: duplicate key (first at line 15)" in error.one_line()
    assert error.location.line == 19


@pytest.mark.parametrize("text, expected", [
    ("model: [unclosed", "not valid YAML"),
    ("- a list\n", "expected a mapping at the top level"),
    ("", "empty document"),
])
def test_not_a_deployment(tmp_path, text, expected):
    assert expected in _error(_write(tmp_path, text)).one_line()


def test_env_names_booleans_and_node_references(tmp_path):
    error = _error(_write(tmp_path, GOOD.replace("  NCCL_IB_GID_INDEX: 3", "  BAD-NAME: x")))
    assert "env: Value error" in error.one_line() or "is not an environment variable name" in \
        error.one_line()
    error = _error(_write(tmp_path, GOOD.replace("  NCCL_IB_GID_INDEX: 3", "  NCCL_X: true")))
    assert "quoted strings" in error.one_line()
    error = _error(_write(tmp_path, GOOD + "node_env:\n  spark-09: {A: b}\n"))
    assert "node 'spark-09' is not in the lab" in error.one_line()
    error = _error(_write(tmp_path, GOOD.replace("  tp: 2", "  tp: 3")))
    assert "tp*pp*dp = 3 must be a multiple of the 2 nodes" in error.one_line()


def test_lab_file_and_relative_paths(tmp_path):
    (tmp_path / "labs").mkdir()
    _write(tmp_path / "labs", """\
        schema_version: 1
        ssh_config: ./ssh_config
        nodes:
          - {name: a, host: 10.0.0.1, ssh: a, identity_file: keys/id, pyspy: ./bin/py-spy}
        """, "lab.yaml")
    path = _write(tmp_path, """\
        lab: labs/lab.yaml
        model: {path: ../models/tiny}
        engine: {vllm: ./venv/bin/vllm}
        """)
    dep = load_deployment(path)
    node = dep.lab.nodes[0]
    assert dep.lab.ssh_config == str(tmp_path / "labs" / "ssh_config")
    assert node.identity_file == str(tmp_path / "labs" / "keys" / "id")
    assert node.pyspy == str(tmp_path / "labs" / "bin" / "py-spy")
    assert dep.model.path == str(tmp_path.parent / "models" / "tiny")
    assert dep.engine.vllm == [str(tmp_path / "venv" / "bin" / "vllm")]
    bad_lab = _write(tmp_path / "labs", "nodes:\n  - {name: a, colour: red}\n", "bad.yaml")
    error = _error(_write(tmp_path, "lab: labs/bad.yaml\nmodel: {path: x}\n", "d2.yaml"))
    assert error.one_line() == f"{bad_lab}:2: nodes[0].colour: unknown key"


def test_cli_reports_config_errors_in_one_line_each_with_exit_2(tmp_path):
    path = _write(tmp_path, GOOD.replace("  port: 8000", "  port: 8000\n  prot: 1\n  prit: 2"))
    done = subprocess.run([sys.executable, "-m", "sparktriage", "launch", str(path), "--dry-run"],
                          capture_output=True, text=True)
    assert done.returncode == 2
    assert done.stderr.splitlines() == [
        f"error: {path}:18: serve.prit: unknown key",
        f"error: {path}:17: serve.prot: unknown key (and 1 more problem)",
    ]
    assert "Traceback" not in done.stderr and done.stdout == ""
