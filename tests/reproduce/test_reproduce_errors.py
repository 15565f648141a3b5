"""Validation errors of reproduce in plain words (validation_words), at file:line, like every
other loader: imported settings that make no valid deployment, and broken trap rules."""

from __future__ import annotations

import shutil
from pathlib import Path

import pytest

from sparktriage.errors import ConfigError
from sparktriage.reproduce import reproduce
from sparktriage.reproduce.check.traps import config_rules_dir, load_traps, load_why

INVALID = "the imported settings do not make a valid deployment"


def _refused(tmp_path: Path, name: str, text: str) -> tuple[Path, ConfigError]:
    src = tmp_path / name
    src.write_text(text)
    with pytest.raises(ConfigError) as caught:
        reproduce([src], None, {}, tmp_path / "out", capture_live=False)
    return src, caught.value


def test_serve_options_at_their_command_line(tmp_path: Path) -> None:
    src, error = _refused(tmp_path, "serve.sh", "export A=1\n"
                          "vllm serve /m --tensor-parallel-size 0 --max-model-len -5\n")
    assert error.one_line() == (f"{src}:2: {INVALID}: parallelism.tp: must be at least 1 "
                                "(and 1 more problem)")
    assert error.errors == [f"{src}:2: parallelism.tp: must be at least 1",
                            f"{src}:2: serve.max_model_len: must be at least 1"]
    assert not (tmp_path / "out").exists()


def test_head_node_command_of_several(tmp_path: Path) -> None:
    src, error = _refused(tmp_path, "nodes.sh",
                          "vllm serve /m --port 8000 --node-rank 1 --headless\n"
                          "vllm serve /m --gpu-memory-utilization 1.5 --node-rank 0\n")
    assert error.one_line() == f"{src}:2: {INVALID}: serve.gpu_memory_utilization: must be at most 1"


def test_docker_and_compose(tmp_path: Path) -> None:
    src, error = _refused(tmp_path, "run.sh", "X=1\ndocker run --gpus all img vllm serve /m --port 0\n")
    assert error.one_line() == f"{src}:2: {INVALID}: serve.port: must be at least 1"
    src, error = _refused(tmp_path, "compose.yaml", "services:\n  vllm:\n    image: img\n"
                          "    command: vllm serve /m -pp 0\n")
    assert error.one_line() == f"{src}:4: {INVALID}: parallelism.pp: must be at least 1"


def test_broken_trap_rules(tmp_path: Path) -> None:
    rules = tmp_path / "config"
    shutil.copytree(config_rules_dir(), rules)
    trap = rules / "docker-short-bind.yaml"
    trap.write_text(trap.read_text().replace("severity: medium", "severity: urgent")
                    .replace("equals: true}", "equal: true}", 1))
    with pytest.raises(ConfigError) as caught:
        load_traps(rules)
    assert caught.value.one_line() == (f"{trap}:3: severity: expected 'high', 'medium', 'low' or "
                                       "'info' (and 1 more problem)")
    assert caught.value.errors[1] == f"{trap}:6: conditions.short.equal: unknown key"
    why = rules / "_why.yaml"
    why.write_text(why.read_text().replace("severity: high", "severity: huge", 1))
    with pytest.raises(ConfigError) as caught:
        load_why(rules)
    assert caught.value.one_line() == (f"{why}:5: rows[0].severity: expected 'high', 'medium', "
                                       "'low' or 'info'")
