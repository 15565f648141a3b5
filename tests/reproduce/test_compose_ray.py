"""Issue 35: a Ray head and Ray workers, across services of one compose file or across files
given together, are one multi-node deployment with the Ray backend, placed one rank per GB10."""

from __future__ import annotations

from pathlib import Path

from reproduce_helpers import gb10_lab, planned, ranks_per_node, run

HEAD = """\
x-node: &node
  image: nvcr.io/nvidia/vllm:25.12-py3
  runtime: nvidia
  network_mode: host
  ipc: host
  environment:
    NCCL_SOCKET_IFNAME: enp1s0f1np1
    VLLM_HOST_IP: ${HOST_IP:-192.0.2.1}
services:
  head:
    <<: *node
    entrypoint: ["/bin/bash", "-c"]
    command:
      - >-
        ray start --head --port=6379 --object-store-memory=2000000000 --num-gpus=1 &&
        vllm serve Qwen/Qwen3.5-397B-A17B-FP8 --tensor-parallel-size 4
        --distributed-executor-backend ray --max-num-seqs 8
"""
WORKERS = """\
services:
  worker:
    image: nvcr.io/nvidia/vllm:25.12-py3
    runtime: nvidia
    network_mode: host
    command: bash -c "ray start --address=192.0.2.1:6379 --block"
    deploy:
      replicas: 3
"""


def _check_four_node_ray(r, tmp_path: Path) -> None:
    d = r.deployment
    assert d["engine"]["backend"] == "ray" and d["parallelism"]["tp"] == 4
    assert d["parallelism"]["nodes"] == 4 and len(d["nodes"]) == 4
    assert d["engine"]["ray_port"] == 6379 and d["engine"]["ray_object_store_mb"] == 2000
    assert d["engine"]["ray_args"] == ["--num-gpus", "1"]
    assert [n.headless for n in r.client_nodes] == [False, True, True, True]
    plan = planned(r)
    assert plan.backend == "ray"
    assert ranks_per_node(plan) == {name: 1 for name in d["nodes"]}
    serve = [p for s in plan.stages for _, p in s.processes if p.name == "server"]
    assert len(serve) == 1 and "--distributed-executor-backend" in serve[0].argv
    # the multi-node traps ran: the client's one shared VLLM_HOST_IP default is flagged
    assert any(t.id == "host-ip-shared" for t in r.traps)


def test_head_and_workers_in_one_file(tmp_path: Path) -> None:
    (tmp_path / "compose.yaml").write_text(HEAD + WORKERS.replace("services:\n", ""))
    r = run([tmp_path / "compose.yaml"], tmp_path, gb10_lab(tmp_path, 4))
    _check_four_node_ray(r, tmp_path)
    assert "services.worker.deploy.replicas 3 -> 3 node(s)" in r.mapped


def test_head_and_worker_files_given_together_in_any_order(tmp_path: Path) -> None:
    (tmp_path / "head.yaml").write_text(HEAD)
    (tmp_path / "workers.yaml").write_text(WORKERS)
    lab = gb10_lab(tmp_path, 4)
    r = run([tmp_path / "workers.yaml", tmp_path / "head.yaml"], tmp_path, lab)
    _check_four_node_ray(r, tmp_path)
    r = run([tmp_path / "head.yaml", tmp_path / "workers.yaml"], tmp_path, lab, out="o2")
    _check_four_node_ray(r, tmp_path)


def test_a_ray_head_with_block_and_the_serve_line_given_beside(tmp_path: Path) -> None:
    """`ray start --head --block` in compose and the serve command the client runs by hand:
    the serve runs on the Ray head's node (one node, not two)."""
    (tmp_path / "compose.yaml").write_text(
        "services:\n  head:\n    image: vllm/vllm-openai:v0.32.0\n"
        "    command: bash -c 'ray start --head --block'\n    environment: {A: '1'}\n"
        "  worker:\n    image: vllm/vllm-openai:v0.32.0\n"
        "    command: bash -c 'ray start --address=h:6379 --block'\n")
    (tmp_path / "serve.sh").write_text("vllm serve /models/m --tensor-parallel-size 2\n")
    r = run([tmp_path / "compose.yaml", tmp_path / "serve.sh"], tmp_path, gb10_lab(tmp_path, 2))
    d = r.deployment
    assert d["engine"]["backend"] == "ray" and d["parallelism"]["nodes"] == 2
    assert [n.name for n in r.client_nodes] == ["node0", "node1"]
    assert ranks_per_node(planned(r)) == {"spark-01": 1, "spark-02": 1}


def test_ray_head_and_server_services_on_one_node_and_a_worker_file(tmp_path: Path) -> None:
    """A head compose with a `ray start --head --block` service and a separate vllm-server
    service (RAY_ADDRESS, the Ray executor), and a worker compose beside it: the server runs
    on the head's node (two nodes in all), with the head service's volumes and shared memory;
    relative host paths are resolved against the compose file's folder."""
    head, worker = tmp_path / "node1", tmp_path / "node2"
    head.mkdir()
    worker.mkdir()
    (head / "docker-compose.yml").write_text("""\
services:
  ray-head:
    image: vllm/vllm-openai:latest
    network_mode: host
    shm_size: 10.24gb
    entrypoint: ["/bin/bash", "-c"]
    command: ["ray start --head --port=6379 --dashboard-host=0.0.0.0 --block"]
    volumes: ["${MODEL_CACHE_DIR:-./models}:/root/.cache/huggingface"]
  vllm-server:
    image: vllm/vllm-openai:latest
    network_mode: host
    depends_on: [ray-head]
    entrypoint: ["/bin/bash", "-c"]
    command:
      - |
        sleep ${VLLM_STARTUP_DELAY:-60}
        vllm serve ${MODEL_NAME:-meta-llama/Llama-3.1-70B-Instruct} \\
          --pipeline-parallel-size ${PIPELINE_PARALLEL_SIZE:-2} \\
          --distributed-executor-backend ray
    environment: [RAY_ADDRESS=127.0.0.1:6379]
""")
    (worker / "docker-compose.yml").write_text(
        "services:\n  ray-worker:\n    image: vllm/vllm-openai:latest\n"
        "    entrypoint: [\"/bin/bash\", \"-c\"]\n"
        "    command: [\"ray start --address=${RAY_HEAD_IP:-10.0.0.1}:6379 --block\"]\n")
    r = run([head / "docker-compose.yml", worker / "docker-compose.yml"], tmp_path,
            gb10_lab(tmp_path, 2))
    d = r.deployment
    assert d["model"]["path"] == "meta-llama/Llama-3.1-70B-Instruct"
    assert d["parallelism"]["pp"] == 2 and d["parallelism"]["nodes"] == 2
    assert d["engine"]["backend"] == "ray"
    # the server service replaced the image's `vllm serve` entrypoint with bash: the plan runs
    # `--entrypoint vllm IMAGE serve ...`, not `IMAGE vllm serve ...` under that entrypoint
    assert d["engine"]["container_args"] == [
        "--entrypoint", "vllm", "--shm-size", "10.24gb", "-v",
        f"{head}/models:/root/.cache/huggingface"]
    assert d["engine"]["vllm"] == []
    assert [n.headless for n in r.client_nodes] == [False, True]
    assert ranks_per_node(planned(r)) == {"spark-01": 1, "spark-02": 1}
    assert any("`sleep 60` in the container's script" in n for n in r.notes)
