"""Archives (evidence bundle `.tar.gz`/`.tgz`/`.tar`) read in one pass, within caps.

    archive = Archive.opened(path)      # indexed once per command, checked on the way
    archive.names()                     # regular files, in archive order
    root = archive.unpacked()           # streamed once into a private folder

Opening reads the member headers once: at most `ARCHIVE_MAX_MEMBERS` members, each a regular
file or a folder (no links, devices or fifos), with a safe relative name (no absolute names,
no `..`, no empty parts), no file that is also a folder (a file followed by a member under it,
a folder over a file), each at most `ARCHIVE_MAX_MEMBER_BYTES` and all together at most
`ARCHIVE_MAX_TOTAL_BYTES`. A truncated or corrupt archive is an `InputError` (exit 2) naming the
member where reading stopped. Members are then read in one pass, in archive order: into memory
when the archive holds at most `MEMORY_BYTES` (`open_member`), else streamed into a private
temporary folder (`unpacked`, which bundles use); that folder and the open archive are kept for the life of the
command (`Archive.opened` caches per path) and removed by `release()`, which the CLI calls when
the command ends (and `atexit` otherwise). Nothing is ever written outside that folder.
"""

from __future__ import annotations

import atexit
import gzip
import io
import lzma
import shutil
import tarfile
import tempfile
import threading
import zlib
from pathlib import Path, PurePosixPath
from typing import BinaryIO, Callable

from sparktriage.errors import InputError
from sparktriage.limits import (
    ARCHIVE_MAX_MEMBER_BYTES, ARCHIVE_MAX_MEMBERS, ARCHIVE_MAX_TOTAL_BYTES, limit_hit, size_text,
)

ARCHIVE_SUFFIXES = (".tar.gz", ".tgz", ".tar")
# what a damaged archive raises from tarfile's readers (EOFError: truncated gzip stream)
READ_ERRORS = (OSError, EOFError, tarfile.TarError, zlib.error, gzip.BadGzipFile, lzma.LZMAError,
               ValueError)

MEMORY_BYTES = 64 << 20  # archives this small are read into memory rather than unpacked

_lock = threading.Lock()
_open: dict[Path, "Archive"] = {}
_held: list[Callable[[], None]] = []


def is_archive(path: Path | str) -> bool:
    return str(path).endswith(ARCHIVE_SUFFIXES)


