"""Loading rules: schema errors with file:line, all of them at once; safe YAML only."""

from __future__ import annotations

import shutil
from pathlib import Path

import pytest

from sparktriage.errors import ConfigError
from sparktriage.stalls.analyze import load_rules
from sparktriage.stalls.loader import load_directory, load_rule

RULES = Path(__file__).resolve().parents[2] / "rules"
GOOD = (RULES / "cold-storage.yaml").read_text()


def _write(tmp_path: Path, name: str, text: str) -> Path:
    path = tmp_path / name
    path.write_text(text)
    return path


def test_shipped_rules_load(rules):
    assert len(rules.ruleset.rules) == 15


def test_typo_key_fails_with_its_line(tmp_path):
    text = GOOD.replace("  loader_idle:\n    signal:", "  loader_idle:\n    signl:")
    loaded, problems = load_rule(_write(tmp_path, "cold-storage.yaml", text))
    assert loaded is None
    line = text.splitlines().index("    signl: procs.top_thread_cpu") + 1
    assert any(p.location.line == line and "signl" in p.message for p in problems), problems


def test_every_problem_is_collected(tmp_path):
    folder = tmp_path / "rules"
    shutil.copytree(RULES, folder)
    (folder / "cold-storage.yaml").write_text(GOOD.replace("status: test", "status: shiny"))
    (folder / "compile-jit.yaml").write_text(
        (RULES / "compile-jit.yaml").read_text().replace("min_share: 0.2", "min_share: 7"))
    (folder / "nccl-hang.yaml").write_text("title: x\nid: nccl-hang\nid: again\n")
    _, problems = load_directory(folder)
    files = {Path(p.location.path).name for p in problems}
    assert {"cold-storage.yaml", "nccl-hang.yaml"} <= files
    assert any("duplicate key" in p.message for p in problems)
    with pytest.raises(ConfigError) as info:
        load_rules(folder)
    assert len(info.value.errors) >= 2
    assert "rules check" in info.value.one_line()


def test_bad_regex_and_bad_decision(tmp_path):
    folder = tmp_path / "rules"
    shutil.copytree(RULES, folder)
    text = GOOD.replace("decision: reading and io_wait", "decision: reading and and io_wait")
    text = text.replace("    log: network_fs\n", "    log_match: '(unclosed'\n")
    (folder / "cold-storage.yaml").write_text(text)
    with pytest.raises(ConfigError) as info:
        load_rules(folder)
    joined = "\n".join(info.value.errors)
    assert "invalid regular expression" in joined


def test_yaml_is_loaded_safely(tmp_path):
    text = "title: !!python/object/apply:os.system ['touch pwned']\n" + GOOD
    loaded, problems = load_rule(_write(tmp_path, "cold-storage.yaml", text))
    assert loaded is None and problems
    assert not Path("pwned").exists()
