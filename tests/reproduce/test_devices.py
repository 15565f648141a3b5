"""GPU device lists (CUDA_VISIBLE_DEVICES, NVIDIA_VISIBLE_DEVICES, docker --gpus, compose GPU
reservations) mapped onto each one-GPU GB10 lab node: never copied, a row and the
device-index-not-on-node trap when the client pins GPUs a node does not have."""

from __future__ import annotations

from pathlib import Path

from reproduce_helpers import gb10_lab, run

TRAP = "device-index-not-on-node"


def _script(tmp: Path, text: str, name: str = "serve.sh") -> Path:
    path = tmp / name
    path.write_text("#!/bin/bash\n" + text + "\n")
    return path


def _env(result, name: str) -> dict[str, str | None]:
    return {n.lab: n.env.get(name) for n in result.plan.nodes}


def _trap(result):
    return next((t for t in result.traps if t.id == TRAP), None)


def _diff(result, key: str) -> list[tuple]:
    return [(d.client, d.lab) for d in result.diff if d.key == key]


def test_four_pinned_indices_on_two_gb10_nodes(tmp_path: Path) -> None:
    src = _script(tmp_path, "export CUDA_VISIBLE_DEVICES=4,5,6,7\n"
                            "vllm serve /models/m -tp 2 --nnodes 2 --node-rank 0")
    result = run([src], tmp_path, gb10_lab(tmp_path, 2))
    assert _env(result, "CUDA_VISIBLE_DEVICES") == {"spark-01": "0", "spark-02": "0"}
    rows = [u for u in result.unknown if u.text == "CUDA_VISIBLE_DEVICES=4,5,6,7"]
    assert len(rows) == 1
    assert "pins GPU(s) 4,5,6,7; spark-01 has 1 GPU (index 0): the plan gives it " \
           "CUDA_VISIBLE_DEVICES=0 there" in rows[0].note
    trap = _trap(result)
    assert trap is not None and trap.status == "fires"
    assert trap.setting == ("spark-01: CUDA_VISIBLE_DEVICES=4,5,6,7 (1 GPU there); "
                            "spark-02: CUDA_VISIBLE_DEVICES=4,5,6,7 (1 GPU there)")
    assert _diff(result, "env.CUDA_VISIBLE_DEVICES") == [("4,5,6,7", "0"), ("4,5,6,7", "0")]
    assert any("CUDA_VISIBLE_DEVICES (node0 -> spark-01: 4,5,6,7 -> 0, spark-01 has 1 GPU)"
               in s for s in result.plan.statements)


def test_a_single_index_the_node_lacks_and_one_it_has(tmp_path: Path) -> None:
    lab = gb10_lab(tmp_path, 1)
    result = run([_script(tmp_path, "CUDA_VISIBLE_DEVICES=7 vllm serve /models/m")], tmp_path,
                 lab)
    assert _env(result, "CUDA_VISIBLE_DEVICES") == {"spark-01": "0"}
    assert _trap(result).status == "fires"
    result = run([_script(tmp_path, "CUDA_VISIBLE_DEVICES=0 vllm serve /models/m", "b.sh")],
                 tmp_path, lab, out="b")
    assert _env(result, "CUDA_VISIBLE_DEVICES") == {"spark-01": "0"}
    assert _trap(result) is None
    assert [u.text for u in result.unknown if "VISIBLE" in u.text] == []


def test_all_is_kept_and_uuid_lists_are_mapped_by_count(tmp_path: Path) -> None:
    lab = gb10_lab(tmp_path, 1)
    result = run([_script(tmp_path, "export NVIDIA_VISIBLE_DEVICES=all\n"
                                    "export CUDA_VISIBLE_DEVICES=GPU-1a2b\n"
                                    "vllm serve /models/m")], tmp_path, lab)
    assert result.deployment["env"].get("NVIDIA_VISIBLE_DEVICES") == "all"
    assert _env(result, "CUDA_VISIBLE_DEVICES") == {"spark-01": "0"}
    assert _trap(result) is None  # one UUID: one GPU, which the node has


def test_docker_gpus_device_list_and_count(tmp_path: Path) -> None:
    lab = gb10_lab(tmp_path, 1)
    src = _script(tmp_path, "docker run --gpus '\"device=4,5\"' vllm/vllm-openai:v0.32.0 "
                            "/models/m")
    result = run([src], tmp_path, lab)
    assert _env(result, "NVIDIA_VISIBLE_DEVICES") == {"spark-01": "0"}
    argv = result.plan.nodes[0].argv
    assert argv.count("--gpus") == 1 and argv[argv.index("--gpus") + 1] == "all"
    assert not any("device=" in a for a in argv)
    assert _trap(result).setting == "spark-01: NVIDIA_VISIBLE_DEVICES=4,5 (1 GPU there)"
    assert _diff(result, "env.NVIDIA_VISIBLE_DEVICES") == [("4,5", "0")]
    result = run([_script(tmp_path, "docker run --gpus 2 vllm/vllm-openai:v0.32.0 /models/m",
                          "c.sh")], tmp_path, lab, out="c")
    assert _trap(result).setting == "spark-01: NVIDIA_VISIBLE_DEVICES=0,1 (1 GPU there)"


def test_compose_device_ids(tmp_path: Path) -> None:
    compose = tmp_path / "compose.yaml"
    compose.write_text("""services:
  vllm:
    image: vllm/vllm-openai:v0.32.0
    command: ["/models/m"]
    deploy:
      resources:
        reservations:
          devices:
            - driver: nvidia
              device_ids: ["6", "7"]
              capabilities: [gpu]
""")
    result = run([compose], tmp_path, gb10_lab(tmp_path, 1))
    assert _env(result, "NVIDIA_VISIBLE_DEVICES") == {"spark-01": "0"}
    assert [u.text for u in result.unknown if "VISIBLE" in u.text] == \
        ["NVIDIA_VISIBLE_DEVICES=6,7"]
    assert _trap(result).status == "fires"


def test_the_lab_yaml_node_env_wins(tmp_path: Path) -> None:
    lab = gb10_lab(tmp_path, 1, env={"CUDA_VISIBLE_DEVICES": "0"})
    result = run([_script(tmp_path, "CUDA_VISIBLE_DEVICES=3 vllm serve /models/m")], tmp_path,
                 lab)
    assert _env(result, "CUDA_VISIBLE_DEVICES") == {"spark-01": "0"}
    assert any("the lab YAML's 0" in s for s in result.plan.statements)
