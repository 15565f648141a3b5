"""A container whose entrypoint is a script file the input wrote or sent, with no command
(`docker run --entrypoint /serve.sh IMAGE`, compose `entrypoint: /serve.sh`), is read through
that script (importers/script_file.py); nothing is run."""

from __future__ import annotations

from pathlib import Path

import pytest
from reproduce_helpers import run

from sparktriage.config.deployment import load_deployment
from sparktriage.errors import InputError
from sparktriage.reproduce.importers import script_file

SERVE = "#!/bin/bash\nset -e\nexport VLLM_LOGGING_LEVEL=INFO\n" \
        "exec vllm serve Qwen/Qwen3-8B --max-num-seqs 4 --port 8011\n"


def _dep(result):
    return load_deployment(Path(result.out_dir) / "deployment.yaml")


def test_docker_run_entrypoint_is_a_heredoc_script(tmp_path: Path) -> None:
    script = tmp_path / "run.sh"
    script.write_text("#!/bin/bash\ncat > /opt/serve/serve.sh <<'EOS'\n" + SERVE + "EOS\n"
                      "chmod +x /opt/serve/serve.sh\n"
                      "docker run -d --gpus all -v /opt/serve:/srv --entrypoint /srv/serve.sh "
                      "vllm/vllm-openai:v0.32.0\n")
    result = run([script], tmp_path)
    dep = _dep(result)
    assert (dep.model.path, dep.serve.max_num_seqs, dep.serve.port) == ("Qwen/Qwen3-8B", 4, 8011)
    assert dep.env.get("VLLM_LOGGING_LEVEL") == "INFO"
    args = dep.engine.container_args
    assert args[args.index("--entrypoint") + 1] == "vllm"
    assert any("the container runs /srv/serve.sh, the here-document of line 2 (written to "
               "/opt/serve/serve.sh)" in m for m in result.mapped)


def test_compose_entrypoint_is_a_bound_script_sent_beside(tmp_path: Path) -> None:
    (tmp_path / "scripts").mkdir()
    (tmp_path / "scripts" / "serve.sh").write_text(SERVE)
    (tmp_path / "docker-compose.yml").write_text(
        "services:\n  llm:\n    image: vllm/vllm-openai:v0.32.0\n    network_mode: host\n"
        "    volumes: ['./scripts:/scripts:ro']\n    entrypoint: /scripts/serve.sh\n")
    result = run([tmp_path / "docker-compose.yml"], tmp_path)
    dep = _dep(result)
    assert (dep.model.path, dep.serve.max_num_seqs) == ("Qwen/Qwen3-8B", 4)
    assert any("the container runs /scripts/serve.sh, the file serve.sh sent beside the input"
               in m for m in result.mapped)


def test_a_script_neither_written_nor_sent_is_still_refused(tmp_path: Path) -> None:
    (tmp_path / "docker-compose.yml").write_text(
        "services:\n  llm:\n    image: vllm/vllm-openai:v0.32.0\n"
        "    volumes: ['/elsewhere/serve.sh:/serve.sh']\n    entrypoint: /serve.sh\n")
    with pytest.raises(InputError, match=r"docker-compose.yml:2: the container does not run "
                       r"vllm serve \(entrypoint '/serve.sh'\)"):
        run([tmp_path / "docker-compose.yml"], tmp_path)


def test_bound_script_outside_the_input_folder_or_too_large_is_not_read(tmp_path: Path,
                                                                     monkeypatch) -> None:
    from sparktriage.reproduce.importers.common import Ctx
    from sparktriage.reproduce.model import InputRef
    from sparktriage.reproduce.secrets import Placeholders

    inner = tmp_path / "in"
    inner.mkdir()
    (tmp_path / "serve.sh").write_text(SERVE)  # beside the folder, not in it
    (inner / "big.sh").write_text("#" * 64)
    ctx = Ctx(InputRef(path=str(inner / "compose.yml"), kind="compose"), Placeholders())
    ctx.mounts = [("../serve.sh", "/serve.sh"), ("./big.sh", "/big.sh")]
    assert script_file.script_text("/serve.sh", ctx, 3) is None
    monkeypatch.setattr(script_file, "MAX_SCRIPT_BYTES", 10)
    assert script_file.script_text("/big.sh", ctx, 3) is None
    assert [u.note for u in ctx.unknown] == ["the container's script big.sh is larger than 10 "
                                             "bytes; not read"]


def test_a_bound_script_that_cannot_be_read_is_an_unknowns_row(tmp_path: Path, monkeypatch) -> None:
    from sparktriage.reproduce.importers.common import Ctx
    from sparktriage.reproduce.model import InputRef
    from sparktriage.reproduce.secrets import Placeholders

    (tmp_path / "serve.sh").write_text(SERVE)
    ctx = Ctx(InputRef(path=str(tmp_path / "compose.yml"), kind="compose"), Placeholders())
    ctx.mounts = [("./serve.sh", "/serve.sh")]

    def unreadable(*_args, **_kwargs):
        raise PermissionError(13, "Permission denied")

    monkeypatch.setattr(script_file, "open", unreadable, raising=False)
    assert script_file.script_text("/serve.sh", ctx, 3) is None
    assert [u.note for u in ctx.unknown] == ["the container's script serve.sh: not read "
                                             "(Permission denied)"]
