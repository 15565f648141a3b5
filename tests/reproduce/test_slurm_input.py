"""SLURM batch scripts as reproduce inputs (importers/slurm.py, job_wrappers.py): `#SBATCH`
nodes and GPUs as the values SLURM sets, `srun` and its container wrappers read like `docker
run`, scripts an `srun` line runs read with their arguments, refusals naming the job."""

from __future__ import annotations

from pathlib import Path

import pytest
from reproduce_helpers import gb10_lab, planned, run

from sparktriage.config.deployment import load_deployment
from sparktriage.errors import InputError
from sparktriage.reproduce.detect import detect
from sparktriage.reproduce.importers.job_wrappers import container_of
from sparktriage.reproduce.importers.slurm import Batch, batch

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
    assert batch(PYXIS) == Batch(nodes=2, gpus_per_node=4, tasks_per_node=1)
    text = "#!/bin/bash\n#SBATCH --nodes 3-5\n#SBATCH --gres=gpu:a100:8 # eight\n" \
           "#SBTACH --nodes=9\necho hi\n#SBATCH --nodes=7\n"
    assert batch(text) == Batch(nodes=3, gpus_per_node=8)  # typo and late lines ignored
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
        "head.sh:4: a SLURM job running tp 4 x pp 4 = 16 GPUs (#SBATCH 4 node(s) x 4 GPU(s)); "
        "the lab has 8 GB10 nodes (one GPU each): it needs 16")
