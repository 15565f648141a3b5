"""Importer details: short forms, dotted JSON flags, api_server form, per-node files, node map."""

from __future__ import annotations

import subprocess
import sys
from pathlib import Path

import pytest
import yaml

from sparktriage.errors import InputError, UsageError
from sparktriage.reproduce import reproduce
from sparktriage.reproduce.read.detect import detect
from sparktriage.reproduce.check.traps import load_why

ROOT = Path(__file__).resolve().parents[2]


def _one(tmp_path: Path, text: str, **kw):
    src = tmp_path / "in.txt"
    src.write_text(text)
    return reproduce([src], kw.pop("lab", None), kw.pop("node_map", {}), tmp_path / "out",
                     capture_live=False, **kw)


def test_short_forms_and_dotted(tmp_path: Path) -> None:
    r = _one(tmp_path, "python3 -m vllm.entrypoints.openai.api_server --model /m -tp 4 -pp 2 "
                       "-dp 1 --speculative-config.method mtp "
                       "--speculative-config.num_speculative_tokens 2 -O3 --max_num_seqs=4 "
                       "--no-enable-prefix-caching\n")
    d = r.deployment
    assert d["parallelism"]["tp"] == 4 and d["parallelism"]["pp"] == 2
    assert d["speculative"]["method"] == "mtp" and d["speculative"]["num_speculative_tokens"] == 2
    assert d["serve"]["flags"]["compilation-config"] == '{"level":3}'
    assert d["serve"]["flags"]["no-enable-prefix-caching"] is True
    assert d["serve"]["max_num_seqs"] == 4
    assert d["engine"]["vllm"] == ["python3", "-m", "vllm.entrypoints.cli.main"]


def test_per_node_files_and_node_map(tmp_path: Path) -> None:
    base = "vllm serve /m -tp 2 --nnodes 2 --master-addr 10.0.0.1"
    (tmp_path / "a.sh").write_text(f"export VLLM_HOST_IP=10.0.0.1\nexport NCCL_SOCKET_IFNAME="
                                   f"enP2p1s0f1np1\nexport OMP_NUM_THREADS=4\n{base} --node-rank 0\n")
    (tmp_path / "b.sh").write_text(f"export VLLM_HOST_IP=10.0.0.2\n{base} --node-rank 1 --headless\n")
    lab = tmp_path / "lab.yaml"
    lab.write_text(yaml.safe_dump({"schema_version": 1, "nodes": [
        {"name": "s1", "host": "127.0.0.1", "gpu": "gb10"},
        {"name": "s2", "host": "127.0.0.2", "gpu": "gb10", "interfaces": ["enp1s0f0np0"]}]}))
    r = reproduce([tmp_path / "b.sh", tmp_path / "a.sh"], lab, {"node0": "s2", "node1": "s1"},
                  tmp_path / "out", capture_live=False)
    d = r.deployment
    assert d["nodes"] == ["s2", "s1"]
    # addresses and interface names of the client's network do not travel to the lab: each
    # becomes the lab node's (its host, its listed interface), or is left out with a row
    assert d["node_env"] == {"s2": {"OMP_NUM_THREADS": "4", "VLLM_HOST_IP": "127.0.0.2",
                                    "NCCL_SOCKET_IFNAME": "enp1s0f0np0"},
                             "s1": {"VLLM_HOST_IP": "127.0.0.1"}}
    assert any(s.startswith("the client's own addresses and interfaces") and
               "VLLM_HOST_IP (node0 -> s2: 10.0.0.1 -> 127.0.0.2, s2's host)" in s
               for s in r.plan.statements)
    trap = next(t for t in r.traps if t.id == "ifname-not-on-node")
    assert "s2: NCCL_SOCKET_IFNAME=enP2p1s0f1np1 (client value)" in trap.setting
    assert [(n.client, n.lab) for n in r.plan.nodes] == [("node0", "s2"), ("node1", "s1")]
    assert r.plan.nodes[1].argv[-2:] == ["1", "--headless"]
    assert r.plan.nodes[0].env["VLLM_HOST_IP"] == "127.0.0.2"
    assert r.plan.nodes[1].env["VLLM_HOST_IP"] == "127.0.0.1"
    done = subprocess.run([sys.executable, "-m", "sparktriage", "launch",
                           str(tmp_path / "out" / "deployment.yaml"), "--dry-run"],
                          capture_output=True, text=True, timeout=60)
    assert done.returncode == 0, done.stderr
    assert "--node-rank" in done.stdout
    with pytest.raises(UsageError):
        reproduce([tmp_path / "a.sh"], lab, {"node7": "s1"}, tmp_path / "o2", capture_live=False)


def test_detect_by_content() -> None:
    assert detect("services:\n  a:\n    image: x\n") == "compose"
    assert detect("podman run img vllm serve /m\n") == "docker"
    assert detect("A=1\nB=2\n") == "env"
    with pytest.raises(InputError):
        detect("just words\n")


def test_variables_kept_and_flagged(tmp_path: Path) -> None:
    # an unset variable with no default is a placeholder to supply, with its line (issue 35)
    r = _one(tmp_path, "vllm serve $MODEL_DIR --port 8000\n")
    assert r.deployment["model"]["path"] == "<supply:MODEL_DIR>"
    assert any(u.text == "<supply:MODEL_DIR>" and u.note.startswith("line 1: $MODEL_DIR is not "
                                                                     "set") for u in r.unknown)


def test_why_table_in_docs() -> None:
    docs = (ROOT / "docs" / "reproduce.md").read_text()
    for row in load_why().rows:
        assert f"| `{row.key}` | {row.severity} | {row.why} | {row.source} |" in docs
