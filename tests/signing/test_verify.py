"""`verify` names every kind of tampering: modified, removed and added files, wrong keys."""

from __future__ import annotations

import subprocess

import pytest

from sparktriage.errors import InputError
from sparktriage.signing import allowed_signers, manifest
from sparktriage.signing.keys import read_public_key
from sparktriage.signing.verify import TrustAnchor, verify


def _anchor(report_keys, name="main"):
    return TrustAnchor(key=read_public_key(report_keys[name].with_suffix(".pub")), source=name)


def test_untouched_report_verifies_with_and_without_anchor(report_built, report_keys, tmp_path):
    bare = verify(report_built)
    # issue 16: without a trust anchor a valid signature is not ok (anyone can re-sign)...
    assert not bare.ok and bare.signature == "valid" and not bare.identity_established
    assert bare.integrity_ok and bare.trust == "none"
    # ...unless the caller explicitly accepts any signer
    assert verify(report_built, allow_untrusted=True).ok
    assert bare.signer_fingerprint == read_public_key(report_keys["main"].with_suffix(".pub")).fingerprint
    assert bare.files_checked == len(manifest.folder_files(report_built))
    assert verify(report_built, _anchor(report_keys)).identity_established
    line = allowed_signers.line_for("consultant@example.com",
                                    read_public_key(report_keys["main"].with_suffix(".pub")), "sparktriage")
    (tmp_path / "allowed").write_text(line + "\n")
    signers = tuple(allowed_signers.read(tmp_path / "allowed"))
    result = verify(report_built, TrustAnchor(signers=signers, source=str(tmp_path / "allowed"),
                                                  identity="consultant@example.com"))
    assert result.ok and result.principals == ["consultant@example.com"]
    wrong_identity = verify(report_built, TrustAnchor(signers=signers, source=str(tmp_path / "allowed"),
                                                  identity="mallory"))
    assert not wrong_identity.ok and "mallory" in wrong_identity.trust_problem


