"""Shell scripts among several inputs (reproduce/core.py with reproduce/bash): a script another
input runs is read there with its arguments; an env dump's variables win over defaults; a YAML
file is never read as a script."""

from __future__ import annotations

import json
from pathlib import Path

import pytest

from sparktriage.errors import InputError
from sparktriage.reproduce.core import reproduce

RUN_CLUSTER = """#!/bin/bash
IMAGE="$1"
HEAD="$2"
ROLE="$3"
shift 3
EXTRA=("$@")
if [ "$ROLE" == "--head" ]; then
  CMD="ray start --block --head --port=6379"
else
  CMD="ray start --block --address=${HEAD}:6379"
fi
docker run --entrypoint /bin/bash --network host --gpus all -v ~/.cache/hf:/root/.cache/hf \\
  "${EXTRA[@]}" "$IMAGE" -c "$CMD"
"""


def _run(tmp_path: Path, files: dict[str, str], order: list[str]) -> dict:
    for name, text in files.items():
        (tmp_path / name).write_text(text)
    reproduce([tmp_path / n for n in order], None, None, tmp_path / "out", capture_live=False)
    return json.loads((tmp_path / "out" / "reproduce.json").read_text())


def test_a_script_run_by_another_input_is_read_there(tmp_path: Path) -> None:
    files = {"run_cluster.sh": RUN_CLUSTER,
             "head.sh": "IMG=nvcr.io/nvidia/vllm:25.11-py3\n"
                        "bash run_cluster.sh $IMG 10.0.0.1 --head -e NCCL_DEBUG=WARN\n",
             "worker.sh": "bash ./run_cluster.sh nvcr.io/nvidia/vllm:25.11-py3 10.0.0.1 "
                          "--worker\n",
             "serve.sh": "vllm serve /m --tensor-parallel-size 2\n"}
    result = _run(tmp_path, files, ["head.sh", "worker.sh", "serve.sh", "run_cluster.sh"])
    dep = result["deployment"]
    assert [i["path"].rsplit("/", 1)[-1] for i in result["inputs"]] == ["head.sh", "worker.sh",
                                                                       "serve.sh"]
    assert (dep["engine"]["backend"], dep["engine"]["image"]) == ("ray",
                                                                  "nvcr.io/nvidia/vllm:25.11-py3")
    assert [(n["rank"], n["headless"]) for n in result["client_nodes"]] == [(0, False),
                                                                          (1, True)]
    assert "<supply:HOME>/.cache/hf:/root/.cache/hf" in dep["engine"]["container_args"]
    assert any("run_cluster.sh read where it is run, with 5 argument(s)" in n
               for n in result["notes"])


def test_env_dump_values_win_over_script_defaults(tmp_path: Path) -> None:
    files = {"serve.sh": "TP=${TP_SIZE:-1}\nvllm serve ${MODEL:-/default} -tp $TP\n",
             "env.txt": "TP_SIZE=2\nMODEL=/models/client\nPATH=/usr/bin\n"}
    result = _run(tmp_path, files, ["serve.sh", "env.txt"])
    assert result["deployment"]["model"]["path"] == "/models/client"
    assert result["deployment"]["parallelism"]["tp"] == 2


def test_a_yaml_mapping_of_no_known_kind_is_not_a_script(tmp_path: Path) -> None:
    text = "name: x\ndescription: a recipe\nrun: vllm serve /m --port 8000\n"
    (tmp_path / "recipe.yaml").write_text(text)
    with pytest.raises(InputError) as caught:
        reproduce([tmp_path / "recipe.yaml"], None, None, tmp_path / "out", capture_live=False)
    assert "not read as a shell script" in caught.value.one_line()


def test_exec_environment_reaches_a_single_quoted_inner_script(tmp_path: Path) -> None:
    files = {"launch.sh": 'M="${M:-org/model}"\nC=$(find_container)\n'
                          'docker exec -it -e M="$M" -e TP=2 "$C" /bin/bash -c \'\n'
                          '  exec vllm serve "${M}" --tensor-parallel-size "${TP}"\n\'\n',
             ".env": "# the client's env file, with comments\n# TOKEN -- ask ops\n"
                     "HF_TOKEN=hf_AbCdEfGhIjKlMnOpQrStUvWxYz987654\n"}
    result = _run(tmp_path, files, ["launch.sh", ".env"])
    assert result["deployment"]["model"]["path"] == "org/model"
    assert result["deployment"]["parallelism"]["tp"] == 2
    assert [i["kind"] for i in result["inputs"]] == ["serve", "env"]


def test_a_launcher_not_given_that_names_another_input_script_runs_it(tmp_path: Path) -> None:
    files = {"launch.sh": "./launch-cluster.sh -n 10.0.0.1,10.0.0.2 --launch-script x.sh\n",
             "x.sh": "vllm serve ${MODEL:-org/m} --tensor-parallel-size 2\n"}
    result = _run(tmp_path, files, ["launch.sh", "x.sh"])
    assert [i["path"].rsplit("/", 1)[-1] for i in result["inputs"]] == ["launch.sh"]
    assert (result["deployment"]["model"]["path"], result["deployment"]["parallelism"]["tp"]) \
        == ("org/m", 2)
    assert any("x.sh read where it is run, (`./launch-cluster.sh" in n for n in result["notes"])
