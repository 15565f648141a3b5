"""Where log lines come from: plain files, stdin, our line records, evidence bundles.

An input spec is what the user typed: ``PATH``, ``NODE=PATH``, ``-`` (stdin), a bundle folder
(``nodes/<node>/logs/*.lines.jsonl``), a bundle ``.tar.gz``, or a run directory's launch folder.
`resolve_inputs` expands specs into `LogSource`s (one per stream of lines, each with its node);
`LogSource.lines()` streams `RawLine`s in bounded memory: the file is read in blocks and split at
the byte level, a line longer than `MAX_LINE` bytes is cut (flagged `truncated`) and the rest of
it skipped, and bytes are decoded as UTF-8 with replacement, so no input can crash the reader.
Line records (``*.lines.jsonl``, docs/formats.md) carry a receive time per line, which takes
precedence over the stamp inside the line.
"""

from __future__ import annotations

import gzip
import io
import json
import math
import os
import re
import sys
import tarfile
from dataclasses import dataclass
from pathlib import Path
from typing import BinaryIO, Iterator, NamedTuple, Sequence

from sparktriage.errors import InputError
from sparktriage.bundle.archive import Archive
from sparktriage.store.documents import escape_text

MAX_LINE = 1 << 20  # bytes kept of one physical line
BLOCK = 1 << 20
_NODE = re.compile(r"^[A-Za-z0-9][A-Za-z0-9._:-]{0,63}\Z")
_RECORD_NAME = (".lines.jsonl", ".lines.jsonl.gz")


class RawLine(NamedTuple):
    """One physical line as read, before parsing."""

    text: str  # decoded, without the newline
    line_no: int  # 1-based, in its input
    t_receive: float | None = None  # receive time from a line record
    stream: str | None = None
    node: str | None = None  # node named by a line record
    truncated: bool = False


def split_lines(stream: BinaryIO, max_line: int = MAX_LINE,
                block: int = BLOCK) -> Iterator[tuple[bytes, bool]]:
    """Yield (line bytes without newline, truncated) from a binary stream in bounded memory."""
    tail = b""
    skipping = False  # inside an over-long line whose head was already yielded
    while True:
        chunk = stream.read(block)
        if not chunk:
            break
        data = tail + chunk if tail else chunk
        start = 0
        if skipping:
            cut = data.find(b"\n")
            if cut < 0:
                tail = b""
                continue
            skipping = False
            start = cut + 1
        end = data.rfind(b"\n")
        if end >= start:
            body = data[start:end]
            for line in body.split(b"\n"):
                if len(line) > max_line:
                    yield line[:max_line], True
                else:
                    yield line, False
            tail = data[end + 1:]
        else:
            tail = data[start:] if start else data
        if len(tail) > max_line:
            yield tail[:max_line], True
            tail = b""
            skipping = True
    if tail and not skipping:
        yield tail, False


def _decode(raw: bytes, crlf: bool = False) -> str:
    """Bytes of one line as text; in a CRLF file the line's own CR is not vLLM's marker."""
    if crlf and raw.endswith(b"\r"):
        raw = raw[:-1]
    return raw.decode("utf-8", errors="replace")


def detect_crlf(head: bytes) -> bool:
    """A Windows text file: every complete line of its head ends in CR LF (vLLM's own CR LF
    appears only inside multi-line records, never on every line)."""
    lines = head.split(b"\n")[:-1][:200]
    lines = [line for line in lines if line]
    return len(lines) >= 3 and all(line.endswith(b"\r") for line in lines)


def stream_crlf(stream: BinaryIO) -> bool:
    """Sniff a stream's first bytes without consuming them (when it can peek)."""
    peek = getattr(stream, "peek", None)
    if peek is None:
        return False
    try:
        return detect_crlf(peek(65536)[:65536])
    except (OSError, ValueError, EOFError):
        return False


