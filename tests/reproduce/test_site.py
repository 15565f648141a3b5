"""The client's own addresses and interfaces (reproduce/place/site.py), and what is asked to supply
(reproduce/supply.py): replaced by the lab's or dropped with a row, never carried silently;
each placeholder asked for once, and only when the written deployment holds it."""

from __future__ import annotations

from pathlib import Path

import yaml

from reproduce_helpers import gb10_lab, planned, run
from sparktriage.reproduce.place.site import kind


def _lab(tmp: Path, count: int = 2, **node) -> Path:
    return gb10_lab(tmp, count, interfaces=["enp1s0f1np1", "enP2p1s0f1np1"], **node)


def _written(tmp: Path, out: str = "out") -> str:
    return (tmp / out / "deployment.yaml").read_text()


def test_kind_by_name_and_value() -> None:
    assert kind("HEAD_IP", "198.51.100.1") == "address"
    assert kind("HEAD_NODE_IP", "<supply:HEAD_NODE_IP>") == "address"
    assert kind("RAY_ADDRESS", "198.51.100.1:6379") == "address"
    assert kind("RAY_ADDRESS", "auto") is None
    assert kind("MASTER_ADDR", "spark-head") == "address"
    assert kind("VLLM_HOST_IP", "127.0.0.1") is None  # loopback is right anywhere
    assert kind("VLLM_HOST", "0.0.0.0") is None
    assert kind("NFS_SERVER", "198.51.100.9") == "address"  # a host name holding an IP
    assert kind("MODEL_NAME", "198.51.100.9") is None  # not an address name, not a node's
    assert kind("MODEL_NAME", "198.51.100.9", {"198.51.100.9"}) == "address"
    assert kind("NCCL_SOCKET_IFNAME", "enp1s0f0np0") == "interface"
    assert kind("NCCL_SOCKET_IFNAME", "^lo,docker0") is None  # an exclusion list travels
    assert kind("ETH_IF", "enp1s0f0np0") == "interface"
    assert kind("NCCL_CROSS_NIC", "1") is None  # a 0/1/2 policy (corpus 45), not a NIC name
    assert kind("NCCL_IB_HCA", "rocep1s0f0") == "device"
    assert kind("UCX_NET_DEVICES", "mlx5_0:1") == "device"
    assert kind("UCX_NET_DEVICES", "enp1s0f0np0") == "interface"  # UCX's TCP transport
    assert kind("MASTER_PORT", "29500") is None
    assert kind("VLLM_PORT", "8000") is None


def test_client_addresses_become_the_lab_nodes(tmp_path: Path) -> None:
    """Each address maps to the lab node standing for the client node that owns it (ports
    kept); interface names become the lab node's listed interfaces."""
    script = tmp_path / "run.sh"
    script.write_text(
        "HEAD_IP=198.51.100.1\nWORKER_IP=198.51.100.2\n"
        "docker run -d --name head --network host -e HEAD_IP=$HEAD_IP -e VLLM_HOST_IP=$HEAD_IP"
        " -e NCCL_SOCKET_IFNAME=enp1s0f0np0 -e GLOO_SOCKET_IFNAME=enp1s0f0np0,enP2p1s0f0np0"
        " img ray start --head --block\n"
        "ssh $WORKER_IP \"docker run -d --network host -e HEAD_IP=$HEAD_IP -e WORKER_IP=$WORKER_IP"
        " -e VLLM_HOST_IP=$WORKER_IP -e NCCL_SOCKET_IFNAME=enp1s0f0np0 img ray start"
        " --address=$HEAD_IP:6379 --block\"\n"
        "docker exec head bash -c \"export RAY_ADDRESS=$HEAD_IP:6379; export MASTER_ADDR=$HEAD_IP;"
        " vllm serve org/m -tp 2 --host $HEAD_IP --distributed-executor-backend ray\"\n")
    r = run([script], tmp_path, _lab(tmp_path))
    dep = yaml.safe_load(_written(tmp_path).split("\n", 1)[1])
    assert "198.51.100" not in _written(tmp_path) and "enp1s0f0np0" not in _written(tmp_path)
    head, worker = dep["node_env"]["spark-01"], dep["node_env"]["spark-02"]
    assert head["HEAD_IP"] == "192.0.2.11" and head["VLLM_HOST_IP"] == "192.0.2.11"
    assert head["RAY_ADDRESS"] == "192.0.2.11:6379" and head["MASTER_ADDR"] == "192.0.2.11"
    assert head["NCCL_SOCKET_IFNAME"] == "enp1s0f1np1"
    assert head["GLOO_SOCKET_IFNAME"] == "enp1s0f1np1,enP2p1s0f1np1"  # as many as the client's
    assert worker["HEAD_IP"] == "192.0.2.11" and worker["WORKER_IP"] == "192.0.2.12"
    assert worker["VLLM_HOST_IP"] == "192.0.2.12"
    assert dep["serve"]["host"] == "192.0.2.11"  # the server runs on the lab's head
    said = next(s for s in r.plan.statements if s.startswith("the client's own addresses"))
    assert "WORKER_IP (node1 -> spark-02: 198.51.100.2 -> 192.0.2.12, spark-02's host)" in said
    assert "--host (198.51.100.1 -> 192.0.2.11" in said
    server = planned(r).stages[-1].processes[0][1]
    assert "-e" in server.argv and "VLLM_HOST_IP=192.0.2.11" in server.argv
    # the diff still compares the client's value with the lab's
    row = next(d for d in r.diff if d.key == "env.VLLM_HOST_IP" and d.lab_node == "spark-01")
    assert (row.client, row.lab) == ("198.51.100.1", "192.0.2.11")


