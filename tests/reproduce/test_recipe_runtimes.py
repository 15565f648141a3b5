"""Recipe runtimes (importers/recipe.py): which runtime names are vLLM and the executor each
implies across nodes. Minimal synthetic recipes (the published case is corpus 38)."""

from __future__ import annotations

from pathlib import Path

import pytest

from reproduce_helpers import gb10_lab, run
from sparktriage.errors import InputError

RECIPE = """\
model: org/moe
runtime: {runtime}
min_nodes: 2
container: img:1
defaults:
  tensor_parallel: 2
command: |
  vllm serve {{model}} -tp {{tensor_parallel}} {extra}
"""


def _recipe(tmp: Path, runtime: str, extra: str = "") -> Path:
    path = tmp / "recipe.yaml"
    path.write_text(RECIPE.format(runtime=runtime, extra=extra))
    return path


@pytest.mark.parametrize(("runtime", "backend"), [
    ("vllm-distributed", "mp"), ("vllm-ray", "ray"), ("eugr-vllm-ray", "ray")])
def test_the_runtime_names_the_executor(tmp_path: Path, runtime: str, backend: str) -> None:
    r = run([_recipe(tmp_path, runtime)], tmp_path, gb10_lab(tmp_path, 2))
    d = r.deployment
    assert d["engine"]["backend"] == backend
    assert d["parallelism"]["tp"] == 2 and d["parallelism"]["nodes"] == 2
    said = "Ray" if backend == "ray" else "native multi-node"
    assert f"runtime {runtime} -> {said} across 2 rank(s), as sparkrun chooses" in r.mapped
    assert r.deployment["engine"]["master_port"] == (29501 if backend == "ray" else 25000)


def test_the_command_s_own_executor_wins(tmp_path: Path) -> None:
    recipe = _recipe(tmp_path, "vllm-distributed", "--distributed-executor-backend ray")
    r = run([recipe], tmp_path, gb10_lab(tmp_path, 2))
    assert r.deployment["engine"]["backend"] == "ray"
    assert "runtime vllm-distributed -> Ray across 2 rank(s), as sparkrun chooses" in r.mapped


def test_a_runtime_that_is_not_vllm_is_refused_at_its_line(tmp_path: Path) -> None:
    with pytest.raises(InputError, match=r"recipe.yaml:2: runtime sglang is not vLLM"):
        run([_recipe(tmp_path, "sglang")], tmp_path, gb10_lab(tmp_path, 2))


def test_a_cleared_entrypoint_runs_the_server_program_as_entrypoint(tmp_path: Path) -> None:
    path = tmp_path / "recipe.yaml"
    path.write_text(RECIPE.format(runtime="vllm-distributed", extra="")
                    + 'executor_config:\n  entrypoint: ""\n  ipc: host\n  shm_size: 32gb\n')
    r = run([path], tmp_path, gb10_lab(tmp_path, 2))
    d = r.deployment
    assert d["engine"]["container_args"] == ["--entrypoint", "vllm"]
    assert d["engine"]["vllm"] == []
    assert any(u.text == "executor_config.shm_size: 32gb" for u in r.unknown)