@dataclass(frozen=True)
class LogSource:
    """One stream of lines with its node name; opened lazily."""

    origin: str  # path, "<stdin>", or "bundle.tar.gz:member"
    node: str
    records: bool  # line records (JSON per line) rather than plain text
    path: Path | None = None
    member: str | None = None  # tar member name
    node_given: bool = False  # NODE=PATH: overrides the node of line records

    def mtime(self) -> float | None:
        """Modification time of the underlying file (the log's last write), if known."""
        if self.path is None:
            return None
        try:
            return self.path.stat().st_mtime
        except OSError:
            return None

    def _open(self) -> BinaryIO:
        if self.path is None:
            return sys.stdin.buffer
        try:
            if self.member is not None:  # the command's one checked, unpacked copy
                return Archive.opened(self.path).open_member(self.member)
            if self.path.suffix == ".gz":
                return gzip.open(self.path, "rb")
            return open(self.path, "rb")
        except (OSError, tarfile.TarError) as exc:
            raise InputError(f"cannot read {self.origin}: {getattr(exc, 'strerror', None) or exc}") from exc

    def open_binary(self) -> BinaryIO:
        return self._open()

    def is_crlf(self, stream: BinaryIO) -> bool:
        """Is this plain-text source a CRLF file? (sniffed from the open stream's head)"""
        return stream_crlf(stream)

    def lines(self) -> Iterator[RawLine]:
        """The source's physical lines, decoded, in order."""
        stream = self._open()
        try:
            if self.records:
                yield from _record_lines(stream, self.origin)
            else:
                crlf = self.is_crlf(stream)
                for number, (raw, cut) in enumerate(_guarded(split_lines(stream), self.origin), 1):
                    yield RawLine(_decode(raw, crlf), number, truncated=cut)
        finally:
            if stream is not sys.stdin.buffer:
                stream.close()


def _guarded(lines: Iterator[tuple[bytes, bool]], origin: str) -> Iterator[tuple[bytes, bool]]:
    try:
        yield from lines
    except (OSError, EOFError, gzip.BadGzipFile, tarfile.TarError, ValueError) as exc:
        raise InputError(f"cannot read {origin}: {exc}") from exc


def _record_lines(stream: BinaryIO, origin: str) -> Iterator[RawLine]:
    """Line records: {"t", "node", "stream", "line"} per line; malformed records become text."""
    for number, (raw, cut) in enumerate(_guarded(split_lines(stream), origin), 1):
        if not raw.strip():
            continue
        record = None
        if not cut:
            try:
                record = json.loads(raw)
            except (ValueError, RecursionError):  # ValueError: JSON, and lone surrogates
                record = None
        if not isinstance(record, dict) or not isinstance(record.get("line"), str):
            yield RawLine(_decode(raw), number, truncated=cut)  # keep what was there
            continue
        t = record.get("t")
        t = float(t) if isinstance(t, (int, float)) and not isinstance(t, bool) else None
        if t is not None and not math.isfinite(t):
            t = None
        if record.get("backfill") is True:  # read when tailing began: the line's stamp is better
            t = None
        stream_name = record.get("stream") if isinstance(record.get("stream"), str) else None
        node = record.get("node") if isinstance(record.get("node"), str) else None
        line = escape_text(record["line"])  # a "\\ud800" escape must not crash a printer
        line = line[:-1] if line.endswith("\n") else line
        yield RawLine(line[:MAX_LINE], number, t, stream_name, node, len(line) > MAX_LINE)


def _sniff_records(path: Path) -> bool:
    name = path.name
    if name.endswith(_RECORD_NAME):
        return True
    try:
        opener = gzip.open if path.suffix == ".gz" else open
        with opener(path, "rb") as fh:
            head = fh.read(65536)
    except (OSError, EOFError, gzip.BadGzipFile):
        return False
    first = head.split(b"\n", 1)[0].strip()
    if not first.startswith(b"{"):
        return False
    try:
        doc = json.loads(first)
    except ValueError:
        return False
    return isinstance(doc, dict) and isinstance(doc.get("line"), str) and "t" in doc


