"""Issue 35: `docker compose run SERVICE COMMAND` in a launch script is the compose service's
container (image, binds, environment, every key) with its command replaced; the compose
input is read through the run, not as a second node."""

from __future__ import annotations

from pathlib import Path

import pytest

from sparktriage.errors import InputError
from sparktriage.reproduce.importers.compose_run import composes_run, is_compose_run

from reproduce_helpers import gb10_lab, run

COMPOSE = """\
services:
  vllm:
    image: spark-vllm:latest
    runtime: nvidia
    user: "${HOST_UID:-1000}:${HOST_GID:-1000}"
    volumes: ["./models:/models:rw"]
    environment: [VLLM_MADE_UP_SWITCH=1, HF_HOME=/state/hf]
    command: serve Qwen/Other --max-model-len 32768
"""
SCRIPT = """\
#!/bin/bash
MODEL="${1:-Qwen/Qwen3-Coder-Next-FP8}"
docker compose run --rm --service-ports -e EXTRA=1 -v /data:/data \\
    vllm serve "$MODEL" --max-num-seqs 4 \\
    --speculative-config '{"method": "ngram", "num_speculative_tokens": 3}'
"""


def test_is_compose_run_and_the_files_it_reads() -> None:
    assert is_compose_run(["docker", "compose", "-f", "x.yml", "run", "--rm", "vllm"])
    assert is_compose_run(["docker-compose", "run", "vllm", "serve", "m"])
    assert not is_compose_run(["docker", "compose", "up", "-d"])
    assert not is_compose_run(["docker", "run", "img"])
    assert composes_run(["docker compose -f deploy/gpu.yml run vllm x"]) == {"gpu.yml"}
    assert "docker-compose.yml" in composes_run(["docker-compose run --rm vllm"])
    assert composes_run(["docker compose up -d"]) == set()


def test_the_run_replaces_the_service_command(tmp_path: Path) -> None:
    (tmp_path / "docker-compose.yml").write_text(COMPOSE)
    (tmp_path / "run.sh").write_text(SCRIPT)
    r = run([tmp_path / "run.sh", tmp_path / "docker-compose.yml"], tmp_path,
            gb10_lab(tmp_path, 1))
    d = r.deployment
    assert d["model"]["path"] == "Qwen/Qwen3-Coder-Next-FP8"  # the run's, not the service's
    assert d["serve"]["max_num_seqs"] == 4 and d["serve"].get("max_model_len") is None
    assert d["speculative"]["method"] == "ngram"
    assert d["speculative"]["num_speculative_tokens"] == 3
    assert d["engine"]["image"] == "spark-vllm:latest"
    # the run's command starts with `serve`: the image's entrypoint is taken to be vllm
    assert d["engine"]["container_args"] == [
        "--user", "1000:1000", "-v", f"{tmp_path}/models:/models:rw", "--entrypoint", "vllm",
        "-v", "/data:/data"]
    assert d["env"]["EXTRA"] == "1" and d["env"]["HF_HOME"] == "/state/hf"
    assert len(r.client_nodes) == 1 and d["nodes"] == ["spark-01"]
    assert any(u.text == "VLLM_MADE_UP_SWITCH" for u in r.unknown)


def test_the_compose_file_must_be_given(tmp_path: Path) -> None:
    (tmp_path / "run.sh").write_text(SCRIPT)
    with pytest.raises(InputError, match=r"run.sh:3: docker compose run: the compose file "
                       r"\(compose.yaml / docker-compose.yml\) was not given beside the script"):
        run([tmp_path / "run.sh"], tmp_path)
