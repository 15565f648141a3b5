"""Several independent vLLM servers in one input are never merged (importers/apart.py), KV
connectors vLLM 0.32 does not ship are flagged (check/kvcheck.py), and a justfile is read as just
reads it (read/justfile.py). Real reproduce core; nothing is run."""

from __future__ import annotations

import json
from pathlib import Path

import pytest
from reproduce_helpers import gb10_lab, run

from sparktriage.config.deployment import load_deployment
from sparktriage.errors import InputError
from sparktriage.reproduce.read.justfile import to_shell
from sparktriage.reproduce.check.kvcheck import shipped

PD = """\
#!/bin/bash
vllm serve m/x --port 8100 --kv-transfer-config \\
  '{"kv_connector":"PyNcclConnector","kv_role":"kv_producer"}' &
vllm serve m/x --port 8200 --kv-transfer-config \\
  '{"kv_connector":"PyNcclConnector","kv_role":"kv_consumer"}' &
wait
"""


def test_connector_list_is_vllm_032s_factory() -> None:
    release, names = shipped()
    assert release == "vLLM 0.32.0"
    assert {"NixlConnector", "LMCacheConnectorV1", "MultiConnector"} <= names
    assert not {"PyNcclConnector", "P2pNcclConnector"} & names


def test_prefill_and_decode_are_two_servers_first_reproduced(tmp_path: Path) -> None:
    script = tmp_path / "pd.sh"
    script.write_text(PD)
    result = run([script], tmp_path, gb10_lab(tmp_path, 2))
    dep = load_deployment(Path(result.out_dir) / "deployment.yaml")
    assert dep.serve.port == 8100 and len(dep.nodes) == 1
    kv = json.loads(dep.serve.flags["kv-transfer-config"])
    assert kv["kv_role"] == "kv_producer"  # never the other server's config
    texts = [u.text for u in result.unknown]
    assert "independent vLLM server: vllm serve m/x (port 8200, kv_consumer, KV connector " \
           "PyNcclConnector)" in texts
    assert "--kv-transfer-config kv_connector PyNcclConnector" in texts
    row = next(u for u in result.unknown if u.text.startswith("--kv-transfer-config"))
    assert row.note.startswith("line 2: KV connector PyNcclConnector is not registered in vLLM "
                               "0.32.0's connector factory")


def test_alternatives_in_branches_stay_alternatives(tmp_path: Path) -> None:
    script = tmp_path / "alt.sh"
    script.write_text('if [ "$BIG" = 1 ]; then\n  vllm serve m/big --port 8000\nelse\n'
                      '  vllm serve m/small --port 8001\nfi\n')
    result = run([script], tmp_path, gb10_lab(tmp_path, 1))
    assert not any(u.text.startswith("independent") for u in result.unknown)
    assert any("another branch runs this server command" in u.note for u in result.unknown)


def test_a_module_path_connector_is_not_flagged(tmp_path: Path) -> None:
    script = tmp_path / "one.sh"
    script.write_text("vllm serve m/x --kv-transfer-config '{\"kv_connector\":\"Mine\","
                      "\"kv_connector_module_path\":\"my.mod\",\"kv_role\":\"kv_both\"}'\n")
    result = run([script], tmp_path, gb10_lab(tmp_path, 1))
    assert not any("kv_connector" in u.text for u in result.unknown)


JUSTFILE = """\
set dotenv-load
model := env_var_or_default('MODEL', "Qwen/Qwen3-0.6B")
export HF_HOME := "/data/" + 'hf'

# prefill server
[group('pd')]
prefill port='8100':
    @echo starting
    CUDA_VISIBLE_DEVICES=0 vllm serve {{model}} --port {{port}} \\
      -tp 1 --kv-transfer-config '{"kv_connector":"NixlConnector","kv_role":"kv_both"}'

decode:
    vllm serve {{model}} --port 8200 \\
      --kv-transfer-config '{"kv_connector":"NixlConnector","kv_role":"kv_both"}'
"""