def test_what_the_lab_cannot_know_is_dropped_with_a_row(tmp_path: Path) -> None:
    script = tmp_path / "run.sh"
    script.write_text("export NFS_SERVER_IP=198.51.100.50\nexport NCCL_IB_HCA=rocep1s0f0\n"
                      "export UCX_NET_DEVICES=mlx5_0:1\nexport NCCL_SOCKET_IFNAME=^lo,docker0\n"
                      "export VLLM_HOST_IP=198.51.100.1\nvllm serve org/m\n")
    r = run([script], tmp_path, gb10_lab(tmp_path, 1))  # the lab lists no interfaces
    written = _written(tmp_path)
    assert "198.51.100.50" not in written and "rocep1s0f0" not in written
    assert "mlx5_0" not in written
    dep = r.deployment
    assert dep["env"]["NCCL_SOCKET_IFNAME"] == "^lo,docker0"  # portable: carried
    assert dep["node_env"]["spark-01"]["VLLM_HOST_IP"] == "192.0.2.11"
    rows = {u.text: u.note for u in r.unknown}
    assert "not an address of a client node" in rows["NFS_SERVER_IP=198.51.100.50"]
    assert "the client's RDMA device names" in rows["NCCL_IB_HCA=rocep1s0f0"]
    assert "the client's own device, not carried" in rows["UCX_NET_DEVICES=mlx5_0:1"]


def test_the_lab_yaml_own_value_applies(tmp_path: Path) -> None:
    lab = _lab(tmp_path, 2, env={"NCCL_SOCKET_IFNAME": "enP2p1s0f1np1"})
    script = tmp_path / "run.sh"
    script.write_text("export NCCL_SOCKET_IFNAME=enp1s0f0np0\n"
                      "vllm serve org/m -tp 2 --distributed-executor-backend ray\n")
    r = run([script], tmp_path, lab)
    assert "NCCL_SOCKET_IFNAME" not in str(r.deployment.get("node_env"))
    assert "NCCL_SOCKET_IFNAME" not in r.deployment["env"]
    assert r.plan.nodes[0].env["NCCL_SOCKET_IFNAME"] == "enP2p1s0f1np1"
    assert any("the lab YAML's enP2p1s0f1np1" in s for s in r.plan.statements)


def test_an_address_known_only_at_run_time_is_not_asked_for(tmp_path: Path) -> None:
    script = tmp_path / "run.sh"
    script.write_text("HEAD_IP=$(hostname -I | awk '{print $1}')\n"
                      "IF=$(ip -o route get 1 | awk '{print $5}')\n"
                      "VLLM_HOST_IP=$HEAD_IP NCCL_SOCKET_IFNAME=$IF vllm serve org/m -tp 2 "
                      "--distributed-executor-backend ray\n")
    r = run([script], tmp_path, _lab(tmp_path))
    assert r.placeholders == []
    assert "<supply:" not in _written(tmp_path)
    assert r.deployment["node_env"]["spark-02"] == {"VLLM_HOST_IP": "192.0.2.12",
                                                    "NCCL_SOCKET_IFNAME": "enp1s0f1np1"}
    assert not any(u.text.startswith("<supply:") for u in r.unknown)
    assert any("HEAD_IP (line 1: command substitution" in n and "not needed" in n
               for n in r.notes)


