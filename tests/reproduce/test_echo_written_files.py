"""Files written with `echo ... > F` / `printf ... > F` (`>>` appends) are kept like
here-document files (bash/files.py's bounded store, bash/writes.py), so a container that runs F
reads what the script wrote (the tom-doerr/llm start-vllm-pp3.sh shape); nothing is run."""

from __future__ import annotations

from pathlib import Path

from reproduce_helpers import run

from sparktriage.config.deployment import load_deployment
from sparktriage.reproduce.bash import files
from sparktriage.reproduce.bash import read_script
from sparktriage.reproduce.bash.writes import echo_text, printf_text


def test_echo_and_printf_text_as_bash_prints_it() -> None:
    assert echo_text(["a", "b"]) == "a b\n"
    assert echo_text(["-n", "a"]) == "a"
    assert echo_text(["-e", r"x\ty\n"]) == "x\ty\n\n"
    assert echo_text([r"x\ty"]) == "x\\ty\n"  # no -e: backslashes kept
    assert printf_text([r"%s=%s\n", "A", "1", "B", "2"]) == "A=1\nB=2\n"  # format reused
    assert printf_text(["100%% %d\\n"]) == "100% 0\n"
    assert printf_text([r"#!/bin/bash\nexec %s\n", "vllm serve m"]) == \
        "#!/bin/bash\nexec vllm serve m\n"


def test_redirections_kept_appended_and_bounded(monkeypatch) -> None:
    script = read_script('M=Qwen/Qwen3-8B\necho "#!/bin/bash" > /tmp/s.sh\n'
                         'echo "exec vllm serve $M" >> /tmp/s.sh\n'
                         "printf 'max-num-seqs: %d\\n' 4 > ./c.yaml\n"
                         "echo hi > /dev/null\necho log 2> /tmp/err.txt\n", "t.sh")
    assert script.files == {"/tmp/s.sh": (2, "#!/bin/bash\nexec vllm serve Qwen/Qwen3-8B\n"),
                            "c.yaml": (4, "max-num-seqs: 4\n")}
    monkeypatch.setattr(files, "MAX_FILES", 1)
    script = read_script("echo a > /tmp/a\necho b > /tmp/b\n", "t.sh")
    assert list(script.files) == ["/tmp/a"]
    assert any("/tmp/b not kept" in n for n in script.notes)


def test_container_runs_the_echo_written_script(tmp_path: Path) -> None:
    script = tmp_path / "start-vllm.sh"
    script.write_text(
        '#!/bin/bash\nMODEL="nvidia/Qwen3.5-397B-A17B-NVFP4"\n'
        'VLLM_ARGS="--max-num-seqs 4 --trust-remote-code"\n'
        'VLLM_ARGS="$VLLM_ARGS --gpu-memory-utilization 0.45"\n'
        'echo "#!/bin/bash" > /home/u/llm/vllm-serve-cmd.sh\n'
        'echo "exec vllm serve $MODEL $VLLM_ARGS" >> /home/u/llm/vllm-serve-cmd.sh\n'
        "docker run -d --gpus all --network host "
        "-v /home/u/llm/vllm-serve-cmd.sh:/vllm-serve-cmd.sh:ro --entrypoint bash "
        "vllm/vllm-openai:v0.32.0 /vllm-serve-cmd.sh\n")
    result = run([script], tmp_path)
    dep = load_deployment(Path(result.out_dir) / "deployment.yaml")
    assert dep.model.path == "nvidia/Qwen3.5-397B-A17B-NVFP4"
    assert (dep.serve.max_num_seqs, dep.serve.gpu_memory_utilization) == (4, 0.45)
    assert dep.model.trust_remote_code is True
    assert any("the container runs /vllm-serve-cmd.sh" in m and "line 5" in m
               for m in result.mapped)
