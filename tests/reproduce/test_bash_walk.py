"""Launch scripts read statically as bash (reproduce/bash, importers/serve.py): variables and
defaults, branches, functions, wrappers, containers, Ray, placeholders with their line."""

from __future__ import annotations

import pytest

from sparktriage.errors import InputError
from sparktriage.reproduce.bash import read_script
from sparktriage.reproduce.importers.common import Ctx
from sparktriage.reproduce.importers.serve import import_script
from sparktriage.reproduce.model import InputRef
from sparktriage.reproduce.secrets import Placeholders


def _import(text: str, given: dict[str, str] | None = None):
    ctx = Ctx(InputRef(path="run.sh", kind="serve"), Placeholders())
    return import_script(text, ctx, given), ctx


def _words(text: str, given: dict[str, str] | None = None) -> list[tuple[int, list[str]]]:
    return [(c.line, list(c.words)) for c in read_script(text, "run.sh", given).commands]


@pytest.mark.parametrize("text, given, words", [
    ("TP=${TP_SIZE:-4}\nvllm serve /m -tp $TP", {}, ["vllm", "serve", "/m", "-tp", "4"]),
    ("TP=${TP_SIZE:-4}\nvllm serve /m -tp $TP", {"TP_SIZE": "8"},
     ["vllm", "serve", "/m", "-tp", "8"]),
    ("X=\nvllm serve ${X-/a} ${X:-/b}", {}, ["vllm", "serve", "/b"]),
    ("vllm serve ${M:=/m} $M", {}, ["vllm", "serve", "/m", "/m"]),
    ("N=3\nvllm serve /m ${N:+--n} $((N * 2 + 1))", {}, ["vllm", "serve", "/m", "--n", "7"]),
    ("F=\"--enforce-eager --max-model-len 1024\"\nvllm serve /m $F \"$F\"", {},
     ["vllm", "serve", "/m", "--enforce-eager", "--max-model-len", "1024",
      "--enforce-eager --max-model-len 1024"]),
    ("ARGS=(--port 8000 \"--x y\")\nARGS+=(--z)\nvllm serve /m \"${ARGS[@]}\"", {},
     ["vllm", "serve", "/m", "--port", "8000", "--x y", "--z"]),
    ("P=/models/qwen.tar\nvllm serve ${P%.tar} ${P##*/}", {},
     ["vllm", "serve", "/models/qwen", "qwen.tar"]),
    ("vllm serve $'a\\tb' 'c d'\"e\"f\\ g", {}, ["vllm", "serve", "a\tb", "c def g"]),
    ("export A=1; unset A\nvllm serve ${A:-gone}", {}, ["vllm", "serve", "gone"]),
    ("M=Qwen/Qwen3-235B\nN=${M//\\//-}\nvllm serve ${N,,} ${M:0:4} ${M: -3} ${M/Qwen/Q} ${M^^}",
     {}, ["vllm", "serve", "qwen-qwen3-235b", "Qwen", "35B", "Q/Qwen3-235B",
          "QWEN/QWEN3-235B"]),
])
def test_variables_and_defaults(text: str, given: dict, words: list[str]) -> None:
    assert _words(text, given)[-1][1] == words


def test_what_cannot_be_known_becomes_a_placeholder_with_its_line() -> None:
    text = ("#!/bin/bash\nHEAD_IP=$(hostname -I | awk '{print $1}')\nread -r PORT\n"
            "vllm serve /m --host $HEAD_IP --chat-template \"$PORT\" --served-model-name `cat name`"
            " --tokenizer $UNSET\n")
    result, ctx = _import(text)
    serve = result.deployment["serve"]
    assert serve["host"] == "<supply:HEAD_IP>"
    assert result.deployment["model"]["name"] == "<supply:output_of_cat>"
    assert ctx.secrets.supply == ["HEAD_IP", "PORT", "UNSET", "output_of_cat"]
    rows = {u.text: u.note for u in result.unknown}
    assert rows["<supply:HEAD_IP>"].startswith("line 2: command substitution $(hostname -I")
    assert rows["<supply:PORT>"].startswith("line 3: $PORT is read at run time")
    assert rows["<supply:UNSET>"].startswith("line 4: $UNSET is not set in the script")
    assert ctx.secrets.names["HEAD_IP"].startswith("run.sh:2: command substitution")


def test_a_placeholder_in_a_typed_option_is_listed_with_its_construct_and_line() -> None:
    result, ctx = _import("TP=$(nproc)\n\nvllm serve /m --tensor-parallel-size $TP\n")
    assert "tp" not in result.deployment["parallelism"]
    rows = {u.text: u.note for u in result.unknown}
    assert rows["<supply:TP>"].startswith("line 1: command substitution $(nproc)")
    assert "--tensor-parallel-size <supply:TP>" in rows
    assert ctx.secrets.names["TP"] == "run.sh:1: command substitution $(nproc)"


