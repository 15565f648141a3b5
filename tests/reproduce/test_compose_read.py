"""Issue 35: compose files as compose reads them (templates, profiles, .env, env_file,
extends) and every service key accounted for."""

from __future__ import annotations

import json
from pathlib import Path

import pytest

from sparktriage.errors import InputError
from sparktriage.reproduce.importers.common import Ctx
from sparktriage.reproduce.importers.compose_vars import Interpolator
from sparktriage.reproduce.model import InputRef
from sparktriage.reproduce.secrets import Placeholders

from reproduce_helpers import cli, run

SECRET = "hf_PlantedComposeSecret0123456789ab"
COMPOSE = """\
x-vllm: &vllm-template
  image: ${IMAGE:-vllm/vllm-openai:v0.32.0}
  runtime: nvidia
  user: "1000:1000"
  ipc: host
  network_mode: host
  shm_size: 16g
  ulimits:
    memlock: -1
    nofile: {soft: 65536, hard: 65536}
  env_file: [vllm.env]
  environment:
    HF_TOKEN: ${HF_TOKEN}
    LITERAL: "cost $$5"
x-gpu: &gpu
  deploy:
    resources:
      reservations:
        devices: [{driver: nvidia, count: all, capabilities: [gpu]}]
services:
  vllm:
    <<: [*vllm-template, *gpu]
    command: >
      vllm serve ${MODEL} --port ${PORT:-8001} --gpu-memory-utilization ${GMU-0.7}
      --max-num-seqs ${SEQS-16}
    ports: ["8001:8001"]
    stop_grace_period: 30s
  bench:
    image: bench:1
    profiles: [bench]
    command: vllm bench serve --model x
"""


def _write(folder: Path, compose: str = COMPOSE, dotenv: str | None = None) -> Path:
    (folder / "compose.yaml").write_text(compose)
    (folder / ".env").write_text(dotenv if dotenv is not None else
                                 f"MODEL=/models/Qwen3-Next-80B\nHF_TOKEN={SECRET}\nSEQS=8\n")
    (folder / "vllm.env").write_text("VLLM_LOGGING_LEVEL=DEBUG\nexport OMP_NUM_THREADS='4'\n")
    return folder / "compose.yaml"


def test_templates_env_and_every_key(tmp_path: Path) -> None:
    r = run([_write(tmp_path)], tmp_path)
    d = r.deployment
    assert d["model"]["path"] == "/models/Qwen3-Next-80B"  # ${MODEL} from .env
    assert d["serve"]["port"] == 8001  # ${PORT:-8001}: unset, the default
    assert d["serve"]["gpu_memory_utilization"] == 0.7  # ${GMU-0.7}: unset, the default
    assert d["serve"]["max_num_seqs"] == 8  # ${SEQS-16}: set in .env
    assert d["engine"]["image"] == "vllm/vllm-openai:v0.32.0"
    args = d["engine"]["container_args"]
    for pair in (["--user", "1000:1000"], ["--shm-size", "16g"], ["--ulimit", "memlock=-1"],
                 ["--ulimit", "nofile=65536:65536"]):
        assert any(args[i:i + 2] == pair for i in range(len(args))), pair
    assert d["env"]["LITERAL"] == "cost $5"  # $$ is a literal dollar
    assert d["env"]["VLLM_LOGGING_LEVEL"] == "DEBUG" and d["env"]["OMP_NUM_THREADS"] == "4"
    assert d["env"]["HF_TOKEN"] == "<supply:HF_TOKEN>" and "HF_TOKEN" in r.placeholders
    mapped = "\n".join(r.mapped)
    for text in ("services.vllm.runtime: nvidia -> the plan's --gpus all",
                 "services.vllm.ipc: host -> the plan's --ipc host",
                 "services.vllm.network_mode: host -> the plan's --network host",
                 "services.vllm.deploy.resources.reservations.devices (GPU) -> the plan's "
                 "--gpus all", "services.vllm.user -> engine.container_args --user",
                 "services.vllm.env_file vllm.env -> env"):
        assert text in mapped, text
    ports = next(u for u in r.unknown if u.text.startswith("ports"))
    assert ports.note.startswith("line 26: service vllm:")  # the line of its key
    assert any("service bench is in profile(s) bench" in n for n in r.notes)
    assert all(n.name == "node0" for n in r.client_nodes)
    for name in ("deployment.yaml", "reproduce.json"):
        assert SECRET not in (Path(r.out_dir) / name).read_text()