def test_a_flipped_byte_in_any_file_is_detected_and_named(report_copy):
    files = manifest.folder_files(report_copy)
    assert any(f.startswith("data/") for f in files) and any(f.startswith("plots/") for f in files)
    for rel in files:
        path = report_copy / rel
        original = path.read_bytes()
        flipped = bytearray(original)
        flipped[len(flipped) // 2] ^= 0x01
        path.write_bytes(bytes(flipped))
        result = verify(report_copy)
        assert result.modified == [rel] and not result.ok, rel
        assert result.signature == "valid"  # the signature covers MANIFEST; the digest catches it
        path.write_bytes(original)
    assert verify(report_copy, allow_untrusted=True).ok


def test_manifest_and_signature_tampering(report_copy, report_keys):
    data = (report_copy / "MANIFEST").read_bytes()
    line = data.splitlines()[0]
    forged = data.replace(line, b"0" * 64 + line[64:])
    (report_copy / "MANIFEST").write_bytes(forged)
    result = verify(report_copy)
    assert result.signature == "invalid" and not result.ok
    (report_copy / "MANIFEST").write_bytes(data)
    sig = (report_copy / "MANIFEST.sig").read_text()
    (report_copy / "MANIFEST.sig").write_text(sig.replace(sig.splitlines()[2], sig.splitlines()[2][::-1]))
    result = verify(report_copy)
    assert result.signature in ("invalid", "malformed") and not result.ok


def test_removed_and_added_files_are_named(report_copy):
    (report_copy / "plots" / "sweep.png").unlink()
    (report_copy / "data" / "notes.txt").write_text("added later")
    result = verify(report_copy)
    assert result.removed == ["plots/sweep.png"] and result.added == ["data/notes.txt"]
    assert result.modified == [] and not result.ok


def test_wrong_key_and_missing_signature(report_copy, report_keys):
    result = verify(report_copy, _anchor(report_keys, "other"))
    assert result.signature == "valid" and result.trust == "untrusted" and not result.ok
    assert "wrong key" in result.trust_problem
    assert read_public_key(report_keys["other"].with_suffix(".pub")).fingerprint in result.trust_problem
    (report_copy / "MANIFEST.sig").unlink()
    unsigned = verify(report_copy)
    assert unsigned.signature == "missing" and unsigned.integrity_ok and not unsigned.ok


def test_report_signed_with_ssh_keygen_verifies_with_sparktriage(report_copy, report_keys):
    (report_copy / "MANIFEST.sig").unlink()
    subprocess.run(["ssh-keygen", "-q", "-Y", "sign", "-f", str(report_keys["other"]), "-n", "sparktriage",
                    str(report_copy / "MANIFEST")], check=True, capture_output=True)
    result = verify(report_copy, _anchor(report_keys, "other"))
    assert result.ok and result.identity_established
    assert not verify(report_copy, _anchor(report_keys, "main")).ok


def test_not_a_report_folder(tmp_path):
    with pytest.raises(InputError, match="no MANIFEST"):
        verify(tmp_path)
    with pytest.raises(InputError, match="no such report folder"):
        verify(tmp_path / "absent")


def test_stock_tools_verify_the_built_report(report_built, report_keys, tmp_path):
    check = subprocess.run(["sha256sum", "-c", "--strict", "--quiet", "MANIFEST"], cwd=report_built,
                           capture_output=True, text=True)
    assert check.returncode == 0, check.stdout
    report = (report_built / "report.md").read_text()
    line = next(l for l in report.splitlines() if 'namespaces="sparktriage"' in l and not l.startswith("echo"))
    (tmp_path / "allowed_signers").write_text(line + "\n")
    command = next(l for l in report.splitlines() if l.startswith("ssh-keygen -Y verify"))
    argv = command.split("<")[0].split()
    argv[argv.index("-f") + 1] = str(tmp_path / "allowed_signers")
    argv[argv.index("-s") + 1] = str(report_built / "MANIFEST.sig")
    done = subprocess.run(argv, stdin=open(report_built / "MANIFEST", "rb"), capture_output=True, text=True)
    assert done.returncode == 0, done.stderr
    assert "consultant@example.com" in done.stdout + done.stderr


def test_symlinks_and_odd_files_in_the_report_are_refused(report_copy, report_keys, tmp_path):
    # issue 16: a report whose files or plots/ were replaced by symlinks must not verify
    outside = tmp_path / "outside.png"
    plot = next(p for p in manifest.folder_files(report_copy) if p.startswith("plots/"))
    outside.write_bytes((report_copy / plot).read_bytes())  # same bytes: the digest would match
    (report_copy / plot).unlink()
    (report_copy / plot).symlink_to(outside)
    result = verify(report_copy, _anchor(report_keys))
    assert result.links == [plot] and not result.integrity_ok and not result.ok
    (report_copy / plot).unlink()
    (report_copy / plot).write_bytes(outside.read_bytes())
    assert verify(report_copy, _anchor(report_keys)).ok
    plots = report_copy / "plots"
    moved = tmp_path / "plots-elsewhere"
    plots.rename(moved)
    plots.symlink_to(moved, target_is_directory=True)
    result = verify(report_copy, _anchor(report_keys))
    assert result.links == ["plots"] and not result.ok
    plots.unlink()
    moved.rename(plots)
    import os
    os.mkfifo(report_copy / "data" / "pipe")
    result = verify(report_copy, _anchor(report_keys))
    assert result.links == ["data/pipe"] and not result.ok
    (report_copy / "data" / "pipe").unlink()
    manifest_file = report_copy / "MANIFEST"
    (tmp_path / "M").write_bytes(manifest_file.read_bytes())
    manifest_file.unlink()
    manifest_file.symlink_to(tmp_path / "M")
    with pytest.raises(InputError, match="symbolic link"):
        verify(report_copy, _anchor(report_keys))
