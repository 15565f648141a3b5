"""Reading the SSH wire encoding (RFC 4251 §5): uint32 and length-prefixed strings.

SSHSIG blobs and public key blobs are built from these two types; sparktriage only reads them
(who signed a report: sshsig.parse, keys.PublicKey). The reader raises `WireError` on truncated or trailing data so that malformed input from a hostile
file or socket is a one-line error, never an IndexError.
"""

from __future__ import annotations

import struct


class WireError(ValueError):
    """A blob does not follow the SSH wire encoding."""


class Reader:
    """Sequential reader over one blob."""

    def __init__(self, data: bytes) -> None:
        self.data = data
        self.pos = 0

    def raw(self, n: int) -> bytes:
        if n < 0 or self.pos + n > len(self.data):
            raise WireError(f"truncated: wanted {n} bytes at offset {self.pos} of {len(self.data)}")
        chunk = self.data[self.pos:self.pos + n]
        self.pos += n
        return chunk

    def uint32(self) -> int:
        return struct.unpack(">I", self.raw(4))[0]

    def byte(self) -> int:
        return self.raw(1)[0]

    def string(self) -> bytes:
        return self.raw(self.uint32())

    def text(self) -> str:
        try:
            return self.string().decode("utf-8")
        except UnicodeDecodeError as exc:
            raise WireError("a text field is not UTF-8") from exc

    def at_end(self) -> bool:
        return self.pos == len(self.data)

    def expect_end(self, what: str) -> None:
        if not self.at_end():
            raise WireError(f"{len(self.data) - self.pos} unexpected trailing bytes after {what}")
