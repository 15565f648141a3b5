"""OpenSSH public keys: key lines, wire blobs, fingerprints.

Private keys are never handled here: signing is `ssh-keygen -Y sign` (signing/sshkeygen.py), for
key files and agent keys alike. What stays in process is what the verifier needs to say *who*
signed (the key inside an SSHSIG blob, its `SHA256:` fingerprint, the line to trust it) and to
parse key files and lines (docs/verification.md); the cryptography is OpenSSH's.
"""

from __future__ import annotations

import base64
import binascii
import hashlib
from dataclasses import dataclass
from pathlib import Path


from sparktriage.errors import InputError
from sparktriage.signing.wire import Reader, WireError

ED25519 = "ssh-ed25519"


@dataclass(frozen=True)
class PublicKey:
    """An SSH public key: its type and wire blob (only Ed25519 can verify here)."""

    key_type: str
    blob: bytes
    comment: str = ""

    @classmethod
    def from_blob(cls, blob: bytes, comment: str = "") -> "PublicKey":
        reader = Reader(blob)
        key_type = reader.text()
        if key_type == ED25519:
            raw = reader.string()
            reader.expect_end("the ed25519 public key")
            if len(raw) != 32:
                raise WireError(f"ed25519 public key is {len(raw)} bytes, not 32")
        return cls(key_type, blob, comment)

    @property
    def fingerprint(self) -> str:
        """`SHA256:<base64 without padding>`, exactly as `ssh-keygen -l` prints it."""
        digest = hashlib.sha256(self.blob).digest()
        return "SHA256:" + base64.b64encode(digest).decode("ascii").rstrip("=")

    def openssh(self) -> str:
        """The `ssh-ed25519 AAAA...` form (without comment)."""
        return f"{self.key_type} {base64.b64encode(self.blob).decode('ascii')}"



def parse_public_key(text: str, origin: str) -> PublicKey:
    """Parse one `type base64 [comment]` line (an `.pub` file's content)."""
    fields = text.strip().split(None, 2)
    if len(fields) < 2 or not fields[0].startswith(("ssh-", "ecdsa-", "sk-")):
        raise InputError(f"{origin}: not an OpenSSH public key (expected 'ssh-ed25519 AAAA...')")
    key_type, data = fields[0], fields[1]
    try:
        blob = base64.b64decode(data, validate=True)
        key = PublicKey.from_blob(blob, fields[2] if len(fields) > 2 else "")
    except (binascii.Error, ValueError, WireError) as exc:
        raise InputError(f"{origin}: malformed public key ({exc})") from exc
    if key.key_type != key_type:
        raise InputError(f"{origin}: key type {key_type} does not match its blob ({key.key_type})")
    return key


def read_public_key(path: Path) -> PublicKey:
    """Read an OpenSSH public key file."""
    try:
        text = path.read_text(encoding="utf-8")
    except (OSError, UnicodeDecodeError) as exc:
        raise InputError(f"cannot read public key {path}: {getattr(exc, 'strerror', None) or exc}") from exc
    lines = [line for line in text.splitlines() if line.strip() and not line.startswith("#")]
    if not lines:
        raise InputError(f"{path}: empty public key file")
    return parse_public_key(lines[0], str(path))
