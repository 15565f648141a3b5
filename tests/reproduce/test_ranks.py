"""Issue 35: tensor x pipeline x data-parallel ranks onto the lab's GPUs per node."""

from __future__ import annotations

from pathlib import Path

import pytest
import yaml

from sparktriage.config.lab import LabNode
from sparktriage.errors import InputError

from reproduce_helpers import cli, gb10_lab, planned, ranks_per_node, run


def test_gpus_per_node_from_the_lab() -> None:
    assert LabNode(name="a", gpu="gb10").gpu_count() == 1
    assert LabNode(name="a", gpu="DGX Spark").gpu_count() == 1
    assert LabNode(name="a", gpu="h100", gpus=8).gpu_count() == 8
    assert LabNode(name="a", gpu="none").gpu_count() == 0
    assert LabNode(name="a", gpu="h200").gpu_count() is None


def test_tp8_from_one_serve_line_is_eight_gb10_nodes_with_ray(tmp_path: Path) -> None:
    """Kimi K2 on eight Sparks: one `vllm serve` line, no executor flag, no --nnodes."""
    (tmp_path / "kimi.sh").write_text("vllm serve moonshotai/Kimi-K2-Instruct "
                                      "--tensor-parallel-size 8 --trust-remote-code\n")
    r = run([tmp_path / "kimi.sh"], tmp_path, gb10_lab(tmp_path, 8))
    d = r.deployment
    assert d["parallelism"]["nodes"] == 8 and len(d["nodes"]) == 8
    assert d["engine"]["backend"] == "ray"
    assert [n.assumed for n in r.client_nodes] == [False] + [True] * 7
    assert r.plan.statements[0] == (
        "ranks onto nodes: tp 8 x pp 1 x dp 1 = 8 ranks at 1 GPU(s) per node (the lab's "
        "nodes): 8 node(s), one rank per GPU; backend ray (vLLM picks Ray when the ranks exceed "
        "one node's GPUs and no --nnodes is given)")
    plan = planned(r)
    assert ranks_per_node(plan) == {f"spark-{i:02d}": 1 for i in range(1, 9)}
    assert any(t.id == "multinode-no-host-ip" for t in r.traps)  # the multi-node traps ran


def test_native_multi_node_keeps_mp_with_a_node_rank_per_node(tmp_path: Path) -> None:
    (tmp_path / "a.sh").write_text("vllm serve /m -tp 2 -pp 2 --nnodes 4 --node-rank 0 "
                                   "--master-addr 192.0.2.11\n")
    r = run([tmp_path / "a.sh"], tmp_path, gb10_lab(tmp_path, 4))
    assert r.deployment["engine"]["backend"] == "mp"
    plan = planned(r)
    assert ranks_per_node(plan) == {f"spark-{i:02d}": 1 for i in range(1, 5)}
    ranks = [p.argv[p.argv.index("--node-rank") + 1] for s in plan.stages
             for _, p in s.processes if p.name == "server"]
    assert ranks == ["0", "1", "2", "3"]


def test_a_lab_with_fewer_nodes_is_refused_on_one_line(tmp_path: Path) -> None:
    (tmp_path / "k.sh").write_text("vllm serve /m --tensor-parallel-size 8 -dp 1\n")
    lab = gb10_lab(tmp_path, 4)
    with pytest.raises(InputError, match=r"^the deployment needs 8 nodes \(tp 8 x pp 1 x dp 1 = "
                       r"8 ranks at 1 GPU\(s\) per node, the lab's nodes\); the lab has 4$"):
        run([tmp_path / "k.sh"], tmp_path, lab)
    done = cli("reproduce", str(tmp_path / "k.sh"), "--lab", str(lab), "--no-capture",
               "--out", str(tmp_path / "o"))
    assert done.returncode == 2
    assert [x for x in done.stderr.splitlines() if x.strip()] == [
        "error: the deployment needs 8 nodes (tp 8 x pp 1 x dp 1 = 8 ranks at 1 GPU(s) per node, "
        "the lab's nodes); the lab has 4"]


def test_nodes_with_eight_gpus_hold_tp8_on_one(tmp_path: Path) -> None:
    lab = tmp_path / "lab.yaml"
    lab.write_text(yaml.safe_dump({"schema_version": 1, "nodes": [
        {"name": "h1", "host": "192.0.2.1", "gpu": "h100", "gpus": 8},
        {"name": "h2", "host": "192.0.2.2", "gpu": "h100", "gpus": 8}]}))
    (tmp_path / "k.sh").write_text("vllm serve /m --tensor-parallel-size 8\n")
    r = run([tmp_path / "k.sh"], tmp_path, lab)
    assert r.deployment["nodes"] == ["h1"] and r.deployment["engine"]["backend"] == "mp"
    assert not any(s.startswith("ranks onto nodes") for s in r.plan.statements)


def test_no_lab_and_a_gb10_client_says_what_it_needs(tmp_path: Path) -> None:
    """Without --lab the plan is this one machine: the GB10 client's ranks still make two
    nodes, and the statement says to give a lab with two."""
    (tmp_path / "k.sh").write_text("vllm serve /m --tensor-parallel-size 2\n")
    gb10 = Path(__file__).parent / "inputs" / "gb10.collect-env.txt"
    r = run([tmp_path / "k.sh", gb10], tmp_path)
    assert r.deployment["nodes"] == ["local"] and len(r.client_nodes) == 2
    assert "this machine is one node; give --lab with 2 nodes to launch it as the client " \
        "does" in r.plan.statements
    r = run([tmp_path / "k.sh"], tmp_path, out="o2")  # no GPU known on either side
    assert len(r.client_nodes) == 1
    assert not any(s.startswith("ranks onto nodes") for s in r.plan.statements)


def test_data_parallel_alone_stays_native(tmp_path: Path) -> None:
    """dp 2 x tp 1 on one-GPU nodes: two nodes, but vLLM's executor is not Ray for it."""
    (tmp_path / "d.sh").write_text("vllm serve /m --data-parallel-size 2\n")
    r = run([tmp_path / "d.sh"], tmp_path, gb10_lab(tmp_path, 2))
    assert r.deployment["engine"]["backend"] == "mp" and len(r.deployment["nodes"]) == 2
    assert "data-parallel ranks on their own nodes" in r.plan.statements[0]
