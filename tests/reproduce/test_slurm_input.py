"""SLURM batch scripts as reproduce inputs (importers/slurm.py, job_wrappers.py): `#SBATCH`
nodes and GPUs as the values SLURM sets, `srun` and its container wrappers read like `docker
run`, scripts an `srun` line runs read with their arguments, refusals naming the job."""

from __future__ import annotations

from pathlib import Path

import pytest
from reproduce_helpers import gb10_lab, planned, run

from sparktriage.config.deployment import load_deployment
from sparktriage.errors import InputError
from sparktriage.reproduce.read.detect import detect
from sparktriage.reproduce.meaning.job_wrappers import container_of
from sparktriage.reproduce.importers.slurm import Batch, batch, step

PYXIS = """\
#!/bin/bash
#SBATCH --job-name=vllm
#SBATCH -N 2
#SBATCH --gpus-per-node=4
#SBATCH --ntasks-per-node=1
set -x
nodes=$(scontrol show hostnames "$SLURM_JOB_NODELIST")
head=$(echo $nodes | cut -d' ' -f1)
srun --container-image=nvcr.io#nvidia/vllm:25.09-py3 --container-mounts=/data:/data \\
  vllm serve /data/Qwen3-8B --tensor-parallel-size 4 --pipeline-parallel-size $SLURM_NNODES \\
  --nnodes $SLURM_NNODES --node-rank $SLURM_NODEID --master-addr $head
"""


def test_sbatch_header_as_sbatch_reads_it() -> None:
    assert batch(PYXIS) == Batch(nodes=2, gpus_per_node=4, tasks_per_node=1,
                                 asked="--gpus-per-node=4")
    text = "#!/bin/bash\n#SBATCH --nodes 3-5\n#SBATCH --gres=gpu:a100:8 # eight\n" \
           "#SBTACH --nodes=9\necho hi\n#SBATCH --nodes=7\n"
    assert batch(text) == Batch(nodes=3, gpus_per_node=8, asked="--gres=gpu:a100:8")
    assert batch("#SBATCH -N 4\n#SBATCH --ntasks-per-node=2\n#SBATCH --gpus-per-task=2\n") \
        .gpus_per_node == 4
    assert batch("#SBATCH -N 2\n#SBATCH -G 8\n").variables()["SLURM_GPUS_ON_NODE"] == "4"
    assert detect(PYXIS) == "slurm"


def test_container_wrappers_name_the_image() -> None:
    pyxis = container_of(["srun", "-N1", "--container-image", "nvcr.io#nvidia/vllm:25.09",
                          "vllm", "serve", "m"])
    assert (pyxis.image, pyxis.runnable) == ("nvcr.io/nvidia/vllm:25.09", True)
    sif = container_of(["srun", "apptainer", "exec", "--nv", "-B", "/a:/b", "./vllm.sif",
                        "vllm", "serve", "m"])
    assert (sif.image, sif.wrapper, sif.runnable) == ("./vllm.sif", "apptainer exec", False)
    docker = container_of(["singularity", "run", "--bind=/data,/m:/models", "--env", "A=1",
                           "docker://vllm/vllm-openai:v0.9.1", "m"])
    assert (docker.image, docker.runnable) == ("vllm/vllm-openai:v0.9.1", True)
    assert docker.args == ("-v", "/data:/data", "-v", "/m:/models", "-e", "A=1")
    assert pyxis.args == ()
    shifter = container_of(["shifter", "--image=vllm/vllm-openai:v0.8.3", "--module=gpu",
                            "vllm", "serve", "m"])
    assert shifter.image == "vllm/vllm-openai:v0.8.3"
    assert container_of(["vllm", "serve", "--container-image=x"]) is None  # not a launcher's


def test_pyxis_job_reproduced_native_multinode(tmp_path: Path) -> None:
    script = tmp_path / "job.sbatch"
    script.write_text(PYXIS)
    result = run([script], tmp_path, gb10_lab(tmp_path, 8))
    dep = load_deployment(Path(result.out_dir) / "deployment.yaml")
    assert (dep.model.path, dep.parallelism.tp, dep.parallelism.pp) == ("/data/Qwen3-8B", 4, 2)
    assert dep.engine.image == "nvcr.io/nvidia/vllm:25.09-py3"
    assert dep.engine.container_args == ["-v", "/data:/data"]  # --container-mounts
    assert dep.engine.backend == "mp" and len(dep.nodes) == 8
    ranks = [proc.argv[proc.argv.index("--node-rank") + 1] for stage in planned(result).stages
             for _, proc in stage.processes if "--node-rank" in proc.argv]
    assert ranks == [str(i) for i in range(8)]
    assert "#SBATCH -> SLURM_NNODES=2 (set by SLURM in every task)" in result.mapped