def test_ignored_commands_and_the_server_behind_cleanup() -> None:
    text = ("set -euo pipefail\ncleanup() { docker rm -f vllm || true; pkill -f vllm; }\n"
            "cleanup && nvidia-smi\nsleep 2; echo starting\n"
            "CUDA_VISIBLE_DEVICES=0 nohup numactl --cpunodebind=0 --membind=0 "
            "python3 -m vllm.entrypoints.openai.api_server --model /m > log 2>&1 &\nwait\n")
    result, ctx = _import(text)
    assert result.deployment["model"]["path"] == "/m"
    assert result.deployment["env"] == {"CUDA_VISIBLE_DEVICES": "0"}
    ignored = sorted(u.note.split(":")[0] + " " + u.text for u in result.unknown
                     if "ignored" in u.note)
    # what may change the machine is unknown; output and waiting are notes
    assert ignored == ["line 2 docker rm -f vllm", "line 2 pkill -f vllm", "line 3 nvidia-smi"]
    assert {"run.sh: line 4: ignored: echo starting", "run.sh: line 4: ignored: sleep 2",
            "run.sh: line 6: ignored: wait",
            "run.sh: line 5: ran in the background ('&')"} <= set(ctx.notes)


def test_if_branches_both_read_or_chosen_by_a_known_value() -> None:
    text = ('if [ "$ROLE" = head ]; then\n  ray start --head --port=6380\n'
            '  vllm serve /m -tp 2 --distributed-executor-backend ray\n'
            'else\n  ray start --address=$HEAD:6380 --block\nfi\n')
    result, ctx = _import(text)
    assert result.deployment["engine"]["backend"] == "ray"
    assert [(n.name, n.headless) for n in result.nodes] == [("node0", False), ("node1", True)]
    assert any('in branch if [ "$ROLE" = head ] (line 1)' in n for n in ctx.notes)
    chosen = read_script(text, "run.sh", {"ROLE": "worker"})
    assert [(c.line, c.words[:2], c.branch) for c in chosen.commands] == [
        (5, ("ray", "start"), ("else (line 4, of the if on line 1) (taken: the known values "
                               "choose it)",))]


def test_case_alternatives_use_the_first_and_say_so() -> None:
    text = ('case "$MODEL" in\n  qwen) vllm serve /qwen ;;\n  kimi|k2) vllm serve /kimi ;;\n'
            '  *) echo "unknown"; exit 1 ;;\nesac\n')
    result, _ = _import(text)
    assert result.deployment["model"]["path"] == "/qwen"
    assert any(u.note.startswith("line 3: another branch runs this server command; the one on "
                                 "line 2 is used") for u in result.unknown)
    chosen, _ = _import(text, {"MODEL": "k2"})
    assert chosen.deployment["model"]["path"] == "/kimi"


def test_functions_are_followed_with_their_arguments() -> None:
    text = ("start() {\n  local model=$1\n  shift\n  exec vllm serve \"$model\" \"$@\"\n}\n"
            "start /m --port 9000 --max-num-seqs 4\n")
    result, ctx = _import(text)
    assert result.deployment["model"]["path"] == "/m"
    assert result.deployment["serve"]["port"] == 9000
    assert "run.sh: line 4: server command found in function start" in ctx.notes


def test_docker_run_in_a_script_goes_through_the_docker_importer() -> None:
    text = ("IMAGE=vllm/vllm-openai:v0.11.0\nMODEL=${MODEL:-/models/q}\ndocker rm -f v 2>/dev/null"
            "\nsudo docker run -d --gpus all --ipc host --network host -e VLLM_X=1 \\\n"
            "  -v /data:/data $IMAGE --model $MODEL --tensor-parallel-size 2\n")
    result, _ = _import(text)
    assert result.deployment["engine"]["image"] == "vllm/vllm-openai:v0.11.0"
    assert result.deployment["model"]["path"] == "/models/q"
    assert result.deployment["parallelism"]["tp"] == 2
    assert result.deployment["env"] == {"VLLM_X": "1"}


def test_ssh_and_bash_c_strings_are_read_as_scripts() -> None:
    text = ("ssh -p 22 node2 'cd /srv && VLLM_A=1 vllm serve /m --headless --node-rank 1 "
            "--nnodes 2'\nbash -c \"vllm serve /m --node-rank 0 --nnodes 2\"\n")
    result, _ = _import(text)
    assert [(n.rank, n.headless) for n in result.nodes] == [(0, False), (1, True)]
    assert result.nodes[1].env == {"VLLM_A": "1"}


