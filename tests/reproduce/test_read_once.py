"""One input is parsed once and walked once per way of reading it, however many times the
command reads it (to find the scripts another runs, to import it, to look for a unit it
writes): the documented 5 s parse and walk bounds hold for the input, not for each reading."""

from __future__ import annotations

from pathlib import Path

import pytest

from sparktriage.errors import InputError
from sparktriage.reproduce.bash import reading, tree
from sparktriage.reproduce.readall import import_all
from sparktriage.reproduce.secrets import Placeholders


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