def test_an_active_profile_and_a_missing_variable(tmp_path: Path) -> None:
    compose = COMPOSE.replace("vllm serve ${MODEL}", "vllm serve ${MODEL:?give the model}")
    _write(tmp_path, compose, "")
    r = run([tmp_path / "compose.yaml"], tmp_path)
    assert r.deployment["model"]["path"] == "<supply:MODEL>"
    row = next(u for u in r.unknown if u.text == "${MODEL}")
    assert "compose requires it (give the model)" in row.note and row.note.startswith("line ")
    assert "MODEL" in r.placeholders
    # COMPOSE_PROFILES in .env activates the profile: the bench service is read, and it runs
    # `vllm bench`, not the server: noted, no node of its own
    (tmp_path / ".env").write_text("COMPOSE_PROFILES=bench\nMODEL=/m\n")
    r = run([tmp_path / "compose.yaml"], tmp_path, out="out2")
    assert "services.bench.profiles: active" in r.mapped
    assert any("service bench runs `vllm bench`, not the server" in n for n in r.notes)
    assert len(r.client_nodes) == 1 and r.deployment["model"]["path"] == "/m"


def test_extends_same_file_and_relative_file(tmp_path: Path) -> None:
    (tmp_path / "common.yaml").write_text(
        "services:\n  base:\n    image: vllm/vllm-openai:v0.32.0\n    shm_size: 8g\n"
        "    environment: {A: '1', B: '1'}\n")
    (tmp_path / "compose.yaml").write_text(
        "services:\n  gpu:\n    extends: {file: common.yaml, service: base}\n"
        "    runtime: nvidia\n    environment: {B: '2'}\n"
        "  vllm:\n    extends: gpu\n    command: vllm serve /m --max-num-seqs 4\n")
    r = run([tmp_path / "compose.yaml"], tmp_path)
    d = r.deployment
    assert d["env"] == {"A": "1", "B": "2"}
    assert d["engine"]["container_args"] == ["--shm-size", "8g"]
    assert "services.vllm.extends gpu -> merged" in r.mapped
    (tmp_path / "loop.yaml").write_text(
        "services:\n  a: {extends: b, image: x, command: vllm serve /m}\n"
        "  b: {extends: a, image: x}\n")
    with pytest.raises(InputError, match="extends is more than 5 deep"):
        run([tmp_path / "loop.yaml"], tmp_path, out="out2")


def test_env_file_outside_the_folder_is_not_read(tmp_path: Path) -> None:
    inner = tmp_path / "client"
    inner.mkdir()
    (tmp_path / "secret.env").write_text("STOLEN=1\n")
    (inner / "compose.yaml").write_text(
        "services:\n  v:\n    image: i\n    env_file: ../secret.env\n"
        "    command: vllm serve /m\n")
    r = run([inner / "compose.yaml"], tmp_path)
    assert "STOLEN" not in r.deployment["env"]
    assert any("outside the input's folder" in u.note for u in r.unknown)


