"""Issue 35: vLLM's --config files and recipe YAML, read and merged in vLLM's order."""

from __future__ import annotations

from pathlib import Path

import pytest

from sparktriage.errors import InputError
from sparktriage.reproduce.read.detect import detect
from sparktriage.reproduce.importers.recipe_render import render as substitute

from reproduce_helpers import cli, gb10_lab, run

CONFIG = """\
tensor_parallel_size: 2
max-num-seqs: 32
enable-prefix-caching: false
kv-cache-dtype: fp8
speculative_config:
  method: eagle3
  model: nvidia/gpt-oss-120b-Eagle3-v3
  num_speculative_tokens: 7
"""


def test_config_file_under_the_command_line(tmp_path: Path) -> None:
    (tmp_path / "eagle.yaml").write_text(CONFIG)
    (tmp_path / "run.sh").write_text("vllm serve openai/gpt-oss-120b --config eagle.yaml "
                                     "--max-num-seqs 4\n")
    r = run([tmp_path / "run.sh"], tmp_path, gb10_lab(tmp_path, 2))
    d = r.deployment
    assert d["serve"]["max_num_seqs"] == 4  # the command line wins over the file
    assert d["parallelism"]["tp"] == 2 and d["serve"]["kv_cache_dtype"] == "fp8"
    assert d["speculative"]["method"] == "eagle3"
    assert d["speculative"]["num_speculative_tokens"] == 7
    assert "enable-prefix-caching" not in d["serve"]["flags"]  # false: left out
    assert "config" not in d["serve"]["flags"]
    assert "--config eagle.yaml: 5 key(s) -> vllm serve options" in r.mapped


def test_a_missing_config_file_is_a_placeholder_not_a_crash(tmp_path: Path) -> None:
    (tmp_path / "run.sh").write_text("vllm serve /m --config /etc/vllm/prod.yaml\n")
    r = run([tmp_path / "run.sh"], tmp_path)
    row = next(u for u in r.unknown if u.text == "--config /etc/vllm/prod.yaml")
    assert "the config file was not given" in row.note
    # the deployment holds no <supply:VLLM_CONFIG_FILE>: nothing to supply, the row says it
    assert r.placeholders == [] and r.deployment["model"]["path"] == "/m"


def test_config_given_as_an_input_of_its_own(tmp_path: Path) -> None:
    (tmp_path / "eagle.yaml").write_text(CONFIG)
    assert detect(CONFIG) == "recipe"
    (tmp_path / "run.sh").write_text("vllm serve openai/gpt-oss-120b --config eagle.yaml\n")
    r = run([tmp_path / "run.sh", tmp_path / "eagle.yaml"], tmp_path, gb10_lab(tmp_path, 2))
    assert r.deployment["speculative"]["num_speculative_tokens"] == 7
    assert len(r.client_nodes) == 2  # tp 2 on one-GPU nodes; the file adds no node


def test_sparkrun_recipe_template(tmp_path: Path) -> None:
    (tmp_path / "r.yaml").write_text("""\
model: nvidia/NVIDIA-Nemotron-3-Nano-30B-A3B-NVFP4
runtime: vllm
container: scitrera/dgx-spark-vllm:0.16.0-t5
min_nodes: 1
metadata: {description: test}
defaults:
  port: 8000
  tensor_parallel: 2
  gpu_memory_utilization: 0.75
  served_model_name: nano
env:
  VLLM_ALLOW_LONG_MAX_MODEL_LEN: "1"
  HF_TOKEN: "${HF_TOKEN}"
command: |
  vllm serve \\
      {model} \\
      --served-model-name {served_model_name} \\
      --gpu-memory-utilization {gpu_memory_utilization} \\
      -tp {tensor_parallel} --port {port} \\
      --override-generation-config '{{"temperature": 0.6}}' \\
      --speculative-config '{{"method": "mtp", "num_speculative_tokens": 2}}'
frobnicate: 3
""")
    r = run([tmp_path / "r.yaml"], tmp_path, gb10_lab(tmp_path, 2))
    d = r.deployment
    assert d["model"] == {"path": "nvidia/NVIDIA-Nemotron-3-Nano-30B-A3B-NVFP4", "name": "nano",
                          "size_gib": None, "quantization": None, "tokenizer": None,
                          "trust_remote_code": False}
    assert d["engine"]["image"] == "scitrera/dgx-spark-vllm:0.16.0-t5"
    # a bare `vllm` runtime without a Ray hint is sparkrun's vllm-distributed: native multi-node
    assert d["parallelism"]["tp"] == 2 and d["engine"]["backend"] == "mp"
    assert d["engine"]["master_port"] == 25000
    assert d["serve"]["flags"]["override-generation-config"] == '{"temperature":0.6}'
    assert d["speculative"]["method"] == "mtp"
    assert d["env"]["HF_TOKEN"] == "<supply:HF_TOKEN>"
    assert any(u.text == "frobnicate" and u.note.startswith("line 22:") for u in r.unknown)
    assert not any(t.id == "uma-gmu-fraction" for t in r.traps)  # 0.75 is the advice


