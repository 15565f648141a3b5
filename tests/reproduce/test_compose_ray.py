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
