"""The wrappers' table (reproduce/meaning/wrappers.py): one row per program that runs another
command, read the same way by every reader: the server found under `kubectl exec POD -- ...`
and `kubectl run NAME --image=I -- ...`, the image a `kubectl run` gives, a script fed to
`kubectl exec -i POD -- bash`, and the shell reader's own list of programs that run their
arguments covering the table's local wrappers.

Minimal synthetic inputs written for these tests (kubectl's own syntax: `kubectl exec --help`,
`kubectl run --help`).
"""

from __future__ import annotations

from pathlib import Path

from reproduce_helpers import gb10_lab, run
from sparktriage.reproduce.bash import walk
from sparktriage.reproduce.meaning import job_wrappers
from sparktriage.reproduce.meaning.servers import image_index, strip_wrappers
from sparktriage.reproduce.meaning.stdin import reads_stdin
from sparktriage.reproduce.meaning.wrappers import TABLE, lookup, unwrap


def _write(tmp: Path, text: str) -> Path:
    path = tmp / "run.sh"
    path.write_text(text)
    return path


def test_kubectl_exec_runs_its_command_in_the_pod(tmp_path: Path) -> None:
    script = _write(tmp_path, "kubectl exec -it -n serving -c vllm vllm-0 -- vllm serve "
                              "org/m --tensor-parallel-size 2 --max-model-len 4096\n")
    r = run([script], tmp_path, gb10_lab(tmp_path, 2))
    assert r.deployment["model"]["path"] == "org/m"
    assert r.deployment["parallelism"]["tp"] == 2
    assert r.deployment["serve"]["max_model_len"] == 4096
    assert any(n.endswith("line 1: server command found inside `kubectl exec vllm-0`")
               for n in r.notes)
    # read as the table's row, not as a launcher whose arguments are guessed
    assert not any("a launcher not given" in n for n in r.notes)


def test_kubectl_exec_reads_a_shell_string_and_a_heredoc(tmp_path: Path) -> None:
    script = _write(tmp_path, "kubectl exec vllm-0 -- bash -c 'export A=1; vllm serve org/m "
                              "--max-model-len 2048'\n"
                              "kubectl exec -i vllm-1 -- bash <<'EOF'\necho up\nEOF\n")
    r = run([script], tmp_path, gb10_lab(tmp_path, 1))
    assert r.deployment["serve"]["max_model_len"] == 2048
    assert reads_stdin(["kubectl", "exec", "-i", "vllm-1", "--", "bash"]) == \
        "kubectl exec vllm-1"
    assert reads_stdin(["kubectl", "exec", "vllm-1", "--", "vllm", "serve"]) is None


def test_kubectl_run_gives_the_image_and_env(tmp_path: Path) -> None:
    script = _write(tmp_path, "kubectl run vllm --image=vllm/vllm-openai:v0.9.1 --restart Never "
                              "--env HF_HOME=/cache -- vllm serve org/m --max-model-len 1024\n")
    r = run([script], tmp_path, gb10_lab(tmp_path, 1))
    assert r.deployment["serve"]["max_model_len"] == 1024
    assert r.deployment["engine"]["image"] == "vllm/vllm-openai:v0.9.1"
    assert any(n.endswith("line 1: server command found inside `kubectl run vllm`")
               for n in r.notes)
    wrapped = job_wrappers.container_of(["kubectl", "run", "vllm", "--image",
                                         "vllm/vllm-openai:v0.9.1", "--", "vllm", "serve"])
    assert (wrapped.image, wrapped.wrapper, wrapped.runnable) == \
        ("vllm/vllm-openai:v0.9.1", "kubectl run", True)


def test_rows_say_where_the_command_starts() -> None:
    read = unwrap(["kubectl", "exec", "-n", "ns", "--container", "c", "pod-0", "--", "ls", "-l"])
    assert (read.operands, read.command, read.given("pod"), read.given("container")) == \
        (("pod-0",), ("ls", "-l"), ["pod-0"], ["c"])
    read = unwrap(["ssh", "-p", "2222", "-o", "BatchMode=yes", "node2", "nvidia-smi", "-L"])
    assert (read.given("host"), read.command) == (["node2"], ("nvidia-smi", "-L"))
    read = unwrap(["docker", "run", "-d", "-eA=1", "-v", "/a:/b", "--name", "x", "img", "sh"])
    assert (read.given("image"), read.given("env"), read.given("bind"), read.command) == \
        (["img"], ["A=1"], ["/a:/b"], ("sh",))
    assert image_index(["docker", "container", "run", "--rm", "-p", "8000:8000", "img"]) == 6
    assert unwrap(["sudo", "-u", "svc", "-E", "nohup", "x"]).command == ("nohup", "x")
    assert unwrap(["kubectl", "get", "pods"]) is None  # not a wrapper: no row
    assert strip_wrappers(["srun", "-N1", "apptainer", "exec", "--nv", "-B", "/a", "v.sif",
                           "vllm", "serve", "m"], {}) == ["vllm", "serve", "m"]


def test_every_row_is_found_by_its_names() -> None:
    for row in TABLE:
        for name in row.names:
            assert lookup([f"/usr/bin/{name}", *row.sub, "x"]) is row


def test_the_shell_reader_list_covers_the_local_wrappers() -> None:
    """bash/walk.py follows another input script a wrapper runs with its own list (the shell
    reader knows no vLLM and imports nothing of the meaning stage): every program the table
    takes off in front of a command on this machine, in a job or in a container is in it, but
    `sbatch`/`salloc` (a batch job is read as a SLURM input of its own) and `xargs` (its
    arguments come from its input, not its words)."""
    taken = {n for row in TABLE if row.taken_off and not row.sub or row.names[0] == "apptainer"
             for n in row.names}
    assert taken - walk._RUNS_ITS_COMMAND == {"salloc", "sbatch", "xargs"}


def test_harmless_commands_are_said_by_their_category(tmp_path: Path) -> None:
    """meaning/harmless.py's one table: bookkeeping is not listed in a launch script and a note
    in a container's; looking is a note everywhere; a command that acts on its machine
    (`mkdir`, `ulimit`) is an unknowns row on the host and a note inside a container; `exit` is
    not listed on the host and a row in a container's script; anything else is a row
    everywhere."""
    script = _write(tmp_path, "set -e\nmkdir -p /srv/cache\nulimit -n 65536\necho starting\n"
                              "apt-get install -y jq\n[ -d /srv ] || exit 3\n"
                              "docker run --gpus all img bash -c 'mkdir -p /c && ulimit -n 1 && "
                              "echo in && apt-get install -y jq && shift && [ -d /c ] || exit 4; "
                              "vllm serve org/m'\n")
    r = run([script], tmp_path, gb10_lab(tmp_path, 1))
    rows = {u.text for u in r.unknown}
    notes = "\n".join(r.notes)
    assert {"mkdir -p /srv/cache", "ulimit -n 65536", "apt-get install -y jq"} <= rows
    assert "set -e" not in rows and "set -e" not in notes  # bookkeeping: not listed
    assert "ignored: echo starting" in notes
    assert "`mkdir -p /c` in the container's script: not needed to reproduce" in notes
    assert "`ulimit -n 1` in the container's script" in notes
    assert "mkdir -p /c" not in rows and any(u.text == "apt-get install -y jq" and
                                             "container's script" in u.note for u in r.unknown)
    # an `exit` ends a container's one script before its server: a row there, quiet on the host
    assert "exit 4" in rows and "exit 3" not in rows and "exit 3" not in notes
    assert "`shift` in the container's script: not needed to reproduce" in notes