def test_justfile_text_line_for_line() -> None:
    shell, notes = to_shell(JUSTFILE, "justfile")
    lines = shell.splitlines()
    assert len(lines) == len(JUSTFILE.splitlines())
    assert lines[2] == 'export HF_HOME="/data/hf"'
    assert lines[8] == "CUDA_VISIBLE_DEVICES=0 vllm serve ${MODEL:-Qwen/Qwen3-0.6B} --port 8100 \\"
    assert lines[9].startswith("-tp 1 ")  # a continued line keeps its leading `-`
    assert lines[7] == "echo starting" and lines[6] == lines[5] == ""
    assert notes[-1] == "line 12: just recipe `decode` (its body read as shell; the header " \
                        "runs nothing)"
    with pytest.raises(InputError, match=r"^justfile:2: a shebang recipe"):
        to_shell("py:\n    #!/usr/bin/env python3\n    print(1)\n", "justfile")
    with pytest.raises(InputError, match=r"^justfile:1: the just expression `uuid\(\)`"):
        to_shell("x := uuid()\n", "justfile")


def test_justfile_two_recipes_two_servers(tmp_path: Path) -> None:
    path = tmp_path / "justfile"
    path.write_text(JUSTFILE)
    result = run([path], tmp_path, gb10_lab(tmp_path, 2))
    dep = load_deployment(Path(result.out_dir) / "deployment.yaml")
    assert (dep.model.path, dep.serve.port) == ("Qwen/Qwen3-0.6B", 8100)
    assert any(u.text.startswith("independent vLLM server: vllm serve") and "port 8200" in u.text
               for u in result.unknown)


def test_the_other_server_is_placed_beside_the_first_when_the_lab_holds_it(tmp_path: Path) -> None:
    script = tmp_path / "pd.sh"
    script.write_text(PD)
    result = run([script], tmp_path, gb10_lab(tmp_path, 2))
    other = load_deployment(Path(result.out_dir) / "server-2" / "deployment.yaml")
    assert (other.nodes, other.serve.port, other.model.path) == (["spark-02"], 8200, "m/x")
    assert json.loads(other.serve.flags["kv-transfer-config"])["kv_role"] == "kv_consumer"
    first = load_deployment(Path(result.out_dir) / "deployment.yaml")
    assert first.nodes == ["spark-01"]
    assert "server 2 (port 8200, kv_consumer, KV connector PyNcclConnector) placed beside the " \
           "first on spark-02: server-2/deployment.yaml (launch it as well to run both as the " \
           "client does)" in result.plan.statements


def test_no_room_beside_the_first_is_said_not_written(tmp_path: Path) -> None:
    script = tmp_path / "pd.sh"
    script.write_text(PD)
    result = run([script], tmp_path, gb10_lab(tmp_path, 1), out="one")
    assert not (Path(result.out_dir) / "server-2").exists()
    assert "server 2 (port 8200, kv_consumer, KV connector PyNcclConnector): needs 1 lab " \
           "node(s), 0 left beside the server(s) before it: not placed (give its command alone " \
           "to reproduce it)" in result.plan.statements


def test_two_compose_services_on_other_ports_each_placed(tmp_path: Path) -> None:
    compose = tmp_path / "compose.yaml"
    compose.write_text("""\
services:
  chat:
    image: vllm/vllm-openai:v0.11.0
    command: ["--model", "m/chat", "--port", "8000"]
  embed:
    image: vllm/vllm-openai:v0.11.0
    command: ["--model", "m/embed", "--port", "8001", "--runner", "pooling"]
""")
    result = run([compose], tmp_path, gb10_lab(tmp_path, 2))
    first = load_deployment(Path(result.out_dir) / "deployment.yaml")
    other = load_deployment(Path(result.out_dir) / "server-2" / "deployment.yaml")
    assert (first.model.path, other.model.path) == ("m/chat", "m/embed")
    assert (other.engine.image, other.nodes) == ("vllm/vllm-openai:v0.11.0", ["spark-02"])