def test_job_too_large_is_refused_naming_the_job_and_the_script_line(tmp_path: Path) -> None:
    (tmp_path / "job.sbatch").write_text(
        "#!/bin/bash\n#SBATCH -N 4\n#SBATCH --gpus-per-node=4\n"
        "srun -N1 -w $(hostname) apptainer exec --nv ./v.sif ./head.sh $SLURM_NNODES &\n")
    (tmp_path / "head.sh").write_text("#!/bin/bash\nPP=$1\nray start --head\n"
                                      "vllm serve m/x -tp 4 -pp $PP\n")
    with pytest.raises(InputError) as caught:
        run([tmp_path / "job.sbatch", tmp_path / "head.sh"], tmp_path, gb10_lab(tmp_path, 8))
    assert caught.value.one_line() == (
        "head.sh:4: a SLURM job running tp 4 x pp 4 = 16 GPUs (#SBATCH 4 node(s) x 4 GPU(s) from "
        "--gpus-per-node=4); "
        "the lab has 8 GB10 nodes (one GPU each): it needs 16")


@pytest.mark.parametrize(("header", "per_node", "asked"), [
    ("#SBATCH --gres=gpu:4", 4, "--gres=gpu:4"),
    ("#SBATCH --gres=gpu:h100:8", 8, "--gres=gpu:h100:8"),
    ("#SBATCH --gres=gpu", 1, "--gres=gpu"),  # sbatch's default count is one
    ("#SBATCH --gres=gpu:a100", 1, "--gres=gpu:a100"),  # a type and no count: one
    ("#SBATCH --gres=shard:2,gpu:2(S:0-1)", 2, "--gres=shard:2,gpu:2(S:0-1)"),
    ("#SBATCH --gpus-per-node=a100:4", 4, "--gpus-per-node=a100:4"),
    ("#SBATCH --gpus=8", 4, "--gpus=8 over 2 node(s)"),  # the whole job's, over its nodes
    ("#SBATCH -G 3", 2, "-G 3 over 2 node(s)"),  # some node gets the rounded-up share
    ("#SBATCH --ntasks-per-node=4\n#SBATCH --gpus-per-task=2", 8,
     "--gpus-per-task=2 x 4 task(s) per node"),
    ("#SBATCH --ntasks=8\n#SBATCH --gpus-per-task=1", 4, "--gpus-per-task=1"),
    ("#SBATCH --gpus-per-task=2", 2, "--gpus-per-task=2"),  # one task per node
    ("#SBATCH --sockets-per-node=2\n#SBATCH --gpus-per-socket=2", 4,
     "--gpus-per-socket=2 x 2 socket(s) per node"),
    ("#SBATCH --gres=tmpfs:10G", None, None),
])
def test_gpus_per_node_by_slurms_meaning_of_each_option(header: str, per_node: int | None,
                                                        asked: str | None) -> None:
    job = batch(f"#!/bin/bash\n#SBATCH -N 2\n{header}\nsrun true\n")
    assert (job.nodes, job.gpus_per_node, job.asked) == (2, per_node, asked)


def test_an_srun_lines_own_gpu_options() -> None:
    assert step(["srun", "-N1", "-n", "1", "--gres", "gpu:4", "--container-image", "img",
                 "vllm", "serve", "m", "--gpus=9"]) == \
        Batch(1, 4, None, "srun --gres=gpu:4")  # the program's own options are not srun's
    assert step(["srun", "-N", "2", "-G8", "./start.sh"]) == Batch(2, 4, None,
                                                                   "srun -G 8 over 2 node(s)")
    assert step(["srun", "--label", "vllm", "serve", "m"]) == Batch()
    # without -N the step runs on every node of the job: -G is shared over the job's nodes
    assert step(["srun", "-G", "8", "vllm", "serve", "m"], nodes=2) == \
        Batch(None, 4, None, "srun -G 8 over 2 node(s) (the job's)")
    assert step(["vllm", "serve", "m", "--gres=gpu:4"]) is None


JOB = """\
#!/bin/bash
#SBATCH -N 1
#SBATCH {ask}
srun {srun}apptainer exec --nv docker://vllm/vllm-openai:v0.32.0 vllm serve /models/m \\
  --tensor-parallel-size 4
"""