@pytest.mark.parametrize("text, message", [
    ("echo hello\nsleep 1\n", "run.sh: no server command found"),
    ("vllm serve /m --x 'oops\n", "run.sh:1: unbalanced ' quote: the server command of line 1"),
])
def test_refusals(text: str, message: str) -> None:
    with pytest.raises(InputError) as caught:
        _import(text)
    assert caught.value.one_line().startswith(message)


@pytest.mark.parametrize("text, path, vllm", [
    ('CMD="vllm serve /e --port 8001"\neval "$CMD --max-num-seqs 3"\n', "/e", "vllm"),
    ("tmux new-session -d -s vllm \"conda run -n vllm --no-capture-output python3 -u -m "
     "vllm.entrypoints.openai.api_server --model /t\"\n", "/t",
     ["python3", "-m", "vllm.entrypoints.cli.main"]),
    ("screen -dmS vllm srun --nodes=1 env A=1 python -m vllm.entrypoints.cli.main serve /s\n",
     "/s", ["python", "-m", "vllm.entrypoints.cli.main"]),
    ("sudo -E -u ops taskset -c 0-9 timeout 3600 uv run --with x vllm serve /u\n", "/u",
     "vllm"),
    ("$ENGINE serve /v\n", None, None),
])
def test_wrappers_and_command_strings(text: str, path: str | None, vllm) -> None:
    if path is None:  # the program itself is not known: no server command can be read
        with pytest.raises(InputError) as caught:
            _import(text)
        assert caught.value.one_line() == (
            "run.sh:1: the program of `$ENGINE serve /v` is not known statically ($ENGINE is "
            "not set in the script and no default is given); no server command could be read")
        return
    result, _ = _import(text)
    assert result.deployment["model"]["path"] == path
    assert result.deployment["engine"]["vllm"] == vllm


def test_idle_container_and_docker_exec_make_one_container_run() -> None:
    text = ("docker run -d --name head --gpus all --network host -v /models:/models "
            "-e NCCL_DEBUG=WARN img:1 sleep infinity\n"
            "docker exec head bash -lc \"ray start --head --port=6379\"\n"
            "docker exec head bash -lc \"\n  export VLLM_X=1\n  vllm serve /models/m \\\n"
            "    --tensor-parallel-size 2 --distributed-executor-backend ray\n\"\n")
    result, _ = _import(text)
    dep = result.deployment
    assert (dep["engine"]["image"], dep["engine"]["backend"]) == ("img:1", "ray")
    assert dep["parallelism"]["tp"] == 2
    assert dep["env"] == {"NCCL_DEBUG": "WARN", "VLLM_X": "1"}
    assert "/models:/models" in dep["engine"]["container_args"]


def test_loops_over_unknown_script_arguments_and_numeric_tests() -> None:
    text = ('EAGER=1\nfor arg in "$@"; do\n  case "$arg" in --graphs) EAGER=0 ;; esac\ndone\n'
            'X="--a"\nif [ "$EAGER" -eq 1 ]; then X+=" --enforce-eager"; fi\nvllm serve /m $X\n')
    script = read_script(text, "run.sh")
    assert script.commands[-1].words == ("vllm", "serve", "/m", "--a", "--enforce-eager")
    assert "line 2: the loop over arg has no values known" in script.notes[0]


def test_quoted_script_strings_keep_their_blanks_and_placeholders() -> None:
    text = ('E="$(extra)"\nbash -c "\n  vllm serve /m \\\n    --max-num-seqs ${N:-4} \\\n'
            '    ${E} 2>&1 | tee /tmp/log\n"\n')
    result, ctx = _import(text)
    assert result.deployment["serve"]["max_num_seqs"] == 4
    assert result.deployment["model"]["path"] == "/m"
    assert ctx.secrets.supply == ["E"]


def test_image_entrypoint_mode_words_and_exec_into_a_named_container() -> None:
    text = ("docker run -d --name head -e HEAD_IP=10.0.0.1 img ray-head\n"
            "ssh w 'docker run -d --name w -e HEAD_IP=10.0.0.1 img ray-worker'\n"
            "docker exec -d head bash -c 'export A=1; vllm serve /m -tp 2 "
            "--distributed-executor-backend ray'\n")
    result, ctx = _import(text)
    assert result.deployment["engine"]["backend"] == "ray"
    assert [(n.rank, n.headless) for n in result.nodes] == [(0, False), (1, True)]
    assert result.deployment["engine"]["image"] == "img"
    assert any("entrypoint word `ray-head`, read as `ray start --head` (assumed)" in n
               for n in ctx.notes)


