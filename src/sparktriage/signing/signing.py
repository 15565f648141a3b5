"""Choosing the report's signer from `--sign KEY`, and signing a report folder.

`--sign` takes an unencrypted OpenSSH Ed25519 private key file, the word `agent` (the first
Ed25519 key of the running ssh-agent), or a public key file (`KEY.pub`: the agent key that
matches it, as `ssh-keygen -Y sign -f KEY.pub` does). The signer is resolved before any work
so that a bad key fails fast, and the report can state the signer's key and identity. The
signature itself is made by `ssh-keygen -Y sign` (signing/sshkeygen.py).
"""

from __future__ import annotations

import re
from dataclasses import dataclass
from pathlib import Path

from sparktriage.errors import InputError, UsageError
from sparktriage.signing import allowed_signers, manifest, sshsig
from sparktriage.signing.keys import read_public_key
from sparktriage.signing.sshkeygen import KeygenSigner as Signer
from sparktriage.signing.sshkeygen import agent_signer, file_signer

DEFAULT_IDENTITY = "report-signer"
_IDENTITY = re.compile(r"^[A-Za-z0-9._@+-]{1,128}\Z")


@dataclass(frozen=True)
class Signing:
    """Who signs the report (known before rendering, so the report can state it)."""

    identity: str
    public_key: str  # "ssh-ed25519 AAAA..."
    fingerprint: str
    allowed_signers_line: str


@dataclass(frozen=True)
class SignSpec:
    """What `--sign` asked for (declared; resolved by `resolve`)."""

    key: str  # a path, or "agent"
    identity: str | None = None


def resolve(spec: SignSpec) -> tuple[Signer, Signing]:
    """The signer and what the report says about it."""
    if spec.key == "agent":
        signer: Signer = agent_signer()
    else:
        path = Path(spec.key).expanduser()
        if not path.is_file():
            raise InputError(f"--sign {spec.key}: no such key file")
        head = path.read_bytes()[:64]
        if head.lstrip().startswith((b"ssh-", b"ecdsa-", b"sk-")):
            signer = agent_signer(read_public_key(path))
        else:
            signer = file_signer(path)
    identity = spec.identity
    if identity is None:
        comment = signer.public_key.comment.strip()
        identity = comment if _IDENTITY.match(comment) else DEFAULT_IDENTITY
    if not _IDENTITY.match(identity):
        raise UsageError(f"--identity {identity!r}: use letters, digits and . _ @ + - only "
                         "(it becomes the principal of the allowed-signers line)")
    key = signer.public_key
    line = allowed_signers.line_for(identity, key, sshsig.NAMESPACE)
    return signer, Signing(identity, key.openssh(), key.fingerprint, line)


def sign_folder(folder: Path, signer: Signer | None) -> list[manifest.Entry]:
    """Write MANIFEST over every file of the folder and, with a signer, MANIFEST.sig."""
    entries = manifest.build(folder)
    data = manifest.render(entries)
    (folder / manifest.MANIFEST).write_bytes(data)
    if signer is not None:
        (folder / manifest.SIGNATURE).write_text(signer.sign(data, sshsig.NAMESPACE), encoding="ascii")
    return entries
