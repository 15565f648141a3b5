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
    assert f"{path}:12:" in line and "alias *a4 expands the document past the limit of " \
        "100000 nodes" in line


def test_alias_bomb_in_rules_and_workloads(tmp_path):
    rules = tmp_path / "rules"
    rules.mkdir()
    (rules / "_vocabulary.yaml").write_text((REPO / "rules" / "_vocabulary.yaml").read_text())
    (rules / "bomb.yaml").write_text("id: bomb\n" + hostile.laughs())
    data, lines, problems = read_yaml(rules / "bomb.yaml")
    assert data is None and len(problems) == 1
    assert problems[0].location.line == 7 and "alias *a4 expands the document past" in \
        problems[0].message
    result = cli("rules", "check", "--rules", str(rules), "--no-fixtures", timeout=60)
    assert result.returncode in (1, 2) and "expands the document past" in \
        result.stdout + result.stderr
    workload = tmp_path / "w.yaml"
    workload.write_text(hostile.workload_bomb())
    with pytest.raises(LimitError, match="alias \\*a4 expands the document past") as caught:
        load_workload(str(workload))
    assert caught.value.location.line == 10


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


def test_templates_and_merge_keys_load_within_the_bound():
    """Issue 35: compose templates (`x-vllm: &t` then `<<: *t`, `<<: [*a, *b]`) load; the
    merged keys come first and the mapping's own keys win, as YAML's merge key says."""
    text = ("x-base: &base\n  image: vllm/vllm-openai\n  environment: {A: '1'}\n"
            "x-gpu: &gpu {runtime: nvidia, ipc: host}\n"
            "services:\n  head:\n    <<: *base\n    command: serve m\n"
            "  worker:\n    <<: [*base, *gpu]\n    image: mine\n")
    data, node = yamlsafe.load(text, "compose.yaml")
    assert data["services"]["head"] == {"image": "vllm/vllm-openai", "environment": {"A": "1"},
                                        "command": "serve m"}
    assert data["services"]["worker"] == {"image": "mine", "environment": {"A": "1"},
                                          "runtime": "nvidia", "ipc": "host"}
    # a list template used twice is two lists' worth of nodes, not refused
    data, _ = yamlsafe.load("a: &l [1, 2, 3]\nb: *l\nc: [*l, *l]\n", "lists.yaml")
    assert data["c"] == [[1, 2, 3], [1, 2, 3]]


def test_expansion_is_counted_up_to_the_node_limit():
    """Each use of an alias counts its target's nodes: 4 levels of 9 (66,430 nodes) load, the
    fifth level (597,871) is refused at its line; a cycle is refused at the alias."""
    data, _ = yamlsafe.load(hostile.laughs(levels=5), "ok.yaml")
    assert len(data["a4"]) == 9 and data["a4"][0][0][0][0] == ["lol"] * 9
    with pytest.raises(LimitError, match=r"alias \*a4 expands the document past the limit of "
                       r"100000 nodes") as caught:
        yamlsafe.load(hostile.laughs(levels=6), "six.yaml")
    assert caught.value.one_line().startswith("six.yaml:6: ")
    with pytest.raises(LimitError, match=r"alias \*a is inside its own anchor") as caught:
        yamlsafe.load("x: 1\na: &a\n  b: [1, *a]\n", "cycle.yaml")
    assert caught.value.location.line == 3
    started = time.monotonic()
    with pytest.raises(LimitError):
        yamlsafe.load(hostile.laughs(levels=30, width=30), "huge.yaml")
    assert time.monotonic() - started < 2


def test_a_key_over_a_merged_template_is_no_duplicate():
    """yamldoc's duplicate-key check: a mapping's own key overriding one a merge key brought
    in is YAML's merge rule; two own keys are still a duplicate, at the second's line."""
    from sparktriage import yamldoc
    doc = yamldoc.parse("x: &b {a: 1, c: 2}\ny:\n  <<: *b\n  c: 3\n", "m.yaml")
    assert doc.data["y"] == {"a": 1, "c": 3} and doc.duplicates == ()
    assert doc.lines[("y", "c")] == 4
    doc = yamldoc.parse("x: &b {a: 1}\ny:\n  <<: *b\n  c: 3\n  c: 4\n", "m.yaml")
    assert [(d.path, d.line, d.previous) for d in doc.duplicates] == [(("y", "c"), 5, 4)]
