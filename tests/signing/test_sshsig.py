"""SSHSIG signatures against the stock OpenSSH `ssh-keygen -Y sign/verify`."""

from __future__ import annotations

import subprocess
from pathlib import Path

import pytest

from sparktriage.errors import InputError
from sparktriage.signing import keys as keymod
from sparktriage.signing import sshsig
from sparktriage.signing.sshkeygen import file_signer
from sparktriage.signing.verify import _check_signature
from sparktriage.signing.allowed_signers import line_for

MESSAGE = b"0123abcd  report.md\nfeedbeef  data/run.json\n"


def _allowed(tmp_path: Path, identity: str, pub: Path) -> Path:
    key = keymod.read_public_key(pub)
    path = tmp_path / "allowed_signers"
    path.write_text(line_for(identity, key, "sparktriage") + "\n")
    return path


def _ssh_verify(allowed: Path, identity: str, sig: Path, message: bytes, namespace="sparktriage"):
    return subprocess.run(["ssh-keygen", "-Y", "verify", "-f", str(allowed), "-I", identity,
                           "-n", namespace, "-s", str(sig)], input=message, capture_output=True)


def test_our_signature_is_byte_identical_to_ssh_keygen_and_verifies(report_keys, tmp_path):
    signer = file_signer(report_keys["main"])
    ours = signer.sign(MESSAGE)
    message = tmp_path / "MANIFEST"
    message.write_bytes(MESSAGE)
    subprocess.run(["ssh-keygen", "-q", "-Y", "sign", "-f", str(report_keys["main"]), "-n", "sparktriage",
                    str(message)], check=True, capture_output=True)
    assert ours == (tmp_path / "MANIFEST.sig").read_text()  # Ed25519 is deterministic
    sig = tmp_path / "ours.sig"
    sig.write_text(ours)
    allowed = _allowed(tmp_path, "consultant@example.com", report_keys["main"].with_suffix(".pub"))
    done = _ssh_verify(allowed, "consultant@example.com", sig, MESSAGE)
    assert done.returncode == 0, done.stderr
    assert b"Good \"sparktriage\" signature" in done.stdout + done.stderr


def test_ssh_keygen_rejects_our_signature_of_other_content_or_namespace(report_keys, tmp_path):
    signer = file_signer(report_keys["main"])
    sig = tmp_path / "s.sig"
    sig.write_text(signer.sign(MESSAGE))
    allowed = _allowed(tmp_path, "c", report_keys["main"].with_suffix(".pub"))
    assert _ssh_verify(allowed, "c", sig, MESSAGE + b"x").returncode != 0
    assert _ssh_verify(allowed, "c", sig, MESSAGE, namespace="file").returncode != 0


def test_ssh_keygen_signature_is_checked_by_us(report_keys, tmp_path):
    message = tmp_path / "m"
    message.write_bytes(MESSAGE)
    subprocess.run(["ssh-keygen", "-q", "-Y", "sign", "-f", str(report_keys["other"]), "-n", "sparktriage",
                    str(message)], check=True, capture_output=True)
    parsed = sshsig.parse((tmp_path / "m.sig").read_text())
    assert parsed.namespace == "sparktriage" and parsed.hash_algorithm == "sha512"
    assert parsed.public_key.blob == keymod.read_public_key(report_keys["other"].with_suffix(".pub")).blob
    sig = tmp_path / "m.sig"
    assert _check_signature(parsed, sig, MESSAGE) is None
    assert "does not match" in _check_signature(parsed, sig, MESSAGE.replace(b"0123", b"0124"))
    other = sshsig.Signature(parsed.public_key, "git", parsed.hash_algorithm, parsed.signature)
    assert "namespace" in _check_signature(other, sig, MESSAGE)


def test_fingerprint_matches_ssh_keygen(report_keys):
    printed = subprocess.run(["ssh-keygen", "-l", "-f", str(report_keys["main"].with_suffix(".pub"))],
                             capture_output=True, text=True, check=True).stdout.split()[1]
    assert file_signer(report_keys["main"]).public_key.fingerprint == printed
    assert file_signer(report_keys["main"]).public_key.comment == "consultant@example.com"


@pytest.mark.parametrize("text, fragment", [
    ("hello", "no BEGIN/END"),
    ("-----BEGIN SSH SIGNATURE-----\n!!!!\n-----END SSH SIGNATURE-----", "base64"),
    ("-----BEGIN SSH SIGNATURE-----\nU1NIU0lH\n-----END SSH SIGNATURE-----", "malformed"),
    ("-----BEGIN SSH SIGNATURE-----\nWFhYWFhYAAAAAQ==\n-----END SSH SIGNATURE-----", "SSHSIG"),
])
def test_malformed_signatures_are_named(text, fragment):
    with pytest.raises(sshsig.SignatureFormatError, match=fragment):
        sshsig.parse(text)


def test_truncated_real_signature_is_malformed(report_keys):
    armored = file_signer(report_keys["main"]).sign(MESSAGE)
    lines = armored.splitlines()
    broken = "\n".join(lines[:2] + lines[-1:])
    with pytest.raises(sshsig.SignatureFormatError):
        sshsig.parse(broken)


def test_encrypted_and_non_ed25519_keys_are_refused_with_advice(report_keys, tmp_path):
    with pytest.raises(InputError, match="passphrase-protected") as info:
        file_signer(report_keys["encrypted"])
    assert "ssh-add" in info.value.one_line()
    rsa = tmp_path / "rsa"
    subprocess.run(["ssh-keygen", "-q", "-t", "rsa", "-b", "1024", "-N", "", "-f", str(rsa)], check=True)
    with pytest.raises(InputError, match="only Ed25519"):
        file_signer(rsa)
    junk = tmp_path / "junk"
    junk.write_text("not a key")
    with pytest.raises(InputError, match="not an OpenSSH private key"):
        file_signer(junk)
    with pytest.raises(InputError, match="not an OpenSSH public key"):
        keymod.read_public_key(junk)
