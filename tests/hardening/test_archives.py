"""Issue 16: archives are read in one pass within caps; odd trees and damage exit 2."""

from __future__ import annotations

import json
import shutil
from pathlib import Path

import pytest

from sparktriage.errors import InputError
from sparktriage.bundle.reader import Bundle
from sparktriage.bundle.writer import export_bundle
from sparktriage.stalls import fixtures
from sparktriage.bundle import archive
from sparktriage.testbed import hostile

from hardening_cli import REPO, cli, one_error


@pytest.fixture(scope="module")
def stall_archive(tmp_path_factory) -> Path:
    """A real bundle with a classified stall (the mmap fault-crawl fixture), exported."""
    work = tmp_path_factory.mktemp("stall")
    segs = fixtures.segments(REPO / "tests/fixtures/stalls")
    case = sorted((REPO / "tests/fixtures/stalls/mmap-fault-crawl/positive").iterdir())[0]
    folder = fixtures.build(case, work / "case", segs)
    assert (folder / "nodes" / "spark-1" / "samples" / "procs.jsonl").is_file()
    return export_bundle(folder, work / "stall.tar.gz")


def test_stalls_of_an_archive_with_a_stall(stall_archive):
    # before: exit 70, FileNotFoundError on samples/procs.jsonl (read after the temp dir went)
    result = cli("stalls", str(stall_archive), "--json", "-")
    assert result.returncode == 1, result.stderr
    assert "Traceback" not in result.stderr and "internal error" not in result.stderr
    assert '"mmap-fault-crawl"' in result.stdout
    leftovers = [p for p in Path("/tmp").glob("sparktriage-archive-*")
                 if p.stat().st_mtime > stall_archive.stat().st_mtime]
    assert all(not (p / "stall").exists() for p in leftovers)  # removed when the command ended


@pytest.mark.parametrize("make, message", [
    (hostile.file_then_member, "lies under 'b/nodes', which is a file"),
    (hostile.dir_over_bundle_json, "member 'b/bundle.json' is a folder, not a file"),
])
@pytest.mark.slow
def test_odd_trees_exit_2(tmp_path, make, message):
    path = make(tmp_path / "odd.tar.gz")
    result = cli("stalls", str(path))  # before: exit 70
    assert result.returncode == 2, result.stderr
    assert message in one_error(result)
    result = cli("logs", str(path))
    assert result.returncode == 2 and one_error(result)


def test_deep_bundle_json_is_a_limit(tmp_path):
    path = hostile.deep_bundle_json(tmp_path / "deep.tar.gz")
    result = cli("stalls", str(path))
    assert result.returncode == 2
    assert "JSON nesting exceeds the limit of 64 levels" in one_error(result)
    folder = tmp_path / "folder" / "b"
    folder.mkdir(parents=True)
    (folder / "bundle.json").write_text("[" * 100_000 + "]" * 100_000)
    with pytest.raises(InputError, match="nesting"):
        Bundle.open(folder)


def test_truncated_archive_is_exit_2_naming_the_member(stall_archive, tmp_path):
    # before: exit 130 "interrupted" (click turned the EOFError into Abort)
    cut = hostile.truncated(stall_archive, tmp_path / "cut.tar.gz", 0.6)
    for command in (["stalls", str(cut)], ["logs", str(cut)]):
        result = cli(*command)
        assert result.returncode == 2, (command, result.returncode, result.stderr)
        line = one_error(result)
        assert "truncated or corrupt archive" in line and "member 'bundle/" in line, line


@pytest.mark.slow
def test_many_members_are_indexed_once(tmp_path):
    # before: `logs` reopened and rescanned the tar for every member and never finished
    path = hostile.many_members(tmp_path / "many.tar.gz", 2000)
    assert path.stat().st_size < 100_000
    result = cli("logs", str(path), "--json", "-", timeout=300)  # time: bench_hostile.py
    assert result.returncode == 1 and "startup did not complete" in one_error(result)
    document = json.loads(result.stdout)
    assert len(document["inputs"]) == 2000
    assert {i["events"] for i in document["inputs"]} == {1}
    assert any(i["origin"].endswith(":b/nodes/n1999/logs/server.lines.jsonl")
               for i in document["inputs"])


def test_archive_caps_and_member_kinds(tmp_path, monkeypatch):
    import tarfile
    link = tmp_path / "link.tar"
    with tarfile.open(link, "w") as tar:
        info = tarfile.TarInfo("b/evil")
        info.type = tarfile.SYMTYPE
        info.linkname = "/etc/passwd"
        tar.addfile(info)
    with pytest.raises(InputError, match="not a plain file or folder"):
        archive.Archive(link)
    many = hostile.many_members(tmp_path / "many.tar.gz", 50)
    monkeypatch.setattr(archive, "ARCHIVE_MAX_MEMBERS", 20)
    with pytest.raises(InputError, match="member count exceeds the limit of 20"):
        archive.Archive(many)
    monkeypatch.setattr(archive, "ARCHIVE_MAX_MEMBERS", 1000)
    monkeypatch.setattr(archive, "ARCHIVE_MAX_MEMBER_BYTES", 10)
    with pytest.raises(InputError, match="member 'b/bundle.json' exceeds"):
        archive.Archive(many)
    monkeypatch.setattr(archive, "ARCHIVE_MAX_MEMBER_BYTES", 1 << 20)
    monkeypatch.setattr(archive, "ARCHIVE_MAX_TOTAL_BYTES", 500)
    with pytest.raises(InputError, match="unpacked size exceeds"):
        archive.Archive(many)


def test_one_archive_per_command_unpacked_once(tmp_path):
    path = hostile.many_members(tmp_path / "m.tar.gz", 5)
    first = archive.Archive.opened(path)
    assert archive.Archive.opened(path) is first
    root = first.unpacked()
    assert first.unpacked() == root and (root / "b" / "bundle.json").is_file()
    archive.release()
    assert not root.exists()
    assert archive.Archive.opened(path) is not first
    archive.release()
    shutil.rmtree(tmp_path, ignore_errors=True)
