"""The node agent starts a process with only the allow-listed names of its own environment, the
given values, in a fresh private folder it removes afterwards (what reproduce's live capture
relies on: docs/security.md)."""

from __future__ import annotations

import json
import sys
from pathlib import Path

from sparktriage.collect.node_agent import env_allowed
from sparktriage.collect.plan import COLLECTORS, default_plan
from sparktriage.launch.attach_collect import CollectRequest, run_collect

SHOW = ("import json, os, stat, time\n"
        "print(json.dumps({'cwd': os.getcwd(), 'mode': stat.S_IMODE(os.stat('.').st_mode),"
        " 'env': sorted(os.environ)}), flush=True)\n"
        "time.sleep(1.5)\n")


def test_allow_list_names_and_prefixes() -> None:
    allow = ["HOME", "NCCL_*", "LC_*"]
    assert [n for n in ("HOME", "HOMEX", "NCCL_DEBUG", "NCCL", "LC_ALL", "LD_PRELOAD")
            if env_allowed(n, allow)] == ["HOME", "NCCL_DEBUG", "LC_ALL"]


def test_process_gets_only_allowed_names_in_a_private_folder(tmp_path: Path, monkeypatch) -> None:
    monkeypatch.setenv("SPARK_OK_A", "1")
    monkeypatch.setenv("PYTHONPATH", str(tmp_path))
    monkeypatch.setenv("LD_PRELOAD", "")
    monkeypatch.chdir(tmp_path)
    plan = default_plan("local", disable=tuple(COLLECTORS))
    req = CollectRequest(out=tmp_path / "bundle", cmd=(sys.executable, "-I", "-c", SHOW),
                         duration_s=4.0, plan=plan, grace_s=2.0, env_allow=("SPARK_OK_*",),
                         env=(("GIVEN", "yes"),), private_cwd=True)
    run_collect(req)
    lines = [json.loads(line)["line"] for path in (tmp_path / "bundle").rglob("server.lines.jsonl")
             for line in path.read_text().splitlines()]
    shown = json.loads(next(line for line in lines if line.startswith("{")))
    assert set(shown["env"]) - {"LC_CTYPE"} == {"SPARK_OK_A", "GIVEN"}  # LC_CTYPE: Python's own
    assert shown["mode"] == 0o700 and Path(shown["cwd"]).name.startswith("sparktriage-proc-")
    assert not Path(shown["cwd"]).exists()  # removed at teardown
    assert not str(shown["cwd"]).startswith(str(tmp_path))
