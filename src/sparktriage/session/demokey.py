"""A throwaway Ed25519 signing key for the demo's report (OpenSSH formats, as ssh-keygen writes)."""

from __future__ import annotations

import os
from pathlib import Path

from cryptography.hazmat.primitives.asymmetric.ed25519 import Ed25519PrivateKey
from cryptography.hazmat.primitives.serialization import (Encoding, NoEncryption, PrivateFormat,
                                                          PublicFormat)


def make_demo_key(path: Path, comment: str = "sparktriage-demo") -> Path:
    """Write PATH (private, mode 0600) and PATH.pub (with `comment`); return PATH."""
    key = Ed25519PrivateKey.generate()
    path.parent.mkdir(parents=True, exist_ok=True)
    private = key.private_bytes(Encoding.PEM, PrivateFormat.OpenSSH, NoEncryption())
    fd = os.open(path, os.O_WRONLY | os.O_CREAT | os.O_TRUNC, 0o600)
    with os.fdopen(fd, "wb") as out:
        out.write(private)
    public = key.public_key().public_bytes(Encoding.OpenSSH, PublicFormat.OpenSSH)
    path.with_name(path.name + ".pub").write_bytes(public + b" " + comment.encode() + b"\n")
    return path
