"""Issue 16: no input reaches exit 70 (internal error) or 130 (interrupted).

A hypothesis property drives each command's input parser in process through `cli.app.main`
with made-up files (random bytes, and mutations of valid inputs) and accepts only the
documented exit codes of docs/exit-codes.md (0, 1, 2, 3; 130 is for real interrupts only).
"""

from __future__ import annotations

import atexit
import contextlib
import io
import json
import os
import shutil
import tempfile
from pathlib import Path

import pytest
from hypothesis import HealthCheck, given, settings, strategies as st

from sparktriage.cli.app import main

from hardening_cli import REPO
from test_fuzz import BUNDLE, DEPLOYMENT, LOG, RECORDS, RULE, mutations

pytestmark = pytest.mark.fuzz

EXAMPLES = max(20, int(os.environ.get("SPARKTRIAGE_FUZZ_EXAMPLES", "2000")) // 20)
PROPERTY = settings(max_examples=EXAMPLES, deadline=None, database=None, derandomize=True,
                    suppress_health_check=list(HealthCheck))
ALLOWED = {0, 1, 2, 3}
WORK = Path(tempfile.mkdtemp(prefix="sparktriage-exits-"))
atexit.register(shutil.rmtree, WORK, True)


def run(*args: str) -> int:
    out, err = io.StringIO(), io.StringIO()
    with contextlib.redirect_stdout(out), contextlib.redirect_stderr(err):
        try:
            main(list(args))
        except SystemExit as exc:
            code = exc.code if isinstance(exc.code, int) else (0 if exc.code is None else 2)
        else:
            code = 0
    assert code in ALLOWED, (args, code, err.getvalue()[-2000:])
    assert "Traceback" not in err.getvalue() and "internal error" not in err.getvalue()
    return code


def _put(name: str, data: bytes) -> Path:
    path = WORK / name
    if path.is_dir():
        shutil.rmtree(path)
    path.parent.mkdir(parents=True, exist_ok=True)
    path.write_bytes(data)
    return path


@PROPERTY
@given(mutations(DEPLOYMENT))
def test_launch_dry_run(data):
    run("launch", str(_put("deployment.yaml", data)), "--dry-run")


@PROPERTY
@given(mutations(LOG), st.booleans())
def test_logs_and_stalls_of_a_log(data, records):
    path = _put("server.lines.jsonl" if records else "server.log", RECORDS + data if records
                else data)
    run("logs", str(path))
    run("stalls", str(path))


@PROPERTY
@given(mutations(BUNDLE))
def test_logs_and_stalls_of_an_archive(data):
    path = _put("bundle.tar.gz", data)
    run("logs", str(path))
    run("stalls", str(path))


@PROPERTY
@given(mutations(RULE))
def test_rules_check(data):
    folder = WORK / "rules"
    folder.mkdir(exist_ok=True)
    shutil.copy(REPO / "rules" / "_vocabulary.yaml", folder / "_vocabulary.yaml")
    (folder / "rule.yaml").write_bytes(data)
    run("rules", "check", "--rules", str(folder), "--no-fixtures")


@PROPERTY
@given(st.binary(max_size=300), st.binary(max_size=300))
def test_verify(manifest, signature):
    folder = WORK / "report"
    shutil.rmtree(folder, ignore_errors=True)
    folder.mkdir()
    (folder / "MANIFEST").write_bytes(manifest)
    (folder / "MANIFEST.sig").write_bytes(signature)
    run("verify", str(folder))


@PROPERTY
@given(mutations(json.dumps({"schema_version": 1, "kind": "sparktriage-run",
                             "command": ["sparktriage"]}).encode()))
def test_bench_rebuild(data):
    folder = WORK / "run"
    shutil.rmtree(folder, ignore_errors=True)
    (folder / "launches" / "L001").mkdir(parents=True)
    (folder / "run.json").write_bytes(data)
    (folder / "launches" / "L001" / "requests.jsonl").write_bytes(data)
    run("bench", "--rebuild", str(folder))


@PROPERTY
@given(st.text(max_size=80))
def test_collect_dry_run_cmd(text):
    run("collect", "--cmd", text, "--dry-run", "--until-ready", "--out", str(WORK / "c"))


def test_the_valid_seeds_reach_the_parsers():
    """The properties are not vacuous: the same command lines with valid input succeed."""
    assert run("launch", str(REPO / "examples" / "tiny-local.yaml"), "--dry-run") == 0
    assert run("logs", str(_put("seed.log", LOG))) in (0, 1)
    folder = WORK / "seed-rules"
    folder.mkdir(exist_ok=True)
    shutil.copy(REPO / "rules" / "_vocabulary.yaml", folder / "_vocabulary.yaml")
    (folder / "rule.yaml").write_bytes(RULE)
    assert run("rules", "check", "--rules", str(folder), "--no-fixtures") in (0, 1)
    assert run("collect", "--cmd", "vllm serve m --port 8123", "--dry-run", "--until-ready",
               "--out", str(WORK / "c")) == 0
    assert run("stalls", str(_put("seed.lines.jsonl", RECORDS))) in (0, 1)
