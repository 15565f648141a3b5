"""Hostile inputs: nothing runs, one-line errors with documented exit codes, no secret written."""

from __future__ import annotations

import subprocess
import sys
from pathlib import Path

import pytest

SECRET = "hf_PlantedSecretValue0123456789ab"


def _cli(tmp_path: Path, text: str | bytes, name: str = "input.sh") -> subprocess.CompletedProcess:
    path = tmp_path / name
    path.write_bytes(text if isinstance(text, bytes) else text.encode())
    return subprocess.run([sys.executable, "-m", "sparktriage", "reproduce", str(path), "--out",
                           str(tmp_path / "out"), "--no-capture"], capture_output=True, text=True,
                          timeout=60, cwd=tmp_path)


def _main(tmp_path: Path, text: str | bytes, capsys, name: str = "input.sh"):
    """The CLI in this process (same code path and exit status, no interpreter start)."""
    from sparktriage.cli.app import main
    path = tmp_path / name
    path.write_bytes(text if isinstance(text, bytes) else text.encode())
    with pytest.raises(SystemExit) as exit_info:
        main(["reproduce", str(path), "--out", str(tmp_path / "out"), "--no-capture"])
    captured = capsys.readouterr()
    return subprocess.CompletedProcess([], exit_info.value.code, captured.out, captured.err)


HOSTILE = {
    "substitution": "vllm serve /m --master-addr $(touch {marker})",
    "backticks": "vllm serve /m --served-model-name `touch {marker}`",
    "semicolon": "vllm serve /m; touch {marker}",
    "and": "vllm serve /m && touch {marker}",
    "pipe": "vllm serve /m | touch {marker}",
    "newline-in-quotes": "vllm serve /m --served-model-name 'a\ntouch {marker}'",
    "unbalanced": "vllm serve /m --served-model-name 'oops",
    "compose-command": "services:\n  v:\n    image: img\n    command: vllm serve /m; touch {marker}\n",
    "docker-substitution": "docker run img vllm serve /m --port $(touch {marker})",
    "sh-c-and": 'docker run img bash -c "vllm serve /m && touch {marker}"',
    "substitution-in-quotes": 'HF_TOKEN={secret} vllm serve /m --chat-template "$(touch {marker})"',
}


@pytest.mark.parametrize("case", sorted(HOSTILE))
def test_hostile_text(case: str, tmp_path: Path, capsys) -> None:
    marker = tmp_path / "planted"
    done = _main(tmp_path, HOSTILE[case].format(marker=marker, secret=SECRET), capsys)
    assert done.returncode == 2, done.stderr
    lines = [line for line in done.stderr.splitlines() if line.strip()]
    assert len(lines) == 1 and lines[0].startswith("error: "), done.stderr
    assert "Traceback" not in done.stderr
    assert not marker.exists()
    assert SECRET not in done.stderr + done.stdout


def test_nul_and_huge(tmp_path: Path, capsys) -> None:
    done = _main(tmp_path, b"vllm serve /m\x00 --port 1", capsys)
    assert done.returncode == 2 and "NUL" in done.stderr and len(done.stderr.splitlines()) == 1
    done = _main(tmp_path, "vllm serve /m --served-model-name " + "x" * (10 * 1024 * 1024), capsys)
    assert done.returncode == 2 and len(done.stderr.splitlines()) == 1
    assert "larger than" in done.stderr


def test_secrets_in_no_written_byte(tmp_path: Path) -> None:
    other = "sk-proj-AnotherPlantedKey12345678"
    text = (f"export HF_TOKEN={SECRET}\nexport HF_HUB_URL=https://user:{other}@hub.example\n"
            f"vllm serve /m --api-key {other} --hf-overrides '{{\"token\": \"{SECRET}\"}}' "
            f"--served-model-name {SECRET}\n")
    done = _cli(tmp_path, text)
    assert done.returncode == 0, done.stderr
    for path in (tmp_path / "out").iterdir():
        blob = path.read_text()
        assert SECRET not in blob and other not in blob, path
    assert SECRET not in done.stderr and other not in done.stderr
    assert "supply on the lab" in done.stderr


def test_unknown_kind(tmp_path: Path, capsys) -> None:
    done = _main(tmp_path, "hello world\nthis is not a config\n", capsys, "x.txt")
    assert done.returncode == 2 and "cannot tell what kind" in done.stderr


def test_pipe_to_tee_is_a_note(tmp_path: Path, capsys) -> None:
    done = _main(tmp_path, "vllm serve /m --port 8001 2>&1 | tee log.txt &\n", capsys)
    assert done.returncode == 0, done.stderr
    assert "piped to tee" in done.stderr
    assert not (tmp_path / "log.txt").exists()