@pytest.mark.parametrize(("ask", "srun", "option"), [
    ("--gres=gpu:4", "", "#SBATCH --gres=gpu:4"),
    ("--gpus-per-task=4", "", "#SBATCH --gpus-per-task=4"),
    ("--gpus=1", "--gpus-per-node=4 ", "srun --gpus-per-node=4"),  # the step's own wins
])
def test_more_gpus_per_node_than_a_lab_node_has_is_a_row_and_the_trap(
        tmp_path: Path, ask: str, srun: str, option: str) -> None:
    job = tmp_path / "job.sbatch"
    job.write_text(JOB.format(ask=ask, srun=srun))
    result = run([job], tmp_path, gb10_lab(tmp_path, 4))
    rows = [u for u in result.unknown if u.text == option]
    assert [r.note for r in rows] == [
        "a SLURM job asks 4 GPUs per node; spark-01 has 1 GPU, spark-02 has 1 GPU, spark-03 "
        "has 1 GPU, spark-04 has 1 GPU: the plan places one rank per lab GPU instead"]
    trap = next(t for t in result.traps if t.id == "device-index-not-on-node")
    assert trap.status == "fires"
    assert trap.setting == "; ".join(f"spark-0{i}: a SLURM job asks 4 GPUs per node "
                                     f"({option}; 1 GPU there)" for i in range(1, 5))
    # tp 4 placed one rank per GB10 node
    assert any(s.startswith("ranks onto nodes: tp 4 x pp 1 x dp 1 = 4 ranks at 1 GPU(s) per "
                            "node (the lab's nodes): 4 node(s)") for s in result.plan.statements)


def test_a_job_asking_one_gpu_per_node_fits_a_gb10_node(tmp_path: Path) -> None:
    job = tmp_path / "job.sbatch"
    job.write_text(JOB.format(ask="--gres=gpu:1", srun="").replace("4\n", "1\n"))
    result = run([job], tmp_path, gb10_lab(tmp_path, 1))
    assert not [u for u in result.unknown if "GPUs per node" in u.note]
    trap = next((t for t in result.traps if t.id == "device-index-not-on-node"), None)
    assert trap is None or trap.status != "fires"


def test_the_refusal_names_the_option_an_srun_line_asks_with(tmp_path: Path) -> None:
    job = tmp_path / "job.sbatch"
    job.write_text("#!/bin/bash\n#SBATCH -N 2\n"
                   "srun --ntasks-per-node=1 --gpus-per-task=8 vllm serve /m -tp 8 -pp 2\n")
    with pytest.raises(InputError) as caught:
        run([job], tmp_path, gb10_lab(tmp_path, 8))
    assert caught.value.one_line() == (
        f"{job}:3: a SLURM job running tp 8 x pp 2 = 16 GPUs (#SBATCH 2 node(s) x 8 GPU(s) "
        "from srun --gpus-per-task=8 x 1 task(s) per node); the lab has 8 GB10 nodes (one GPU "
        "each): it needs 16")


def test_an_srun_line_without_n_shares_its_gpus_over_the_jobs_nodes(tmp_path: Path) -> None:
    job = tmp_path / "job.sbatch"
    job.write_text("#!/bin/bash\n#SBATCH -N 2\n"
                   "srun -G 8 vllm serve /m -tp 4 --nnodes 2 --node-rank $SLURM_NODEID\n")
    result = run([job], tmp_path, gb10_lab(tmp_path, 8))
    assert any(m.endswith("srun -G 8 over 2 node(s) (the job's) -> 4 GPU(s) per node")
               for m in result.mapped)
    assert [u.text for u in result.unknown if "GPUs per node" in u.note] == [
        "srun -G 8 over 2 node(s) (the job's)"]


def test_gpus_per_socket_without_sockets_per_node_is_a_row(tmp_path: Path) -> None:
    text = "#!/bin/bash\n#SBATCH -N 1\n#SBATCH --gpus-per-socket=2\nsrun vllm serve /m\n"
    job = batch(text)
    assert job.gpus_per_node is None
    assert job.unknown is not None and "--sockets-per-node" in job.unknown
    path = tmp_path / "job.sbatch"
    path.write_text(text)
    result = run([path], tmp_path, gb10_lab(tmp_path, 1))
    rows = [u for u in result.unknown if u.text == "--gpus-per-socket=2"]
    assert [r.note for r in rows] == [
        "#SBATCH --gpus-per-socket=2: GPUs per node are that times the sockets per node, which "
        "the job does not say (--sockets-per-node); the GPUs each node asks for are not known"]