def test_recipe_args_mapping_with_speculative_json(tmp_path: Path) -> None:
    (tmp_path / "r.yaml").write_text(
        "model: openai/gpt-oss-120b\nargs:\n  max_num_seqs: 8\n  enforce_eager: true\n"
        "  speculative_config: {method: eagle3, num_speculative_tokens: 3, "
        "model: nvidia/eagle}\nenv: {VLLM_MADE_UP_KNOB: '1'}\n")
    r = run([tmp_path / "r.yaml"], tmp_path)
    d = r.deployment
    assert d["serve"]["max_num_seqs"] == 8 and d["serve"]["enforce_eager"] is True
    assert d["speculative"]["method"] == "eagle3" and d["speculative"]["model"] == "nvidia/eagle"
    row = next(u for u in r.unknown if u.text == "VLLM_MADE_UP_KNOB")
    assert "vLLM 0.32 does not read VLLM_MADE_UP_KNOB" in row.note


def test_vllm_project_model_card(tmp_path: Path) -> None:
    (tmp_path / "card.yaml").write_text("""\
meta: {title: X}
model:
  model_id: Qwen/Qwen3-Next-80B-A3B-Instruct
  base_args: ["--max-model-len", "32768"]
  base_env: {VLLM_LOGGING_LEVEL: INFO}
features:
  tools: {args: ["--enable-auto-tool-choice", "--tool-call-parser", "hermes"]}
  spec: {args: ["--speculative-config", '{"method":"mtp","num_speculative_tokens":2}']}
opt_in_features: [spec]
variants:
  default: {precision: bf16}
  fp8: {model_id: Qwen/Qwen3-Next-80B-A3B-Instruct-FP8}
guide: |
  vllm serve Qwen/Qwen3-Next-80B-A3B-Instruct --tensor-parallel-size 4
""")
    r = run([tmp_path / "card.yaml"], tmp_path)
    d = r.deployment
    assert d["model"]["path"] == "Qwen/Qwen3-Next-80B-A3B-Instruct"
    assert d["serve"]["max_model_len"] == 32768 and d["parallelism"]["tp"] == 1
    assert d["serve"]["flags"]["tool-call-parser"] == "hermes"
    assert d.get("speculative") is None  # opt-in: off by default
    assert any("feature spec is opt-in" in n for n in r.notes)


def test_substitute_escapes_and_refusals(tmp_path: Path) -> None:
    assert substitute("{a} {{b}} {c}", {"a": "{c}", "c": 1}) == "1 {b} 1"
    (tmp_path / "s.yaml").write_text("model: m\nruntime: sglang\ncommand: python -m sglang\n")
    done = cli("reproduce", str(tmp_path / "s.yaml"), "--no-capture", "--out",
               str(tmp_path / "o"))
    assert done.returncode == 2
    lines = [x for x in done.stderr.splitlines() if x.strip()]
    assert len(lines) == 1 and "runtime sglang is not vLLM" in lines[0]
    with pytest.raises(InputError, match="names no model and has no command"):
        (tmp_path / "n.yaml").write_text("recipe_version: '1'\ndefaults: {port: 1}\n")
        run([tmp_path / "n.yaml"], tmp_path, out="o2")


def test_the_command_line_model_wins_over_the_config_file_model(tmp_path: Path) -> None:
    (tmp_path / "c.yaml").write_text("model: from/file\nmax_num_seqs: 2\n")
    for line in ("vllm serve --config c.yaml --model from/cli\n",
                 "vllm serve from/cli --config c.yaml\n"):
        (tmp_path / "run.sh").write_text(line)
        r = run([tmp_path / "run.sh"], tmp_path)
        assert r.deployment["model"]["path"] == "from/cli"
        assert r.deployment["serve"]["extra_args"] == [] and r.deployment["serve"]["max_num_seqs"] == 2
    (tmp_path / "run.sh").write_text("vllm serve --config c.yaml\n")
    assert run([tmp_path / "run.sh"], tmp_path).deployment["model"]["path"] == "from/file"


def test_config_inside_a_container_is_read_through_its_bind(tmp_path: Path) -> None:
    (tmp_path / "config").mkdir()
    (tmp_path / "config" / "serve.yaml").write_text(CONFIG)
    (tmp_path / "compose.yaml").write_text(
        "services:\n  v:\n    image: vllm/vllm-openai:v0.32.0\n"
        "    volumes: ['./config:/etc/vllm:ro']\n"
        "    command: vllm serve openai/gpt-oss-120b --config /etc/vllm/serve.yaml\n")
    r = run([tmp_path / "compose.yaml"], tmp_path)
    assert r.deployment["speculative"]["num_speculative_tokens"] == 7
    assert "--config /etc/vllm/serve.yaml: 5 key(s) -> vllm serve options" in r.mapped


def test_a_template_value_missing_from_defaults_is_a_placeholder(tmp_path: Path) -> None:
    (tmp_path / "r.yaml").write_text(
        "model: m/x\ncontainer: img\ndefaults: {port: 8001}\n"
        "command: vllm serve {model} --port {port} --max-num-seqs {seqs} "
        "--served-model-name {alias}\n")
    r = run([tmp_path / "r.yaml"], tmp_path)
    d = r.deployment
    assert d["serve"]["port"] == 8001 and d["serve"].get("max_num_seqs") is None
    assert d["model"]["name"] == "<supply:ALIAS>"
    # --max-num-seqs <supply:SEQS> is left at vLLM's default: only ALIAS is written and asked
    assert r.placeholders == ["ALIAS"]
    assert any(u.text == "{seqs}" and "written as <supply:SEQS>" in u.note for u in r.unknown)
