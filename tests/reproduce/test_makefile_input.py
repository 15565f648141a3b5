"""A Makefile input is read as make (reproduce/read/makefile.py): recipe lines of its targets as
shell, make variables expanded, target lines noted, unsupported constructs refused on one
line naming the construct and line; nothing is run."""

from __future__ import annotations

from pathlib import Path

import pytest
from reproduce_helpers import run

from sparktriage.config.deployment import load_deployment
from sparktriage.errors import InputError
from sparktriage.reproduce.read.makefile import looks_like, to_shell

MAKEFILE = """\
# serve the model
MODEL ?= Qwen/Qwen3-8B
PORT = 8000
ARGS := --port $(PORT) --max-num-seqs 4
ARGS += --gpu-memory-utilization 0.7
HOST_IP != hostname -I
export HF_HOME = /data/hf

.PHONY: serve stop

serve: deps
\t@echo starting $@
\t-vllm serve ${MODEL} $(ARGS) \\
\t  --served-model-name $(NAME) --api-key $$API_KEY

stop:
\tpkill -f vllm
"""


def test_make_text_to_shell_line_for_line() -> None:
    shell, notes = to_shell(MAKEFILE, "Makefile")
    lines = shell.splitlines()
    assert len(lines) == len(MAKEFILE.splitlines())
    assert lines[6] == 'export HF_HOME="/data/hf"'
    assert lines[10:14] == [
        "",
        "echo starting serve",
        "vllm serve Qwen/Qwen3-8B --port 8000 --max-num-seqs 4 --gpu-memory-utilization 0.7 \\",
        "  --served-model-name ${NAME} --api-key $API_KEY"]
    assert lines[16] == "pkill -f vllm"
    assert notes[0] == "line 9: make directive `.PHONY: serve stop` (not a command)"
    assert notes[1].startswith("line 11: make target `serve`")


def test_detected_by_name_or_by_syntax() -> None:
    assert looks_like(Path("Makefile"), "")
    assert looks_like(Path("build.mk"), "")
    assert looks_like(Path("targets"), "up:\n\tvllm serve m\n")
    assert not looks_like(Path("run.sh"), "#!/bin/bash\nvllm serve m --port 8000\n")
    assert not looks_like(Path("cfg.yaml"), "model: m\nport: 8000\n")
    # a shell script of assignments and a tab-continued docker run with a bind is not make
    assert not looks_like(Path("run.sh"), "M=x\ndocker run -v /a:/b \\\n\tIMG vllm serve m\n")
    assert not looks_like(Path("run"), 'echo "url: x"\n\tvllm serve m\n')


@pytest.mark.parametrize("text,error", [
    ("ifeq ($(X),1)\nA = 1\nendif\n", "Makefile:1: the make directive `ifeq` is not read"),
    ("all:\n\tvllm serve $(patsubst %.a,%.b,$(M))\n",
     "Makefile:2: the make function $(patsubst ...) is not read"),
    ("A = $(B)\nB = $(A)\nall:\n\techo $(A)\n", "Makefile:4: make variables nest deeper"),
])
def test_refusals_name_the_construct_and_line(text: str, error: str) -> None:
    with pytest.raises(InputError) as caught:
        to_shell(text, "Makefile")
    assert caught.value.message.startswith(error)
    assert "\n" not in caught.value.message


def test_makefile_input_reproduced(tmp_path: Path) -> None:
    path = tmp_path / "Makefile"
    path.write_text(MAKEFILE)
    result = run([path], tmp_path)
    dep = load_deployment(Path(result.out_dir) / "deployment.yaml")
    assert dep.model.path == "Qwen/Qwen3-8B"
    assert (dep.serve.port, dep.serve.max_num_seqs, dep.serve.gpu_memory_utilization) == \
        (8000, 4, 0.7)
    assert dep.env.get("HF_HOME") == "/data/hf"
    assert any("make target `serve`" in n for n in result.notes)


def test_cli_refusal_is_one_line_exit_2(tmp_path: Path) -> None:
    from reproduce_helpers import cli

    path = tmp_path / "Makefile"
    path.write_text("all:\n\tvllm serve m\ndefine RECIPE\nvllm serve x\nendef\n")
    done = cli("reproduce", str(path), "--out", str(tmp_path / "out"))
    assert done.returncode == 2
    assert done.stderr.strip().splitlines() == [
        f"error: {path}:3: the make directive `define` is not read (give the recipe's command "
        "as a script)"]


@pytest.mark.timeout(30)
def test_a_megabyte_target_line_is_read_in_linear_time() -> None:
    """A hostile Makefile line (a target name, a megabyte of blanks, then more) is read, not
    stuck: the target pattern's lazy groups beside `\\s*` once took time quadratic in the line
    (about 15 minutes for this one)."""
    blanks = " " * 1_000_000
    shell, notes = to_shell(f"serve{blanks}x: dep{blanks}; vllm serve m\n", "Makefile")
    assert shell == "vllm serve m\n"
    assert notes[0].startswith("line 1: make target `serve")


@pytest.mark.parametrize("text", ["x:\n\t$ \n", "x:\n\techo $( ) a\n"])
def test_a_reference_of_blanks_expands_to_nothing(text: str) -> None:
    # `$ ` and `$( )` name a variable of blanks, which make expands to nothing
    shell, _ = to_shell(text, "Makefile")
    assert "$" not in shell.replace("${", "").replace("$(", "")
