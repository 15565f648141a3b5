"""Env files in shell syntax read where a script sources them (read/readall.py, envdump.py), and
options added in branches whose test is not known (bash/branches.py).

Minimal synthetic inputs written for these tests (the published case is corpus 39).
"""

from __future__ import annotations

from pathlib import Path

from reproduce_helpers import gb10_lab, run
from sparktriage.reproduce.importers.common import Ctx
from sparktriage.reproduce.importers.envdump import parse, shell_syntax
from sparktriage.reproduce.model import InputRef
from sparktriage.reproduce.secrets import Placeholders


def _write(tmp: Path, name: str, text: str) -> Path:
    path = tmp / name
    path.write_text(text)
    return path


def test_shell_syntax_env_files_are_told_from_dumps() -> None:
    assert shell_syntax('MODEL="${MODEL:-org/m}"\n')
    assert shell_syntax("USER_NAME=$(whoami)\n")
    assert shell_syntax("TP='2'\n")
    assert not shell_syntax("MODEL=org/m\nTP=2\n")
    assert not shell_syntax('declare -x PATH="/usr/bin"\n')  # export -p quotes every value


def test_blank_lines_do_not_end_up_in_dump_values() -> None:
    ctx = Ctx(InputRef(path="x.env", kind="env"), Placeholders())
    facts = parse("A=1\n\n# note\nB=two\n\n", ctx)
    assert facts.env == {"A": "1", "B": "two"}


def test_a_sourced_env_file_is_read_as_bash_there(tmp_path: Path) -> None:
    _write(tmp_path, "config.env", 'MODEL="${MODEL:-org/moe}"\n\nTP="${TP:-2}"\n'
                                   'GMU="${GMU:-0.80}"\n')
    script = _write(tmp_path, "start.sh", """\
DIR="$(cd "$(dirname "${BASH_SOURCE[0]}")" && pwd)"
if [ -f "${DIR}/config.env" ]; then
  source "${DIR}/config.env"
fi
MODEL="${MODEL:-other/model}"
vllm serve "$MODEL" --tensor-parallel-size "$TP" --gpu-memory-utilization "$GMU" \\
  --distributed-executor-backend ray
""")
    r = run([script, tmp_path / "config.env"], tmp_path, gb10_lab(tmp_path, 2))
    d = r.deployment
    assert d["model"]["path"] == "org/moe"  # the sourced file's default, set first
    assert d["parallelism"]["tp"] == 2
    assert d["serve"]["gpu_memory_utilization"] == 0.8
    assert any("config.env read where it is run" in n for n in r.notes)
    assert [i.path for i in r.inputs] == [str(script)]  # config.env: read where sourced


def test_options_added_in_unknown_branches_keep_the_rest(tmp_path: Path) -> None:
    script = _write(tmp_path, "run.sh", """\
GPUS=$(nvidia-smi -L | wc -l)
ARGS="--max-model-len 4096"
DOCKER=(--gpus all --shm-size 16g)
if [ "$GPUS" -gt 1 ]; then
  ARGS="$ARGS --enable-expert-parallel"
  DOCKER+=(--device=/dev/infiniband)
fi
docker run "${DOCKER[@]}" img:3 vllm serve org/m $ARGS
""")
    r = run([script], tmp_path, gb10_lab(tmp_path, 1))
    d = r.deployment
    assert d["engine"]["image"] == "img:3"
    assert d["serve"]["max_model_len"] == 4096
    assert d["parallelism"]["ep"] is False
    notes = " ".join(r.notes)
    assert "$ARGS gains ' --enable-expert-parallel' in some branches only" in notes
    assert "$DOCKER gains ['--device=/dev/infiniband'] in some branches only" in notes


def test_a_replaced_value_in_unknown_branches_is_still_a_placeholder(tmp_path: Path) -> None:
    script = _write(tmp_path, "run.sh", """\
if [ -n "$(ls /dev/infiniband)" ]; then MODE=true; else MODE=false; fi
if [ "$MODE" = "true" ]; then
  vllm serve org/a
else
  vllm serve org/b
fi
""")
    r = run([script], tmp_path, gb10_lab(tmp_path, 1))
    # $MODE is a placeholder: the second test is not decided by comparing its text, so both
    # commands are read as alternatives and the first is used
    assert r.deployment["model"]["path"] == "org/a"
    assert any("org/b" in u.text for u in r.unknown)
