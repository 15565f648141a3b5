"""`MANIFEST`: SHA-256 digests of every file in a report folder, in `sha256sum` format.

One line per file, `<64 hex digits><two spaces><relative path>`, sorted by the path's UTF-8
bytes, so that `sha256sum -c MANIFEST` run inside the folder checks every file. Paths holding a
backslash or a newline are escaped as GNU coreutils does (the line starts with `\\`). The
manifest never lists itself or its signature (`MANIFEST.sig`).
"""

from __future__ import annotations

import hashlib
import re
from dataclasses import dataclass
from pathlib import Path, PurePosixPath

MANIFEST = "MANIFEST"
SIGNATURE = "MANIFEST.sig"
EXCLUDED = frozenset({MANIFEST, SIGNATURE})
_LINE = re.compile(r"^(\\?)([0-9a-fA-F]{64}) [ *](.+)\Z")


class ManifestFormatError(ValueError):
    """A MANIFEST line that is not in sha256sum format, or names a path outside the folder."""


@dataclass(frozen=True)
class Entry:
    """One manifest line: a file's SHA-256 (lowercase hex) and its folder-relative POSIX path."""

    digest: str
    path: str


def sha256_file(path: Path) -> str:
    """Hex SHA-256 of a file's bytes, read in 1 MiB blocks."""
    digest = hashlib.sha256()
    with open(path, "rb") as fh:
        for block in iter(lambda: fh.read(1 << 20), b""):
            digest.update(block)
    return digest.hexdigest()


def folder_files(folder: Path) -> list[str]:
    """Every file under folder (relative POSIX paths, byte-sorted), minus MANIFEST and its .sig."""
    paths = []
    for path in folder.rglob("*"):
        if path.is_file():
            rel = path.relative_to(folder).as_posix()
            if rel not in EXCLUDED:
                paths.append(rel)
    return sorted(paths, key=lambda p: p.encode("utf-8", "surrogateescape"))


def build(folder: Path) -> list[Entry]:
    """Digest every file of a folder."""
    return [Entry(sha256_file(folder / rel), rel) for rel in folder_files(folder)]


def _escape(path: str) -> tuple[str, str]:
    if "\\" in path or "\n" in path or "\r" in path:
        return "\\", path.replace("\\", "\\\\").replace("\n", "\\n").replace("\r", "\\r")
    return "", path


def _unescape(path: str) -> str:
    out, i = [], 0
    while i < len(path):
        ch = path[i]
        if ch == "\\" and i + 1 < len(path):
            nxt = path[i + 1]
            out.append({"\\": "\\", "n": "\n", "r": "\r"}.get(nxt, "\\" + nxt))
            i += 2
            continue
        out.append(ch)
        i += 1
    return "".join(out)


def render(entries: list[Entry]) -> bytes:
    """The MANIFEST bytes for entries (kept in the order given)."""
    lines = []
    for entry in entries:
        prefix, path = _escape(entry.path)
        lines.append(f"{prefix}{entry.digest}  {path}\n")
    return "".join(lines).encode("utf-8", "surrogateescape")


def safe_relative(path: str) -> bool:
    """True when a manifest path stays inside the folder (relative, no `..`, no empty parts)."""
    if not path or path.startswith("/") or "\x00" in path:
        return False
    parts = PurePosixPath(path).parts
    return all(part not in ("..", "") for part in parts) and parts[0] != "/"


def parse(data: bytes) -> list[Entry]:
    """Parse MANIFEST bytes; ManifestFormatError names the first bad line."""
    try:
        text = data.decode("utf-8")
    except UnicodeDecodeError as exc:
        raise ManifestFormatError(f"MANIFEST is not UTF-8 ({exc})") from exc
    entries: list[Entry] = []
    seen: set[str] = set()
    for number, line in enumerate(text.split("\n"), start=1):
        if line == "":
            continue
        match = _LINE.match(line)
        if not match:
            raise ManifestFormatError(f"MANIFEST line {number} is not '<sha256>  <path>'")
        escaped, digest, path = match.groups()
        if escaped:
            path = _unescape(path)
        if not safe_relative(path):
            raise ManifestFormatError(f"MANIFEST line {number} names a path outside the folder: {path!r}")
        if path in seen:
            raise ManifestFormatError(f"MANIFEST line {number} lists {path!r} twice")
        seen.add(path)
        entries.append(Entry(digest.lower(), path))
    return entries
