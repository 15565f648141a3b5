"""OpenSSH signatures (`SSHSIG`), the format of `ssh-keygen -Y sign` and `-Y verify`.

Format (OpenSSH PROTOCOL.sshsig): the signed data is

    "SSHSIG" || string namespace || string reserved || string hash_alg || string H(message)

and the signature blob is

    "SSHSIG" || uint32 1 || string public_key || string namespace || string reserved
             || string hash_alg || string signature

armored as base64 wrapped at 70 columns between `-----BEGIN SSH SIGNATURE-----` and
`-----END SSH SIGNATURE-----`. Signatures are made by `ssh-keygen -Y sign` (sshkeygen.py); this
module reads them (who signed, in which namespace) and checks them for the verifier, tested
byte for byte against `ssh-keygen -Y verify`.
"""

from __future__ import annotations

import base64
import binascii
from dataclasses import dataclass

from sparktriage.signing.keys import PublicKey
from sparktriage.signing.wire import Reader, WireError

MAGIC = b"SSHSIG"
VERSION = 1
NAMESPACE = "sparktriage"
BEGIN = "-----BEGIN SSH SIGNATURE-----"
END = "-----END SSH SIGNATURE-----"
HASHES = ("sha512", "sha256")


class SignatureFormatError(ValueError):
    """An armored signature that cannot be decoded."""


@dataclass(frozen=True)
class Signature:
    """A decoded SSHSIG signature."""

    public_key: PublicKey
    namespace: str
    hash_algorithm: str
    signature: bytes  # SSH signature blob: string type || string raw signature
    reserved: bytes = b""


def parse(text: str) -> Signature:
    """Decode an armored SSHSIG signature; SignatureFormatError says what is wrong."""
    body = text.strip()
    if not body.startswith(BEGIN) or not body.endswith(END):
        raise SignatureFormatError("not an SSH signature (no BEGIN/END SSH SIGNATURE lines)")
    payload = "".join(body[len(BEGIN):-len(END)].split())
    try:
        blob = base64.b64decode(payload, validate=True)
    except (binascii.Error, ValueError) as exc:
        raise SignatureFormatError(f"signature is not valid base64 ({exc})") from exc
    try:
        reader = Reader(blob)
        if reader.raw(6) != MAGIC:
            raise SignatureFormatError("signature blob does not start with SSHSIG")
        version = reader.uint32()
        if version != VERSION:
            raise SignatureFormatError(f"unsupported SSHSIG version {version}")
        key = PublicKey.from_blob(reader.string())
        namespace = reader.text()
        reserved = reader.string()
        hash_algorithm = reader.text()
        sig = reader.string()
        reader.expect_end("the SSHSIG blob")
    except WireError as exc:
        raise SignatureFormatError(f"malformed SSHSIG blob ({exc})") from exc
    if hash_algorithm not in HASHES:
        raise SignatureFormatError(f"unsupported hash algorithm {hash_algorithm!r}")
    return Signature(key, namespace, hash_algorithm, sig, reserved)
