"""Validators: the shipped rule set is clean, and each validator catches a planted problem."""

from __future__ import annotations

import shutil
from pathlib import Path

import pytest

from sparktriage.stalls.loader import load_directory
from sparktriage.stalls.validators import TAXONOMY, VALIDATORS, validate

RULES = Path(__file__).resolve().parents[2] / "rules"


def _problems(tmp_path: Path, edits: dict[str, tuple[str, str]] | None = None, drop=()):
    folder = tmp_path / "rules"
    shutil.copytree(RULES, folder)
    for name, (old, new) in (edits or {}).items():
        path = folder / name
        text = path.read_text()
        assert old in text, (name, old)
        path.write_text(text.replace(old, new))
    for name in drop:
        (folder / name).unlink()
    ruleset, problems = load_directory(folder)
    return problems + validate(ruleset)


def test_shipped_rules_are_clean(tmp_path):
    assert _problems(tmp_path) == []


def test_all_fifteen_ids_are_covered():
    assert len(TAXONOMY) == 15
    assert {p.stem for p in RULES.glob("*.yaml")} - {"_vocabulary"} == set(TAXONOMY)


@pytest.mark.parametrize("name, old, new, check, needle", [
    ("cold-storage.yaml", "id: cold-storage", "id: cold-storage-x", "id-matches-file", "file"),
    ("cold-storage.yaml", "id: cold-storage", "id: cold-storag", "taxonomy", "not in the taxonomy"),
    ("cold-storage.yaml", "signal: procs.top_thread_cpu", "signal: procs.top_thred_cpu",
     "vocabulary", "unknown signal"),
    ("cold-storage.yaml", "    log: network_fs", "    log: network_fss", "vocabulary",
     "unknown marker"),
    ("cold-storage.yaml", "phases: [weight_read", "phases: [weight-read", "vocabulary",
     "unknown phase"),
    ("cold-storage.yaml", "decision: reading and io_wait", "decision: reading and io_wat",
     "decision", "unknown condition io_wat"),
    ("cold-storage.yaml", "support: [network_fs]", "support: []", "decision", "never used"),
    ("cold-storage.yaml", "evidence: [log, procs, disk, host, dmesg]",
     "evidence: [log, procs, disk, host]", "evidence", "dmesg"),
    ("cold-storage.yaml", "  - id: mmap-fault-crawl\n", "  - id: mmap-fault-crawls\n",
     "lookalikes", "unknown look-alike"),
    ("cold-storage.yaml", "told_apart_by: [loader_idle, io_wait]",
     "told_apart_by: [loader_idl]", "lookalikes", "unknown condition"),
    ("cold-storage.yaml", "  - field-reports RC-2 (L-07 to L-14)", "  - a blog somewhere",
     "references", "cites nothing"),
    ("cold-storage.yaml", "title: Cold page cache", "#\nstatus2: x\ntitle: Cold page cache",
     "schema", "status2"),
    ("compile-jit.yaml", "    use: compilers\n    weight: 2", "    use: compilerz\n    weight: 2",
     "vocabulary", "unknown shared condition"),
])
def test_validator_catches(tmp_path, name, old, new, check, needle):
    problems = _problems(tmp_path, {name: (old, new)})
    hits = [p for p in problems if p.check == check and needle in p.message]
    assert hits, [str(p) for p in problems]
    assert all(p.location.line for p in hits if p.check != "taxonomy" or "not in" in p.message)


def test_missing_rule_is_reported(tmp_path):
    problems = _problems(tmp_path, drop=["nccl-hang.yaml"])
    assert any(p.check == "taxonomy" and "nccl-hang" in p.message for p in problems)


def test_title_must_come_first(tmp_path):
    problems = _problems(tmp_path, {"cold-storage.yaml": (
        "title: Cold page cache on slow, network or virtual storage\nid: cold-storage",
        "id: cold-storage\ntitle: Cold page cache on slow, network or virtual storage")})
    assert [p.check for p in problems] == ["title-first"]


def test_validators_have_names_and_descriptions():
    names = [v.name for v in VALIDATORS]
    assert len(names) == len(set(names))
    assert all(v.description for v in VALIDATORS)
