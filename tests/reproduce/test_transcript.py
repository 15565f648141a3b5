"""Terminal pastes (reproduce/bash/transcript.py): prompts taken off, output lines blanked.

Minimal synthetic inputs written for these tests (the published case is corpus 36).
"""

from __future__ import annotations

from pathlib import Path

from reproduce_helpers import gb10_lab, run
from sparktriage.reproduce.bash.transcript import commands_of, is_transcript


def test_a_script_without_prompts_is_unchanged() -> None:
    text = "#!/bin/bash\nX=1\n# $ not a prompt\nvllm serve m --port $PORT\n"
    assert not is_transcript(text)
    assert commands_of(text) == (text, 0)


def test_prompts_are_taken_off_and_output_blanked_keeping_line_numbers() -> None:
    text = ("user@spark-01:~/x$ export TP=2\n"
            "(venv) me@gx10-a1b2:/opt# vllm serve org/m \\\n"
            "  -tp $TP\n"
            "INFO 12-01 starting (pid 12)\n"
            "[me@spark-02 ~]$ echo done\n"
            "done\n")
    out, prompts = commands_of(text)
    assert prompts == 3
    assert out.split("\n") == ["export TP=2", "vllm serve org/m \\", "  -tp $TP", "",
                               "echo done", "", ""]


def test_bare_dollar_prompts_and_secondary_prompts() -> None:
    text = ("$ cat > c.yaml <<EOF\n"
            "> max-model-len: 4096\n"
            "> EOF\n"
            "$ vllm serve org/m --config c.yaml\n"
            "Traceback (most recent call last):\n")
    out, prompts = commands_of(text)
    assert prompts == 2
    assert out.split("\n") == ["cat > c.yaml <<EOF", "max-model-len: 4096", "EOF",
                               "vllm serve org/m --config c.yaml", "", ""]


def test_a_pasted_session_reproduces_its_command(tmp_path: Path) -> None:
    paste = tmp_path / "session.txt"
    paste.write_text(
        "me@spark-01:~/spark-vllm-docker$ HF_HUB_OFFLINE=1 ./launch-cluster.sh exec vllm serve"
        "  org/moe  -tp 2 --distributed-executor-backend ray --gpu-memory-utilization 0.7\n"
        "Auto-detecting interfaces...\n"
        "  Detected Local IP: 198.51.100.27 (198.51.100.27/16)\n")
    r = run([paste], tmp_path, gb10_lab(tmp_path, 2))
    d = r.deployment
    assert d["model"]["path"] == "org/moe"
    assert d["parallelism"]["tp"] == 2 and d["engine"]["backend"] == "ray"
    assert d["serve"]["gpu_memory_utilization"] == 0.7
    assert any("a terminal paste: the 1 command(s) typed at its prompts are read" in n
               for n in r.notes)
    assert not any("Detected" in u.text for u in r.unknown)  # output is not a command