def test_argument_parsing_loops_take_no_arguments() -> None:
    text = ('MODEL="${MODEL:-/default}"\nTP=1\nwhile [[ $# -gt 0 ]]; do\n  case $1 in\n'
            '    --model) MODEL=$2; shift 2 ;;\n    --tp) TP=$2; shift 2 ;;\n'
            '    *) echo "unknown $1"; exit 1 ;;\n  esac\ndone\n'
            'while getopts "m:t:" opt; do\n  case $opt in m) MODEL=$OPTARG ;; esac\ndone\n'
            'vllm serve $MODEL -tp $TP\n')
    result, _ = _import(text)
    assert (result.deployment["model"]["path"], result.deployment["parallelism"]["tp"]) == \
        ("/default", 1)
    script = read_script(text, "run.sh", None)
    assert [c.line for c in script.commands] == [13]  # neither loop body is read


def test_here_documents_fed_to_a_shell_are_read_as_scripts() -> None:
    text = ("M=/m\nssh worker bash <<EOF\nexport A=1\nvllm serve $M --port 8001 --headless "
            "--node-rank 1 --nnodes 2\nEOF\n"
            "bash -s <<'X'\nvllm serve $M --port 8001 --node-rank 0 --nnodes 2\nX\n"
            "cat <<EOF > /tmp/never.yaml\nvllm serve /other\nEOF\n")
    result, _ = _import(text)
    # quoted delimiter: not expanded here, and the inner shell has no M (not exported)
    assert result.deployment["model"]["path"] == "<supply:M>"
    assert [(n.rank, n.headless, n.env) for n in result.nodes] == [(0, False, {}),
                                                                  (1, True, {"A": "1"})]


def test_a_multi_line_container_script_is_not_a_newline_in_the_server_argv() -> None:
    text = ('docker run --gpus all img bash -c "\n  ray start --head --port=6379\n'
            '  vllm serve /m -tp 2 --distributed-executor-backend ray\n"\n')
    result, _ = _import(text)
    assert (result.deployment["engine"]["image"], result.deployment["parallelism"]["tp"]) == \
        ("img", 2)


def test_a_launcher_not_given_runs_the_serve_command_in_its_arguments() -> None:
    text = ("./launch-cluster.sh -n 10.0.0.1,10.0.0.2 exec vllm serve Qwen/Q --port 8000\n"
            "echo vllm serve started\n")
    result, ctx = _import(text)
    assert (result.deployment["model"]["path"], result.deployment["serve"]["port"]) == \
        ("Qwen/Q", 8000)
    assert any("`./launch-cluster.sh` (a launcher not given: assumed to run them" in n
               for n in ctx.notes)
    assert "run.sh: line 2: ignored: echo vllm serve started" in ctx.notes


def test_serve_commands_one_after_the_other_are_alternatives_not_nodes() -> None:
    text = ('vllm serve "Qwen/A" --pipeline-parallel-size 2 --dtype float16 # check\n'
            'vllm serve "Qwen/B" --distributed-executor-backend mp # error\n')
    result, _ = _import(text)
    assert result.deployment["model"]["path"] == "Qwen/A"
    assert len(result.nodes) == 1
    assert any(u.note.startswith("line 2: another server command of the script (an "
                                 "alternative or a later run, not a node); the one on line 1")
               for u in result.unknown)


def test_main_called_with_the_scripts_arguments_and_exported_command_output() -> None:
    text = ('main() {\n  MODEL=${1:-/default}\n  vllm serve $MODEL\n}\n'
            'export $(grep -v "^#" .env | xargs)\nmain "$@"\n')
    result, ctx = _import(text)
    assert result.deployment["model"]["path"] == "/default"
    assert any(n.startswith("run.sh: line 5: `export $(grep") and "computed at run time" in n
               for n in ctx.notes)


def test_a_container_whose_script_starts_no_server_is_a_build_step() -> None:
    text = ("docker run --gpus all --name cdg img:1 bash -lc 'cd /w && pip install . && "
            "python3 -c \"import x\"'\ndocker commit cdg img:1\n"
            "HF_HOME=/hf ./launch-cluster.sh -n 10.0.0.1,10.0.0.2 -t img:1 exec vllm serve /m "
            "--tensor-parallel-size 2\n")
    result, _ = _import(text)
    assert (result.deployment["model"]["path"], result.deployment["parallelism"]["tp"]) == \
        ("/m", 2)
    ignored = [u.note.split(":")[0] for u in result.unknown if "ignored" in u.note]
    assert ignored == ["line 1", "line 2"]
