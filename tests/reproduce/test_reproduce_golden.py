"""Golden tests per importer: each pins the whole reproduce.json (regenerate: REPRODUCE_GOLDEN=1)."""

from __future__ import annotations

import json
import os
from pathlib import Path

import pytest

from sparktriage.reproduce import reproduce

HERE = Path(__file__).parent
INPUTS = HERE / "inputs"
GOLDEN = HERE / "golden"
ROOT = HERE.parent.parent

CASES = {
    "multinode-serve": (["multinode.sh"], None),
    "docker-secrets": (["docker.sh"], None),
    "compose-list-and-map": (["compose.yaml"], None),
    "collect-env-gb10-vs-here": (["multinode.sh", "gb10.collect-env.txt"],
                                 "this-machine.collect-env.txt"),
    "env-dump": (["docker.sh", "client.env"], None),
}


def _run(case: str, tmp_path: Path) -> dict:
    names, capture = CASES[case]
    result = reproduce([INPUTS / n for n in names], None, {}, tmp_path / "out",
                       lab_capture=INPUTS / capture if capture else None, capture_live=False)
    text = (tmp_path / "out" / "reproduce.json").read_text()
    assert json.loads(text) == result.to_json()
    return json.loads(text.replace(str(ROOT) + "/", ""))


@pytest.mark.parametrize("case", sorted(CASES))
def test_golden(case: str, tmp_path: Path) -> None:
    doc = _run(case, tmp_path)
    path = GOLDEN / f"{case}.json"
    if os.environ.get("REPRODUCE_GOLDEN"):
        GOLDEN.mkdir(exist_ok=True)
        path.write_text(json.dumps(doc, indent=2) + "\n")
    assert doc == json.loads(path.read_text())


def test_multinode_values(tmp_path: Path) -> None:
    doc = _run("multinode-serve", tmp_path)
    dep = doc["deployment"]
    assert dep["parallelism"] == {"tp": 2, "pp": 1, "dp": 1, "ep": True, "nodes": 1}
    assert dep["serve"]["max_model_len"] == 65536
    assert dep["speculative"]["method"] == "eagle3"
    assert dep["serve"]["flags"]["compilation-config"] == '{"cudagraph_mode":"FULL_DECODE_ONLY"}'
    assert dep["env"]["HF_TOKEN"] == "<supply:HF_TOKEN>"
    assert dep["env"]["NCCL_DEBUG"] == "WARN"  # env prefix of the serve command
    # the made-up option, and a variable of an older release vLLM 0.32 does not read (#35)
    # and the client's interface names, which this one-node lab (no interfaces listed) lacks
    assert [u["text"] for u in doc["unknown"]] == [
        "--frobnicate-kv 3", "GLOO_SOCKET_IFNAME=enp1s0f0np0", "NCCL_SOCKET_IFNAME=enp1s0f0np0",
        "VLLM_USE_FLASHINFER_MOE_FP4"]
    assert dep["node_env"] == {"local": {"VLLM_HOST_IP": "127.0.0.1"}}  # the lab node's host
    assert dep["serve"]["extra_args"] == ["--frobnicate-kv", "3"]
    assert doc["placeholders"] == ["API_KEY", "HF_TOKEN"]
    assert any(d["key"] == "nodes.count" and d["severity"] == "high" for d in doc["diff"])
    assert doc["plan"]["statements"][0].startswith("the lab has 1 node(s), the client 2")


def test_collect_env_diff_and_traps(tmp_path: Path) -> None:
    doc = _run("collect-env-gb10-vs-here", tmp_path)
    by_key = {d["key"]: d for d in doc["diff"]}
    assert by_key["versions.vllm"]["lab"] == "0.32.0"
    assert by_key["versions.vllm"]["severity"] == "high"
    assert by_key["system.arch"]["client"] == "aarch64"
    assert by_key["build.cuda_archs"]["client"] == "12.0"
    ids = {t["id"] for t in doc["traps"]}
    assert {"uma-gmu-fraction", "build-arch-missing", "transformers-boundary",
            "spec-default-max-num-seqs"} <= ids


def test_compose_nodes(tmp_path: Path) -> None:
    doc = _run("compose-list-and-map", tmp_path)
    nodes = doc["client_nodes"]
    assert [n["name"] for n in nodes] == ["node0", "node1"]
    assert nodes[1]["headless"] is True
    assert nodes[0]["env"]["VLLM_HOST_IP"] == "192.168.100.10"
    assert nodes[1]["env"]["VLLM_HOST_IP"] == "192.168.100.11"
    dep = doc["deployment"]
    assert dep["engine"]["image"] == "nvcr.io/nvidia/vllm:25.12-py3"
    assert "--mount" in dep["engine"]["container_args"]
    assert dep["env"]["HUGGING_FACE_HUB_TOKEN"] == "<supply:HUGGING_FACE_HUB_TOKEN>"
    assert dep["speculative"]["method"] == "ngram"
    assert dep["speculative"]["extra"] == {"prompt_lookup_max": 5}


def test_docker_entrypoint_and_secrets(tmp_path: Path) -> None:
    doc = _run("docker-secrets", tmp_path)
    argv = doc["plan"]["nodes"][0]["argv"]
    image = argv.index("vllm/vllm-openai:v0.21.1")
    assert argv[image - 2:image + 3] == ["-e", "NCCL_CUMEM_ENABLE=0", "vllm/vllm-openai:v0.21.1",
                                          "serve", "/models/gemma4-26b-a4b-nvfp4"]
    assert argv[argv.index("--entrypoint") + 1] == "vllm"
    assert doc["deployment"]["env"]["VLLM_API_KEY"] == "<supply:VLLM_API_KEY>"
    assert doc["deployment"]["speculative"] == {"method": "mtp", "num_speculative_tokens": 2,
                                                "model": None, "extra": {}}
    assert {t["id"] for t in doc["traps"]} >= {"docker-short-bind", "spec-at-concurrency"}


def test_peer_catalogue_findings_matched(tmp_path: Path) -> None:
    """What Model Serving Minefield finds on the same inputs, reproduce finds too (fires or possible)."""
    from sparktriage.reproduce.check.traps import load_traps
    found = json.loads((HERE / "msmf_findings.json").read_text())
    ours_for_peer = {p: t.id for t in load_traps() for p in t.peer}
    for case, (names, capture) in CASES.items():
        peer = {i for n in names + ([capture] if capture else []) for i in found.get(n, [])}
        if capture is None:
            peer.discard("101")  # a version crossing needs both sides
        doc = json.loads((GOLDEN / f"{case}.json").read_text())
        ours = {t["id"] for t in doc["traps"]}
        for trap_id in peer:
            assert ours_for_peer[f"msmf-{trap_id}"] in ours, (case, trap_id)
