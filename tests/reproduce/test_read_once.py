"""One input is parsed once and walked once per way of reading it, however many times the
command reads it (to find the scripts another runs, to import it, to look for a unit it
writes): the documented 5 s parse and walk bounds hold for the input, not for each reading."""

from __future__ import annotations

import builtins
import io
import os
from pathlib import Path

import pytest

from reproduce_helpers import gb10_lab, run
from sparktriage import yamlsafe
from sparktriage.errors import InputError
from sparktriage.reproduce.bash import reading, tree
from sparktriage.reproduce.read.readall import import_all
from sparktriage.reproduce.secrets import Placeholders

INPUTS = Path(__file__).parent / "inputs"


def _counted(monkeypatch) -> dict[str, int]:
    calls = {"parse": 0, "walk": 0}

    def count(name, real):
        def wrapped(*args, **kwargs):
            calls[name] += 1
            return real(*args, **kwargs)
        return wrapped
    monkeypatch.setattr(tree, "_parse", count("parse", tree._parse))
    monkeypatch.setattr(reading, "_walk", count("walk", reading._walk))
    return calls


def test_a_paste_that_runs_no_server_is_parsed_once(tmp_path: Path, monkeypatch) -> None:
    """A terminal paste was parsed as it came (to find the scripts it runs), then its typed
    commands twice more (imported, then looked at for a unit it writes): three parses and
    four walks of up to 5 s each. Now: one parse, and the two walks of the import (its
    arguments absent, then unknown)."""
    calls = _counted(monkeypatch)
    path = tmp_path / "paste.txt"
    path.write_text("".join(f"me@spark-01:~$ nvidia-smi --id={i} {tmp_path.name}\n"
                            for i in range(50))
                    + "me@spark-01:~$ f() { vllm serve /m; }\nGPU 0: NVIDIA GB10\n")
    with pytest.raises(InputError, match="no server command found"):
        import_all([path], Placeholders())
    assert calls == {"parse": 1, "walk": 2}


def test_a_script_another_runs_is_parsed_once(tmp_path: Path, monkeypatch) -> None:
    """serve.sh is read on its own (does it run another script?) and inside run.sh: one parse
    each; run.sh's reading that finds what it runs is the one imported."""
    calls = _counted(monkeypatch)
    (tmp_path / "serve.sh").write_text(f"vllm serve /m --port $1  # {tmp_path.name}\n")
    (tmp_path / "run.sh").write_text(f"bash serve.sh 8001  # {tmp_path.name}\n")
    imported = import_all([tmp_path / "run.sh", tmp_path / "serve.sh"], Placeholders())
    assert [i.input.path for i in imported] == [str(tmp_path / "run.sh")]
    assert imported[0].deployment["serve"]["port"] == 8001
    assert calls == {"parse": 2, "walk": 2}


# each kind of input, as small as it comes; env dumps and collect-env come with a serve line
_KINDS = {
    "serve": ("run.sh", "vllm serve /m --port 8001\n"),
    "docker": ("run.sh", "docker run --gpus all --network host img vllm serve /m\n"),
    "compose": ("docker-compose.yml", "services:\n  vllm:\n    image: img\n"
                "    network_mode: host\n    command: [bash, -c, 'vllm serve /m --port 8001']\n"),
    "deployment": ("client.yaml", "schema_version: 1\nlab: lab.yaml\nmodel: {path: /m}\n"),
    "recipe": ("config.yaml", "model: /m\ntensor_parallel_size: 1\nmax_model_len: 4096\n"),
    "collect-env": ("collect-env.txt", (INPUTS / "gb10.collect-env.txt").read_text()),
    "env": ("client.env", "NCCL_DEBUG=INFO\nOMP_NUM_THREADS=8\n"),
    "systemd": ("vllm.service", "[Unit]\nDescription=vllm\n[Service]\n"
                "ExecStart=/usr/bin/vllm serve /m --port 8001\n"),
    "kubernetes": ("pod.yaml", "apiVersion: v1\nkind: Pod\nmetadata: {name: m}\nspec:\n"
                   "  containers:\n    - name: vllm\n      image: vllm/vllm-openai:v0.32.0\n"
                   "      command: [sh, -c, 'vllm serve /m --port 8001']\n"),
    "slurm": ("job.sbatch", "#!/bin/bash\n#SBATCH -N 1\n#SBATCH --gpus-per-node=1\n"
              "srun vllm serve /m --port 8001\n"),
}
_YAML = {"compose", "deployment", "recipe", "kubernetes"}


@pytest.mark.parametrize("kind", sorted(_KINDS))
def test_every_kind_is_read_once_and_parsed_once(tmp_path: Path, monkeypatch,
                                                 kind: str) -> None:
    """The whole command (read, import, plan, write) opens each input file once, parses its
    YAML once (the kind decided from the same parse the importer reads) and parses each shell
    text (a script, a container's `sh -c` string) once."""
    name, text = _KINDS[kind]
    path = tmp_path / name
    path.write_text(text)
    inputs = [path]
    if kind in ("collect-env", "env"):
        (tmp_path / "serve.sh").write_text("vllm serve /m --port 8001\n")
        inputs.append(tmp_path / "serve.sh")
    opens: dict[str, int] = {}
    real_open = builtins.open

    def counted_open(file, *args, **kwargs):
        if isinstance(file, (str, os.PathLike)) and os.path.abspath(file) in map(str, inputs):
            opens[os.path.abspath(file)] = opens.get(os.path.abspath(file), 0) + 1
        return real_open(file, *args, **kwargs)
    monkeypatch.setattr(builtins, "open", counted_open)
    monkeypatch.setattr(io, "open", counted_open)
    yaml_parses: dict[str, int] = {}
    real_compose = yamlsafe.compose

    def counted_compose(text_, origin):
        yaml_parses[origin] = yaml_parses.get(origin, 0) + 1
        return real_compose(text_, origin)
    monkeypatch.setattr(yamlsafe, "compose", counted_compose)
    shell_parses: dict[str, int] = {}
    real_parse = tree._parse

    def counted_parse(text_):
        shell_parses[text_] = shell_parses.get(text_, 0) + 1
        return real_parse(text_)
    monkeypatch.setattr(tree, "_parse", counted_parse)

    result = run(inputs, tmp_path, gb10_lab(tmp_path, 1))
    assert [i.kind for i in result.inputs][0] == kind
    assert opens == {str(p): 1 for p in inputs}
    # YAML once, whatever the kind (a collect-env's `key: value` lines are tried as YAML once)
    assert yaml_parses.get(str(path), 0) == 1 if kind in _YAML else yaml_parses.get(
        str(path), 0) <= 1
    assert max(shell_parses.values(), default=1) == 1
