"""Issue 16: every user YAML goes through one bounded reader (alias bombs, depth, size)."""

from __future__ import annotations

import time

import pytest
import yaml

from sparktriage import yamlsafe
from sparktriage.bench.workload import load_workload
from sparktriage.config.deployment import load_deployment
from sparktriage.errors import InputError
from sparktriage.limits import YAML_MAX_BYTES, YAML_MAX_DEPTH, LimitError
from sparktriage.stalls.loader import read_yaml
from sparktriage.testbed import hostile

from hardening_cli import REPO, cli, one_error


def test_alias_bomb_in_a_deployment_is_refused_at_its_line(tmp_path):
    path = tmp_path / "bomb.yaml"
    path.write_text(hostile.deployment_bomb())
    assert len(path.read_bytes()) < 1024
    started = time.monotonic()
    result = cli("launch", str(path), "--dry-run", timeout=30)
    assert time.monotonic() - started < 20
    assert result.returncode == 2
    line = one_error(result)
    assert f"{path}:8:" in line and "alias *a0 names a mapping or list" in line


def test_alias_bomb_in_rules_and_workloads(tmp_path):
    rules = tmp_path / "rules"
    rules.mkdir()
    (rules / "_vocabulary.yaml").write_text((REPO / "rules" / "_vocabulary.yaml").read_text())
    (rules / "bomb.yaml").write_text("id: bomb\n" + hostile.laughs())
    data, lines, problems = read_yaml(rules / "bomb.yaml")
    assert data is None and len(problems) == 1
    assert problems[0].location.line == 3 and "aliases may only name scalars" in problems[0].message
    result = cli("rules", "check", "--rules", str(rules), "--no-fixtures", timeout=60)
    assert result.returncode in (1, 2) and "aliases may only name scalars" in result.stdout + result.stderr
    workload = tmp_path / "w.yaml"
    workload.write_text(hostile.workload_bomb())
    with pytest.raises(LimitError, match="aliases may only name scalars") as caught:
        load_workload(str(workload))
    assert caught.value.location.line == 6


def test_deep_nesting_is_a_limit_not_a_recursion_error(tmp_path):
    path = tmp_path / "deep.yaml"
    path.write_text(hostile.DEPLOYMENT_HEAD + hostile.deep_yaml(5000))
    result = cli("launch", str(path), "--dry-run", timeout=30)
    assert result.returncode == 2
    assert f"nesting exceeds the limit of {YAML_MAX_DEPTH} levels" in one_error(result)
    with pytest.raises(LimitError, match="nesting"):
        yamlsafe.load("[" * 70 + "]" * 70, "flow.yaml")


def test_oversized_yaml_is_refused_before_parsing(tmp_path):
    path = tmp_path / "big.yaml"
    path.write_text(hostile.big_yaml(5))
    started = time.monotonic()
    with pytest.raises(LimitError, match="4 MiB") as caught:
        load_deployment(path)
    assert time.monotonic() - started < 2
    assert str(path) in caught.value.one_line()
    assert path.stat().st_size > YAML_MAX_BYTES


def test_ordinary_yaml_still_loads_with_scalar_aliases(tmp_path):
    data, _ = yamlsafe.load("a: &x 5\nb: *x\nc: {d: [1, 2]}\n", "ok.yaml")
    assert data == {"a": 5, "b": 5, "c": {"d": [1, 2]}}
    with pytest.raises(yaml.YAMLError):
        yamlsafe.load("a: [1\n", "bad.yaml")
    (tmp_path / "latin1.yaml").write_bytes(b"a: 1\nb: caf\xe9\n")
    with pytest.raises(InputError, match="not UTF-8") as caught:
        yamlsafe.load_file(tmp_path / "latin1.yaml")
    assert caught.value.location.line == 2


def test_shipped_configs_rules_and_workloads_load(tmp_path):
    for path in list((REPO / "rules").glob("*.yaml")) + list(
            (REPO / "src/sparktriage/bench/workloads").glob("*.yaml")):
        data, _ = yamlsafe.load_file(path)
        assert isinstance(data, dict), path