def test_billion_laughs_compose_is_one_line_and_templates_are_not(tmp_path: Path) -> None:
    lines = ["services:", "  v: {image: i, command: vllm serve /m}",
             'x-a0: &a0 ["lol","lol","lol","lol","lol","lol","lol","lol","lol"]']
    for i in range(1, 9):
        lines.append(f"x-a{i}: &a{i} [" + ",".join([f"*a{i - 1}"] * 9) + "]")
    (tmp_path / "bomb.yaml").write_text("\n".join(lines) + "\n")
    done = cli("reproduce", str(tmp_path / "bomb.yaml"), "--no-capture", "--out",
               str(tmp_path / "out"))
    assert done.returncode == 2
    errors = [x for x in done.stderr.splitlines() if x.strip()]
    assert len(errors) == 1 and "Traceback" not in done.stderr
    assert f"{tmp_path / 'bomb.yaml'}:8: alias *a4 expands the document past" in errors[0]


def test_interpolation_forms() -> None:
    ctx = Ctx(InputRef(path="c.yaml", kind="compose"), Placeholders())
    it = Interpolator({"A": "x", "E": ""}, ctx)
    assert it.text("$A ${A} $${A} $$", "t") == "x x ${A} $"
    assert it.text("${E:-d} ${E-d} ${U:-d} ${U-d}", "t") == "d  d d"
    assert it.text("${A:+y} ${E:+y} ${E+y} ${U+y}", "t") == "y  y "
    assert it.text("${U:-${A}-${V:-z}}", "t") == "x-z"  # nested defaults
    assert it.text("${U:?must}", "t") == "<supply:U>"
    assert it.text("${W}", "t") == "<supply:W>"
    assert [u.text for u in ctx.unknown] == ["${U}", "${W}"]
    assert json.dumps(it.text("no vars", "t")) == '"no vars"'


@pytest.mark.parametrize("service,message", [
    ({"profiles": True}, "service v: profiles must be a list or a string"),
    ({"volumes": -1}, "service v: volumes must be a list"),
    ({"environment": 5}, "service v: environment must be a mapping or a list"),
    ({"deploy": {"replicas": "x"}}, "service v: deploy.replicas must be a count"),
    ({"user": ["a"]}, "service v: user must be one value"),
])
def test_shapes_compose_refuses_are_one_line_errors(tmp_path: Path, service: dict,
                                                    message: str) -> None:
    import yaml
    (tmp_path / "c.yaml").write_text(yaml.safe_dump(
        {"services": {"v": {"image": "vllm/vllm-openai", "command": "vllm serve /m",
                            **service}}}))
    with pytest.raises(InputError, match=message) as caught:
        run([tmp_path / "c.yaml"], tmp_path)
    assert caught.value.one_line().startswith(f"{tmp_path / 'c.yaml'}:")


def test_values_not_known_statically_are_rows_not_refusals(tmp_path: Path) -> None:
    """`--port ${PORT}` with no value anywhere, a JSON option built from one, and `~` in a
    volume: the deployment keeps vLLM's default / leaves the option out / writes a
    placeholder, and an unknowns row says what to set."""
    (tmp_path / "c.yaml").write_text(
        "services:\n  v:\n    image: vllm/vllm-openai:v0.32.0\n"
        "    volumes: ['~/.cache/huggingface:/root/.cache/huggingface']\n"
        "    command: >\n      vllm serve /m --port ${PORT} --max-num-seqs 8\n"
        "      --speculative-config ${SPEC}\n")
    r = run([tmp_path / "c.yaml"], tmp_path)
    d = r.deployment
    assert d["serve"]["port"] == 8000 and d["serve"]["max_num_seqs"] == 8
    assert d.get("speculative") is None and "speculative-config" not in d["serve"]["flags"]
    notes = {u.text: u.note for u in r.unknown}
    assert "leaves serve.port at vLLM's default" in notes["--port <supply:PORT>"]
    assert "built at run time" in notes["--speculative-config <supply:SPEC>"]
    assert d["engine"]["container_args"][:2] == [
        "-v", "<supply:HOME>/.cache/huggingface:/root/.cache/huggingface"]
    assert "HOME" in r.placeholders and "~ is the client's home folder" in \
        notes["~/.cache/huggingface"]
