"""Scripts run once per node and serve commands kept in files the script writes.

Minimal synthetic inputs written for these tests (the published cases are corpus 29 and 33):
`--node-rank "$NODE_RANK"` with the rank set on each node at run time, and a container that
runs a script file the launcher wrote from a here-document and bind-mounted into it.
"""

from __future__ import annotations

from pathlib import Path

import pytest

from reproduce_helpers import gb10_lab, planned, ranks_per_node, run
from sparktriage.errors import InputError


def _write(tmp: Path, name: str, text: str) -> Path:
    path = tmp / name
    path.write_text(text)
    return path


def test_a_node_rank_given_at_run_time_is_the_plans_to_set(tmp_path: Path) -> None:
    script = _write(tmp_path, "serve.sh", """\
: "${NODE_RANK:?set it on each node}"
EXTRA=()
if [[ "${NODE_RANK}" != "0" ]]; then
  EXTRA+=(--headless)
fi
vllm serve org/m --tensor-parallel-size 2 --distributed-executor-backend mp \\
  --nnodes 2 --node-rank "${NODE_RANK}" --master-addr 198.51.100.1 "${EXTRA[@]}"
""")
    r = run([script], tmp_path, gb10_lab(tmp_path, 2))
    d = r.deployment
    assert d["parallelism"]["tp"] == 2 and d["parallelism"]["nodes"] == 2
    assert d["engine"]["backend"] == "mp"
    assert any("--node-rank <supply:NODE_RANK>: the node's rank is given at run time" in n
               for n in r.notes)
    assert ranks_per_node(planned(r)) == {"spark-01": 1, "spark-02": 1}


def test_a_node_rank_that_is_not_a_number_is_still_refused(tmp_path: Path) -> None:
    script = _write(tmp_path, "serve.sh", "vllm serve org/m --nnodes 2 --node-rank two\n")
    with pytest.raises(InputError, match="--node-rank: expected int, got 'two'"):
        run([script], tmp_path, gb10_lab(tmp_path, 2))


@pytest.mark.parametrize("run_line", [
    "docker run --gpus all -v /tmp/serve.sh:/serve.sh:ro --entrypoint bash img:1 /serve.sh",
    "docker run --gpus all -v /tmp:/work --entrypoint /bin/sh img:1 /work/serve.sh",
])
def test_a_container_runs_the_script_file_the_launcher_wrote(tmp_path: Path,
                                                             run_line: str) -> None:
    script = _write(tmp_path, "start.sh", f"""\
MODEL=org/big-moe
ARGS="--gpu-memory-utilization 0.7 --max-num-seqs 4"
cat > /tmp/serve.sh <<SCRIPT
#!/bin/bash
# the server
exec vllm serve $MODEL $ARGS
SCRIPT
ssh spark-2 "{run_line}"
""")
    r = run([script], tmp_path, gb10_lab(tmp_path, 1))
    d = r.deployment
    assert d["model"]["path"] == "org/big-moe"
    assert d["serve"]["gpu_memory_utilization"] == 0.7 and d["serve"]["max_num_seqs"] == 4
    assert d["engine"]["image"] == "img:1"
    assert any("the here-document of line 3 (written to /tmp/serve.sh)" in m for m in r.mapped)
    # the client's shell entrypoint replaced the image's own: the plan runs the server program
    # as the entrypoint (`--entrypoint vllm IMAGE serve ...`), never under the image's
    args = d["engine"]["container_args"]
    assert args[args.index("--entrypoint") + 1] == "vllm"
    assert d["engine"]["vllm"] == []


def test_a_script_file_that_was_not_written_is_still_refused(tmp_path: Path) -> None:
    script = _write(tmp_path, "start.sh",
                    "docker run --gpus all --entrypoint bash img:1 /serve.sh\n")
    with pytest.raises(InputError, match=r"start.sh:1: the container does not run vllm serve "
                                         r"\(entrypoint 'bash'\)"):
        run([script], tmp_path, gb10_lab(tmp_path, 1))


def test_comment_lines_in_a_container_script_do_not_hide_the_server(tmp_path: Path) -> None:
    script = _write(tmp_path, "run.sh", """\
docker run --gpus all img:2 bash -c '
# start the server
exec vllm serve org/m --max-num-seqs 3'
""")
    r = run([script], tmp_path, gb10_lab(tmp_path, 1))
    assert r.deployment["model"]["path"] == "org/m"
    assert r.deployment["serve"]["max_num_seqs"] == 3


def test_data_parallel_placement_is_the_plans(tmp_path: Path) -> None:
    common = ("vllm serve org/m --data-parallel-size 2 --data-parallel-size-local 1 "
              "--data-parallel-address 198.51.100.10 --data-parallel-rpc-port 13345 ")
    head = _write(tmp_path, "head.sh", common + "--data-parallel-start-rank 0\n")
    worker = _write(tmp_path, "worker.sh", common + "--data-parallel-start-rank 1 --headless\n")
    r = run([head, worker], tmp_path, gb10_lab(tmp_path, 2))
    d = r.deployment
    assert d["parallelism"]["dp"] == 2 and d["parallelism"]["nodes"] == 2
    assert d["engine"]["backend"] == "mp"
    flags = d["serve"]["flags"]
    assert not {"data-parallel-start-rank", "data-parallel-size-local"} & set(flags)
    assert flags["data-parallel-rpc-port"] == "13345"
    argvs = [proc.argv for stage in planned(r).stages for _, proc in stage.processes
             if "--node-rank" in proc.argv]
    assert len(argvs) == 2
    assert all("--data-parallel-start-rank" not in argv for argv in argvs)  # no rank-0 clash
    assert sorted(a[a.index("--node-rank") + 1] for a in argvs) == ["0", "1"]
    assert "--data-parallel-start-rank 1 -> per-node data-parallel placement (the lab plan " \
           "places the ranks)" in r.mapped


def test_a_service_manager_is_read_through_its_subcommands(tmp_path: Path) -> None:
    script = _write(tmp_path, "manage.sh", """\
CMD="${1:-help}"
up() { docker run -d --name v img:4 vllm serve org/m --max-num-seqs 2; }
case "$CMD" in
  up) up ;;
  down) docker rm -f v ;;
  *) echo "usage: $0 up|down" ;;
esac
""")
    r = run([script], tmp_path, gb10_lab(tmp_path, 1))
    assert r.deployment["model"]["path"] == "org/m"
    assert r.deployment["engine"]["image"] == "img:4"
    assert any("without arguments the script starts no server: read with its arguments "
               "unknown" in n for n in r.notes)


def test_a_script_that_serves_without_arguments_keeps_its_defaults(tmp_path: Path) -> None:
    script = _write(tmp_path, "run.sh", 'M="${1:-org/default}"\nvllm serve "$M"\n')
    r = run([script], tmp_path, gb10_lab(tmp_path, 1))
    assert r.deployment["model"]["path"] == "org/default"
    assert not any("without arguments" in n for n in r.notes)
