"""The fast tier's guard (tests/conftest.py): a test outside `slow` that would start the test
bed's real vLLM fails before anything starts; other engines (fake beds, the simulator) pass."""

from __future__ import annotations

import stat
from pathlib import Path

import pytest

from sparktriage.testbed.paths import locate
from sparktriage.testbed.repro import ServeRun, record
from sparktriage.testbed.server import ServeSpec, served


def _installed_bed(tmp_path: Path, monkeypatch) -> Path:
    """Make a stand-in the installed test bed (SPARKTRIAGE_VLLM_VENV): its `vllm` writes a
    file if it is ever run."""
    venv = tmp_path / "venv"
    (venv / "bin").mkdir(parents=True)
    vllm = venv / "bin" / "vllm"
    ran = tmp_path / "ran"
    vllm.write_text(f"#!/bin/sh\ntouch {ran}\nsleep 30\n")
    vllm.chmod(vllm.stat().st_mode | stat.S_IEXEC)
    (tmp_path / "bed" / "models" / "tiny-llama").mkdir(parents=True)
    monkeypatch.setenv("SPARKTRIAGE_VLLM_VENV", str(venv))
    monkeypatch.setenv("SPARKTRIAGE_TESTBED", str(tmp_path / "bed"))
    return ran


def test_a_fast_test_that_serves_the_installed_vllm_fails_before_starting_it(tmp_path, monkeypatch):
    ran = _installed_bed(tmp_path, monkeypatch)
    bed = locate()
    with pytest.raises(pytest.fail.Exception, match="not marked slow"):
        with served(bed, ServeSpec(model=bed.model()), tmp_path / "served", startup_s=5):
            pass
    with pytest.raises(pytest.fail.Exception, match="not marked slow"):
        record(bed, ServeRun(str(bed.model()), tmp_path / "scratch", max_s=5), tmp_path / "b")
    assert not ran.exists()