def _node_of(path: Path) -> str:
    name = path.name
    for suffix in (".gz", ".jsonl", ".lines", ".log", ".txt", ".out", ".err"):
        if name.endswith(suffix) and len(name) > len(suffix):
            name = name[: -len(suffix)]
    return name or "local"


def _bundle_sources(root: Path, node: str | None) -> list[LogSource]:
    found = sorted(root.glob("nodes/*/logs/*.lines.jsonl")) + sorted(
        root.glob("nodes/*/logs/*.lines.jsonl.gz"))
    return [LogSource(str(p), node or p.parent.parent.name, True, p, node_given=node is not None)
            for p in found]


def _tar_sources(path: Path, node: str | None) -> list[LogSource]:
    names = Archive.opened(path).names()  # indexed once, checked and capped (bundle.archive)
    pattern = re.compile(r"(?:^|/)nodes/([^/]+)/logs/[^/]+\.lines\.jsonl\Z")
    sources = []
    for name in sorted(names):
        m = pattern.search(name)
        if m:
            sources.append(LogSource(f"{path}:{name}", node or m.group(1), True, path, name,
                                     node_given=node is not None))
    if not sources:
        raise InputError(f"{path}: no nodes/<node>/logs/*.lines.jsonl in this archive",
                         hint="an evidence bundle .tar.gz is expected here")
    return sources


def _dir_sources(root: Path, node: str | None) -> list[LogSource]:
    sources = _bundle_sources(root, node)
    if not sources and (root / "bundle").is_dir():
        sources = _bundle_sources(root / "bundle", node)
    if not sources:
        for name in ("server.log.lines.jsonl", "server.log"):  # a launch folder of a run directory
            if (root / name).is_file():
                path = root / name
                return [LogSource(str(path), node or "local", name.endswith(".jsonl"), path,
                                  node_given=node is not None)]
    if not sources:
        raise InputError(f"{root}: a folder, but neither an evidence bundle "
                         "(nodes/<node>/logs/*.lines.jsonl) nor a launch folder with server.log")
    return sources


def split_node(spec: str) -> tuple[str | None, str]:
    """``NODE=PATH`` → (NODE, PATH); anything else → (None, spec)."""
    if "=" in spec and not os.path.exists(spec):
        node, _, rest = spec.partition("=")
        if _NODE.match(node) and rest:
            return node, rest
    return None, spec


def resolve_inputs(specs: Sequence[str]) -> list[LogSource]:
    """Expand the command line's log arguments into sources; one-line errors for bad ones."""
    if not specs:
        raise InputError("no log given (pass a file, NODE=FILE, a bundle, or - for stdin)")
    sources: list[LogSource] = []
    stdin_seen = False
    for spec in specs:
        node, target = split_node(spec)
        if target == "-":
            if stdin_seen:
                raise InputError("stdin (-) given more than once")
            stdin_seen = True
            sources.append(LogSource("<stdin>", node or "local", False, None,
                                     node_given=node is not None))
            continue
        path = Path(target)
        if path.is_dir():
            sources.extend(_dir_sources(path, node))
        elif not path.exists():
            raise InputError(f"{target}: no such file")
        elif not path.is_file():
            raise InputError(f"{target}: not a regular file")
        elif target.endswith((".tar.gz", ".tgz", ".tar")):
            sources.extend(_tar_sources(path, node))
        else:
            if not os.access(path, os.R_OK):
                raise InputError(f"{target}: permission denied")
            sources.append(LogSource(str(path), node or _node_of(path), _sniff_records(path),
                                     path, node_given=node is not None))
    return sources


def source_from_bytes(data: bytes, origin: str = "<bytes>", node: str = "local",
                      records: bool = False) -> "BytesSource":
    """A source over bytes in memory (tests, the bench hooks)."""
    return BytesSource(origin, node, records, data=data)


@dataclass(frozen=True)
class BytesSource(LogSource):
    data: bytes = b""

    def _open(self) -> BinaryIO:
        return io.BytesIO(self.data)

    def is_crlf(self, stream: BinaryIO) -> bool:
        return detect_crlf(self.data[:65536])
