"""Every `sh -c`/`bash -c` string, whatever runs it (docker run, a container's entrypoint, a
compose `command:` list, a Kubernetes container's command and args, an `srun` line), is read
by the one shell reader (reproduce/bash), as bash reads it.

The script below is one a punctuation-aware `shlex` split reads wrongly: `$((LEN * 2))` is
arithmetic, not a command substitution; `serve() { ...; }` defines a function whose `$1` is the
`8001` it is called with; `;` inside double quotes is part of a value; `set -e;`, `exec` and a
`cd ... &&` chain lead the server command; a here-string feeds `read`, whose variables are then
values the script cannot know (never the server's). Read as bash: `--max-model-len 8192`,
`--port 8001`, `--served-model-name "m;x"`.
"""

from __future__ import annotations

import shlex
from pathlib import Path

import pytest

from reproduce_helpers import gb10_lab, run
from sparktriage.reproduce.importers.common import Ctx
from sparktriage.reproduce.importers.container_script import split_script
from sparktriage.reproduce.model import InputRef
from sparktriage.reproduce.secrets import Placeholders

SCRIPT = ('set -e; LEN=4096; read -r A B <<< "1 2"; '
          'serve() { exec vllm serve /models/m --max-model-len $((LEN * 2)) --port "$1" '
          '--served-model-name "m;x"; }; cd /tmp && serve 8001')


def _compose_list(tmp: Path) -> Path:
    escaped = SCRIPT.replace("$", "$$").replace("'", "''")
    path = tmp / "docker-compose.yml"
    path.write_text("services:\n  vllm:\n    image: vllm/vllm-openai:v0.32.0\n"
                    "    network_mode: host\n    entrypoint: []\n"
                    f"    command: [bash, -c, '{escaped}']\n")
    return path


def _compose_entrypoint(tmp: Path) -> Path:
    escaped = SCRIPT.replace("$", "$$").replace("'", "''")
    path = tmp / "docker-compose.yml"
    path.write_text("services:\n  vllm:\n    image: vllm/vllm-openai:v0.32.0\n"
                    "    network_mode: host\n    entrypoint: [/bin/sh, -c]\n"
                    f"    command: ['{escaped}']\n")
    return path


def _docker_run(tmp: Path) -> Path:
    path = tmp / "serve.sh"
    path.write_text("docker run --gpus all --network host vllm/vllm-openai:v0.32.0 "
                    f"sh -c {shlex.quote(SCRIPT)}\n")
    return path


def _docker_entrypoint(tmp: Path) -> Path:
    path = tmp / "serve.sh"
    path.write_text("docker run --gpus all --network host --entrypoint bash "
                    f"vllm/vllm-openai:v0.32.0 -c {shlex.quote(SCRIPT)}\n")
    return path


def _kubernetes(tmp: Path) -> Path:
    path = tmp / "deploy.yaml"
    path.write_text("apiVersion: apps/v1\nkind: Deployment\nmetadata: {name: m}\nspec:\n"
                    "  replicas: 1\n  template:\n    spec:\n      containers:\n"
                    "        - name: vllm\n          image: vllm/vllm-openai:v0.32.0\n"
                    "          command: [/bin/bash, -c]\n"
                    f"          args: ['{SCRIPT.replace(chr(39), chr(39) * 2)}']\n"
                    "          resources: {limits: {nvidia.com/gpu: 1}}\n")
    return path


def _srun(tmp: Path) -> Path:
    path = tmp / "job.sbatch"
    path.write_text("#!/bin/bash\n#SBATCH --nodes=1\n#SBATCH --gpus-per-node=1\n"
                    f"srun bash -c {shlex.quote(SCRIPT)}\n")
    return path


@pytest.mark.parametrize("write", [_docker_run, _docker_entrypoint, _compose_list,
                                   _compose_entrypoint, _kubernetes, _srun],
                         ids=lambda w: w.__name__.lstrip("_"))
def test_each_wrapper_gives_the_bash_reading(tmp_path: Path, write) -> None:
    result = run([write(tmp_path)], tmp_path, gb10_lab(tmp_path, 1))
    serve = result.deployment["serve"]
    assert result.deployment["model"]["path"] == "/models/m"
    assert serve["max_model_len"] == 8192
    assert serve["port"] == 8001
    assert result.deployment["model"]["name"] == "m;x"
    assert result.placeholders == []  # `read`'s variables are not the server's


def test_split_script_is_the_bash_reading() -> None:
    """What shlex made of the script (a `$((` word, `"$1"` kept, `serve()` as a command), and
    what the container's script reader gives: the function's command, expanded."""
    lexer = shlex.shlex(SCRIPT, posix=True, punctuation_chars=";&|")
    lexer.whitespace_split = True
    assert "$((LEN" in list(lexer)  # the split this reader replaced
    ctx = Ctx(InputRef(path="c.yml", kind="compose"), Placeholders())
    commands = split_script(SCRIPT, ctx, 3)
    words = [c.words for c in commands]
    assert ["vllm", "serve", "/models/m", "--max-model-len", "8192", "--port", "8001",
            "--served-model-name", "m;x"] in words
    assert ["cd", "/tmp"] in words


def test_the_shell_reader_knows_nothing_of_vllm() -> None:
    """reproduce/bash reads shell as bash does; which commands start a server is
    reproduce/meaning's: no module of bash/ imports the importers, the meaning stage or vLLM's
    option tables, and none holds a string naming vLLM (docstrings aside)."""
    import ast

    import sparktriage.reproduce.bash as bash_package
    folder = Path(bash_package.__file__).parent
    found = []
    for path in sorted(folder.glob("*.py")):
        tree = ast.parse(path.read_text())
        docstrings = {id(node.body[0].value) for node in ast.walk(tree)
                      if isinstance(node, (ast.Module, ast.FunctionDef, ast.ClassDef))
                      and node.body and isinstance(node.body[0], ast.Expr)
                      and isinstance(node.body[0].value, ast.Constant)}
        for node in ast.walk(tree):
            if isinstance(node, ast.ImportFrom) and node.module and node.module.startswith(
                    ("sparktriage.reproduce.importers", "sparktriage.reproduce.meaning",
                     "sparktriage.reproduce.vllm_options", "sparktriage.reproduce.flags")):
                found.append(f"{path.name}: imports {node.module}")
            elif isinstance(node, ast.Constant) and isinstance(node.value, str) and \
                    id(node) not in docstrings and "vllm" in node.value.lower():
                found.append(f"{path.name}:{node.lineno}: {node.value[:40]!r}")
    assert found == []
