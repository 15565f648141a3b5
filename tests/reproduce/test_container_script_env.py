"""A container's environment is its `sh -c` script's environment (gap 2 of the corpus review):
compose `environment:` (after .env / env_file interpolation) and `docker run -e` values are seen
by `$VAR` in the script, the script's own assignments win, and a variable neither sets stays a
placeholder."""

from __future__ import annotations

from pathlib import Path

from reproduce_helpers import run

from sparktriage.config.deployment import load_deployment

COMPOSE = """\
services:
  vllm:
    image: vllm/vllm-openai:v0.32.0
    network_mode: host
    env_file: [model.env]
    environment:
      DRAFT_SAMPLE_METHOD: "${DRAFT_SAMPLE_METHOD:-greedy}"
      MTP_TOKENS: "4"
      MAX_SEQS: "8"
    entrypoint: []
    command:
      - bash
      - -lc
      - >
        MAX_SEQS=2;
        SPEC="{\\"method\\":\\"mtp\\",\\"num_speculative_tokens\\":$${MTP_TOKENS},\\"draft_sample_method\\":\\"$${DRAFT_SAMPLE_METHOD}\\"}";
        exec vllm serve $${MODEL_DIR} --max-num-seqs $${MAX_SEQS}
        --speculative-config "$${SPEC}" --served-model-name $${SERVED:-fallback}
"""


def _deployment(result):
    return load_deployment(Path(result.out_dir) / "deployment.yaml")


def test_compose_environment_reaches_the_bash_c_script(tmp_path: Path) -> None:
    (tmp_path / "docker-compose.yml").write_text(COMPOSE)
    (tmp_path / ".env").write_text("DRAFT_SAMPLE_METHOD=probabilistic\n")
    (tmp_path / "model.env").write_text("MODEL_DIR=/models/ds-v4\n")
    result = run([tmp_path / "docker-compose.yml"], tmp_path)
    dep = _deployment(result)
    assert dep.model.path == "/models/ds-v4"  # env_file value
    assert dep.speculative is not None
    assert dep.speculative.method == "mtp" and dep.speculative.num_speculative_tokens == 4
    written = (Path(result.out_dir) / "deployment.yaml").read_text()
    assert "draft_sample_method: probabilistic" in written  # .env over the default
    assert "DRAFT_SAMPLE_METHOD" not in result.placeholders
    assert dep.serve.max_num_seqs == 2  # the script's own assignment wins
    assert dep.model.name == "fallback"  # set by neither: the script's default


def test_docker_run_e_values_reach_the_sh_c_script(tmp_path: Path) -> None:
    script = tmp_path / "serve.sh"
    script.write_text("#!/bin/bash\ndocker run --gpus all --network host -e MODEL=Qwen/Qwen3-8B "
                      "-e TP=1 vllm/vllm-openai:v0.32.0 "
                      "sh -c 'vllm serve $MODEL --tensor-parallel-size $TP --max-num-seqs $N'\n")
    result = run([script], tmp_path)
    dep = _deployment(result)
    assert dep.model.path == "Qwen/Qwen3-8B"
    assert dep.parallelism.tp == 1
    assert result.placeholders == []
    # in neither the -e values nor the script: a row, not a value
    assert "${N}" in [u.text for u in result.unknown]