def test_a_secret_named_once_is_asked_once(tmp_path: Path) -> None:
    """The script checks HF_TOKEN (`${HF_TOKEN:?}`) before the env file's value is read."""
    script = tmp_path / "run.sh"
    script.write_text(': "${HF_TOKEN:?set it}"\ndocker run --gpus all -e HF_TOKEN="$HF_TOKEN" '
                      '-e VLLM_API_KEY="${VLLM_API_KEY}" img vllm serve org/m\n')
    env = tmp_path / "client.env"
    env.write_text("HF_TOKEN=hf_xxxSiteTestTokenValue000000\nVLLM_API_KEY=sk-xxxSiteTest0001\n")
    r = run([script, env], tmp_path)
    assert r.placeholders == ["HF_TOKEN", "VLLM_API_KEY"]
    assert _written(tmp_path).startswith("# written by sparktriage reproduce (docs/reproduce.md);"
                                         " values to supply: HF_TOKEN, VLLM_API_KEY\n")
    assert "hf_xxxSiteTest" not in _written(tmp_path)


def test_two_values_of_one_name_stay_two() -> None:
    from sparktriage.reproduce.secrets import Placeholders
    p = Placeholders()
    assert p.named("HF_TOKEN", "hf_aaaaaaaaaaaaaaaaaaaa", "a") == "<supply:HF_TOKEN>"
    assert p.named("HF_TOKEN", "hf_bbbbbbbbbbbbbbbbbbbb", "b") == "<supply:HF_TOKEN_2>"
    assert p.declare("X", "c") == "<supply:X>"
    assert p.named("X", "secret-value-1234", "d") == "<supply:X>"  # declared, then its value
    assert p.supply == ["HF_TOKEN", "HF_TOKEN_2", "X"]


def test_a_placeholder_in_a_dropped_option_is_not_asked_for(tmp_path: Path) -> None:
    script = tmp_path / "run.sh"
    script.write_text("NAME=node-$RANDOM\nWORK=$(mktemp -d)\n"
                      "docker run -d --name \"$NAME\" --gpus all --network host img "
                      "vllm serve org/m --download-dir \"$WORK\"\n")
    r = run([script], tmp_path)
    assert r.placeholders == ["WORK"]  # in --download-dir: written, so asked for
    assert "shell_RANDOM" not in _written(tmp_path) and "<supply:WORK>" in _written(tmp_path)
    assert [u.text for u in r.unknown if u.text.startswith("<supply:")] == ["<supply:WORK>"]


def test_exports_before_an_interactive_docker_exec_stay_on_the_host(tmp_path: Path) -> None:
    script = tmp_path / "serve.sh"
    script.write_text("export C=$(docker ps -q | head -1)\nexport NCCL_DEBUG=INFO\n"
                      "docker exec -it $C /bin/bash\nexport VLLM_LOGGING_LEVEL=DEBUG\n"
                      "vllm serve org/m\n")
    r = run([script], tmp_path)
    assert r.deployment["env"] == {"VLLM_LOGGING_LEVEL": "DEBUG"}
    assert r.placeholders == []
    assert any("the host shell's exports are not in its environment (C, NCCL_DEBUG)" in n
               for n in r.notes)


def test_node_addresses_inside_options_and_container_args(tmp_path: Path) -> None:
    """An address known to be a client node's is replaced wherever it stands: a JSON option,
    `--data-parallel-address`, a container argument; an address of no node is left alone."""
    script = tmp_path / "run.sh"
    script.write_text(
        "export VLLM_HOST_IP=198.51.100.1\n"
        "docker run --gpus all --add-host head:198.51.100.1 --add-host nfs:198.51.100.77 img "
        "vllm serve org/m --data-parallel-address 198.51.100.1 "
        "--kv-transfer-config '{\"kv_connector\":\"X\",\"kv_ip\":\"198.51.100.1\"}'\n")
    r = run([script], tmp_path, gb10_lab(tmp_path, 1))
    d = r.deployment
    assert d["serve"]["flags"]["data-parallel-address"] == "192.0.2.11"
    assert '"kv_ip":"192.0.2.11"' in d["serve"]["flags"]["kv-transfer-config"]
    args = d["engine"]["container_args"]
    assert "head:192.0.2.11" in args and "nfs:198.51.100.77" in args
    said = next(s for s in r.plan.statements if s.startswith("the client's own addresses"))
    assert "--kv-transfer-config (" in said and "--data-parallel-address (198.51.100.1 -> " \
        "192.0.2.11" in said