class Archive:
    """A checked, indexed archive; members unpacked once on demand."""

    def __init__(self, path: Path) -> None:
        self.path = path
        self._members: dict[str, tarfile.TarInfo] = {}
        self._root: Path | None = None
        self._bytes: dict[str, bytes] | None = None
        self._index()

    # --- opening -----------------------------------------------------------------------------

    @classmethod
    def opened(cls, path: Path | str) -> "Archive":
        """The command's one Archive for `path` (opened and indexed on the first call)."""
        key = Path(path).resolve()
        with _lock:
            archive = _open.get(key)
            if archive is None:
                archive = _open[key] = cls(Path(path))
            return archive

    def _index(self) -> None:
        kinds: dict[str, bool] = {}  # name -> is a folder (explicit or implied by a member)
        total = 0
        last = "(start of the archive)"
        try:
            with tarfile.open(self.path, "r:*") as tar:
                while True:
                    member = tar.next()
                    if member is None:
                        break
                    if len(self._members) + 1 > ARCHIVE_MAX_MEMBERS:
                        raise limit_hit("member count", str(ARCHIVE_MAX_MEMBERS), str(self.path))
                    name = _check_name(self.path, member)
                    if not (member.isfile() or member.isdir()):
                        raise InputError(f"{self.path}: member {member.name!r} is not a plain "
                                         "file or folder")
                    if member.size > ARCHIVE_MAX_MEMBER_BYTES:
                        raise limit_hit(f"member {name!r}", size_text(ARCHIVE_MAX_MEMBER_BYTES),
                                        str(self.path))
                    total += member.size
                    if total > ARCHIVE_MAX_TOTAL_BYTES:
                        raise limit_hit("unpacked size", size_text(ARCHIVE_MAX_TOTAL_BYTES),
                                        str(self.path))
                    _check_tree(self.path, kinds, name, member.isdir())
                    if name in self._members:
                        raise InputError(f"{self.path}: member {name!r} appears twice")
                    self._members[name] = member
                    last = name
        except InputError:
            raise
        except READ_ERRORS as exc:
            raise InputError(f"{self.path}: truncated or corrupt archive after member {last!r} "
                             f"({type(exc).__name__}: {exc or 'unexpected end of data'})") from None

    # --- reading -----------------------------------------------------------------------------

    def names(self) -> list[str]:
        """Regular-file members, in archive order."""
        return [n for n, m in self._members.items() if m.isfile()]

    def kind(self, name: str) -> str | None:
        """`file`, `folder` or None (no such member) of a member name."""
        member = self._members.get(name)
        return None if member is None else ("folder" if member.isdir() else "file")

    def tops(self) -> set[str]:
        return {PurePosixPath(n).parts[0] for n in self._members}

    def unpacked(self) -> Path:
        """The private folder holding every member (unpacked on the first call, streamed)."""
        if self._root is None:
            root = Path(tempfile.mkdtemp(prefix="sparktriage-archive-"))
            try:
                self._unpack(root)
            except BaseException:
                shutil.rmtree(root, ignore_errors=True)
                raise
            self._root = root
        return self._root

    def member_path(self, name: str) -> Path:
        """Where member `name` (a regular file) lies once unpacked."""
        member = self._members.get(name)
        if member is None or not member.isfile():
            raise InputError(f"{self.path}:{name}: not a regular file in the archive")
        return self.unpacked().joinpath(*PurePosixPath(name).parts)

    def open_member(self, name: str) -> BinaryIO:
        """A member's bytes as a stream: from memory for a small archive (all members read in
        one pass on the first call), else from the unpacked copy."""
        member = self._members.get(name)
        if member is None or not member.isfile():
            raise InputError(f"{self.path}:{name}: not a regular file in the archive")
        if self._root is None and self._total() <= MEMORY_BYTES:
            if self._bytes is None:
                self._bytes = self._read_all()
            return io.BytesIO(self._bytes[name])
        return open(self.member_path(name), "rb")

    def _total(self) -> int:
        return sum(m.size for m in self._members.values())

    def _read_all(self) -> dict[str, bytes]:
        found: dict[str, bytes] = {}
        current = "(start of the archive)"
        try:
            with tarfile.open(self.path, "r:*") as tar:
                for member in tar:
                    name = _check_name(self.path, member)
                    current = name
                    if member.isfile() and name in self._members:
                        source = tar.extractfile(member)
                        data = source.read(member.size + 1) if source is not None else b""
                        if len(data) != self._members[name].size:
                            raise InputError(f"{self.path}: member {name!r} changed while "
                                             "reading")
                        found[name] = data
        except InputError:
            raise
        except READ_ERRORS as exc:
            raise InputError(f"{self.path}: truncated or corrupt archive in member {current!r} "
                             f"({type(exc).__name__}: {exc or 'unexpected end of data'})") from None
        return found

    def _unpack(self, root: Path) -> None:
        current = "(start of the archive)"
        try:
            with tarfile.open(self.path, "r:*") as tar:
                for member in tar:
                    name = _check_name(self.path, member)
                    expected = self._members.get(name)
                    if expected is None or expected.size != member.size \
                            or expected.type != member.type:
                        raise InputError(f"{self.path}: member {name!r} changed while reading")
                    current = name
                    target = root.joinpath(*PurePosixPath(name).parts)
                    if member.isdir():
                        target.mkdir(parents=True, exist_ok=True)
                        continue
                    target.parent.mkdir(parents=True, exist_ok=True)
                    source = tar.extractfile(member)
                    if source is None:  # pragma: no cover - refused by the index
                        raise InputError(f"{self.path}: member {name!r} is not a plain file")
                    with source, open(target, "xb") as out:
                        _copy(source, out, member.size)
        except InputError:
            raise
        except READ_ERRORS as exc:
            raise InputError(f"{self.path}: truncated or corrupt archive in member {current!r} "
                             f"({type(exc).__name__}: {exc or 'unexpected end of data'})") from None

    def close(self) -> None:
        """Remove the unpacked copy; a later `Archive.opened` opens the archive afresh."""
        with _lock:
            for key, archive in list(_open.items()):
                if archive is self:
                    del _open[key]
        if self._root is not None:
            shutil.rmtree(self._root, ignore_errors=True)
            self._root = None
        self._bytes = None


    @staticmethod
    def close_unpacked(inside: Path) -> None:
        """Close the archive whose unpacked copy holds `inside` (a bundle folder in it)."""
        with _lock:
            found = [a for a in _open.values()
                     if a._root is not None and inside.is_relative_to(a._root)]
        for archive in found:
            archive.close()


def _copy(source: BinaryIO, out: BinaryIO, size: int) -> None:
    left = size
    while left > 0:
        block = source.read(min(left, 1 << 20))
        if not block:
            raise EOFError("member shorter than its header says")
        out.write(block)
        left -= len(block)


def _check_name(archive: Path, member: tarfile.TarInfo) -> str:
    raw = member.name.rstrip("/") if member.isdir() else member.name
    name = PurePosixPath(raw)
    if (not raw or raw.startswith("/") or name.is_absolute() or ".." in name.parts
            or "" in raw.split("/") or "." in raw.split("/") or "\\" in raw
            or any(ord(c) < 32 for c in raw)):
        raise InputError(f"{archive}: unsafe member name {member.name!r}")
    return str(name)


def _check_tree(archive: Path, kinds: dict[str, bool], name: str, is_dir: bool) -> None:
    parts = PurePosixPath(name).parts
    for depth in range(1, len(parts)):
        parent = "/".join(parts[:depth])
        if kinds.get(parent) is False:
            raise InputError(f"{archive}: member {name!r} lies under {parent!r}, which is a file")
        kinds[parent] = True
    if name in kinds and kinds[name] != is_dir:
        what = "folder" if kinds[name] else "file"
        raise InputError(f"{archive}: member {name!r} is both a file and a {what}")
    kinds[name] = is_dir


def hold(closer: Callable[[], None]) -> None:
    """Run `closer` when the command ends (`release`), not before."""
    with _lock:
        _held.append(closer)


def release() -> None:
    """End of the command: close held readers and remove every unpacked archive."""
    with _lock:
        closers, _held[:] = list(_held), []
        archives = list(_open.values())
        _open.clear()
    for closer in reversed(closers):
        try:
            closer()
        except Exception:  # pragma: no cover - cleanup must not mask the command's result
            pass
    for archive in archives:
        archive.close()


atexit.register(release)
