"""MANIFEST in exactly the `sha256sum` format, checked by the stock `sha256sum -c`."""

from __future__ import annotations

import hashlib
import subprocess

import pytest

from sparktriage.signing import manifest


def test_manifest_is_sha256sum_format_and_sha256sum_checks_it(tmp_path):
    (tmp_path / "plots").mkdir()
    files = {"report.md": b"# r\n", "plots/a.png": b"\x89PNG", "data/run.json": b"{}\n",
             "with space.txt": b"s", "back\\slash.txt": b"b"}
    for rel, data in files.items():
        (tmp_path / rel).parent.mkdir(parents=True, exist_ok=True)
        (tmp_path / rel).write_bytes(data)
    entries = manifest.build(tmp_path)
    text = manifest.render(entries)
    (tmp_path / "MANIFEST").write_bytes(text)
    # our own expectation of every line, independently of the module
    expected = sorted(files, key=lambda p: p.encode())
    assert [e.path for e in entries] == expected
    plain = [line for line in text.decode().splitlines() if not line.startswith("\\")]
    assert f"{hashlib.sha256(files['report.md']).hexdigest()}  report.md" in plain
    assert text.decode().splitlines()[0].startswith("\\")  # back\slash.txt sorts first, escaped
    done = subprocess.run(["sha256sum", "-c", "--strict", "MANIFEST"], cwd=tmp_path,
                          capture_output=True, text=True)
    assert done.returncode == 0, done.stdout + done.stderr
    assert done.stdout.count(": OK") == len(files)
    assert manifest.parse(text) == entries
    # the same bytes sha256sum itself writes for these files
    ours = {line for line in text.decode().splitlines()}
    theirs = subprocess.run(["sha256sum", *expected], cwd=tmp_path, capture_output=True,
                            text=True, check=True).stdout.splitlines()
    assert ours == set(theirs)


def test_manifest_never_lists_itself_or_its_signature(tmp_path):
    for name in ("MANIFEST", "MANIFEST.sig", "report.md"):
        (tmp_path / name).write_text(name)
    assert manifest.folder_files(tmp_path) == ["report.md"]


@pytest.mark.parametrize("line, fragment", [
    (b"zz  a\n", "not '<sha256>  <path>'"),
    (b"%s  ../etc/passwd\n" % (b"0" * 64), "outside the folder"),
    (b"%s  /etc/passwd\n" % (b"0" * 64), "outside the folder"),
    (b"%s  a\n%s  a\n" % (b"0" * 64, b"1" * 64), "twice"),
    (b"\xff\xfe", "not UTF-8"),
])
def test_malformed_manifest_lines_are_named(line, fragment):
    with pytest.raises(manifest.ManifestFormatError, match=fragment):
        manifest.parse(line)
