"""Ed25519 keys in OpenSSH formats: public key lines, private key files, fingerprints.

A `Signer` is what signs the manifest: either an unencrypted OpenSSH private key file
(`FileSigner`, via `cryptography`) or a key held by a running ssh-agent (`agent.AgentSigner`).
Both return the SSH signature blob (`string "ssh-ed25519" || string sig`). Encrypted key files
are refused with advice (load the key into ssh-agent instead): decrypting them would need the
bcrypt KDF, which `cryptography` only offers with an extra package, and an agent is the
standard way to use a passphrase-protected key anyway.
"""

from __future__ import annotations

import base64
import binascii
import hashlib
from dataclasses import dataclass
from pathlib import Path
from typing import Protocol

from cryptography.exceptions import InvalidSignature, UnsupportedAlgorithm
from cryptography.hazmat.primitives.asymmetric.ed25519 import Ed25519PrivateKey, Ed25519PublicKey
from cryptography.hazmat.primitives.serialization import load_ssh_private_key

from sparktriage.errors import InputError
from sparktriage.report.wire import Reader, WireError, string

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

    @classmethod
    def from_ed25519(cls, key: Ed25519PublicKey, comment: str = "") -> "PublicKey":
        from cryptography.hazmat.primitives.serialization import Encoding, PublicFormat

        raw = key.public_bytes(Encoding.Raw, PublicFormat.Raw)
        return cls(ED25519, string(ED25519) + string(raw), comment)

    @property
    def fingerprint(self) -> str:
        """`SHA256:<base64 without padding>`, exactly as `ssh-keygen -l` prints it."""
        digest = hashlib.sha256(self.blob).digest()
        return "SHA256:" + base64.b64encode(digest).decode("ascii").rstrip("=")

    def openssh(self) -> str:
        """The `ssh-ed25519 AAAA...` form (without comment)."""
        return f"{self.key_type} {base64.b64encode(self.blob).decode('ascii')}"

    def verify(self, signature_blob: bytes, data: bytes) -> bool:
        """Check an SSH signature blob over data; False for a bad or foreign signature."""
        if self.key_type != ED25519:
            return False
        try:
            reader = Reader(signature_blob)
            sig_type = reader.text()
            sig = reader.string()
            reader.expect_end("the signature")
        except WireError:
            return False
        if sig_type != ED25519 or len(sig) != 64:
            return False
        raw = Reader(self.blob)
        raw.text()
        try:
            Ed25519PublicKey.from_public_bytes(raw.string()).verify(sig, data)
        except InvalidSignature:
            return False
        return True


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


class Signer(Protocol):
    """Something that signs bytes with an Ed25519 key and returns an SSH signature blob."""

    public_key: PublicKey

    def sign(self, data: bytes) -> bytes: ...


@dataclass(frozen=True)
class FileSigner:
    """An Ed25519 key loaded from an unencrypted OpenSSH private key file."""

    public_key: PublicKey
    _key: Ed25519PrivateKey

    def sign(self, data: bytes) -> bytes:
        return string(ED25519) + string(self._key.sign(data))


def load_private_key(path: Path) -> FileSigner:
    """Load an OpenSSH private key file; refuse encrypted and non-Ed25519 keys with advice."""
    try:
        data = path.read_bytes()
    except OSError as exc:
        raise InputError(f"cannot read signing key {path}: {exc.strerror or exc}") from exc
    if b"BEGIN OPENSSH PRIVATE KEY" not in data:
        raise InputError(f"{path}: not an OpenSSH private key (ssh-keygen -t ed25519 makes one)")
    try:
        key = load_ssh_private_key(data, password=None)
    except TypeError as exc:  # "Key is password-protected"
        raise InputError(
            f"{path}: the key is passphrase-protected",
            hint=f"load it into ssh-agent (ssh-add {path}) and sign with --sign agent "
                 f"or --sign {path}.pub",
        ) from exc
    except (ValueError, UnsupportedAlgorithm) as exc:
        raise InputError(f"{path}: unreadable OpenSSH private key ({exc})") from exc
    if not isinstance(key, Ed25519PrivateKey):
        raise InputError(f"{path}: only Ed25519 keys can sign reports (ssh-keygen -t ed25519)")
    comment = ""
    pub_path = path.with_name(path.name + ".pub")
    if pub_path.exists():
        try:
            comment = read_public_key(pub_path).comment
        except InputError:
            comment = ""
    return FileSigner(PublicKey.from_ed25519(key.public_key(), comment), key)
