"""The vLLM log parser: physical lines in, timed and joined `LogEvent`s out, streaming.

Public API (docs/logs.md):

* ``iter_events(inputs, options)``: a lazy stream of events from files, ``NODE=path`` specs,
  stdin, line records or bundles; several inputs are merged by time (input order breaks ties).
* ``parse_files(paths, ...)`` → ``list[LogEvent]``: the same, collected.
* ``parse_lines(lines, ...)`` → ``list[LogEvent]``: from text lines or bytes in memory.

Joining: a vLLM line that ends in ``\\r`` continues on the next line with the same prefix
(NewLineFormatter); an unprefixed Python traceback runs from ``Traceback (most recent call
last):`` through its indented lines to the exception line; a Python warning takes its indented
source line. Timing, per event: the line record's receive time (``t_source="receive"``), else
the line's own stamp through `clock.StampClock` (``"log"``; a collector's dated stamp on the same
line gives that clock its year, and its zone when none was given), else the collector's stamp
(``"receive"``), else the previous event's time (``"inferred"``). Untimed lines at the top of a
source (an excerpt's first lines) are held until the first timed line and take its time
(``"inferred"`` too); `timed_by` names the timed line an inferred event took its time from.
Only a source with no timed line at all gives events without a time. Memory stays bounded: one
record is at most `MAX_RECORD_LINES` lines and `MAX_RECORD_CHARS` characters; at most
`MAX_PENDING` untimed events wait for a time.
"""

from __future__ import annotations

import heapq
from dataclasses import dataclass, field
from datetime import tzinfo
from pathlib import Path
from typing import Iterable, Iterator, Sequence

from sparktriage.logs.clock import HALF_YEAR, StampClock
from sparktriage.logs.events import LogEvent
from sparktriage.logs.lineformat import LineFields, has_time, parse_line
from sparktriage.redact.detect import KeyBlocks
from sparktriage.logs.sources import (
    BytesSource,
    LogSource,
    RawLine,
    resolve_inputs,
    split_lines,
    stream_crlf,
    _decode,
)

MAX_RECORD_LINES = 2000
MAX_RECORD_CHARS = 256 * 1024
MAX_PENDING = 5000  # untimed events held at the top of a source until its first timed line
TRACEBACK = "Traceback (most recent call last):"


@dataclass(frozen=True)
class ParseOptions:
    """How to read time stamps: the zone (None = local), a fixed year, a reference moment."""

    tz: tzinfo | None = None
    year: int | None = None
    reference: float | None = None  # the log cannot be later than this (default: mtime or now)
    stats: dict = field(default_factory=dict, compare=False)  # filled: lines, truncated, ...


_new = object.__new__


def _make_event(fields: dict) -> LogEvent:
    """A LogEvent without the frozen dataclass's per-field __setattr__ cost (8x faster).

    Equality, hashing and repr are unchanged; `fields` names every LogEvent field."""
    event = _new(LogEvent)
    event.__dict__.update(fields)
    return event


_PEEK_LINES = 200  # the head read for a dated stamp (bounded: one short pass over a file)


def _dated_reference(source: LogSource, reference: float | None, tz: tzinfo | None) -> float | None:
    """A better reference for year-less stamps when the file's head carries a dated stamp (Ray's
    own ``2025-02-26 11:14:54,614 INFO worker.py`` lines, a launcher's or collector's date): the
    log cannot be much later than half a year after it. Only ever earlier than `reference` (a
    paste written to a file long after the run), so a live log reads as before. Files only: a
    stream cannot be read twice."""
    if source.path is None or source.records:
        return reference
    clock = StampClock(reference, tz)
    try:
        for raw in source.lines():
            if raw.line_no > _PEEK_LINES:
                break
            fields = parse_line(raw.text)
            full, frac, offset = fields.stamp_full, fields.frac, fields.utc_offset
            if full is None:
                full, frac, offset = (fields.collector_full, fields.collector_frac,
                                      fields.collector_offset)
            t = clock.from_full(full, frac, offset) if full is not None else None
            if t is not None:
                bound = t + HALF_YEAR
                return bound if reference is None or bound < reference else reference
    except Exception:  # noqa: BLE001 - a peek never decides whether the source can be read
        return reference
    return reference


class _Assembler:
    """Joins the physical lines of one source into events and times them.

    `feed` appends finished events to `out`; the caller drains it after every line."""

    def __init__(self, source: LogSource, options: ParseOptions) -> None:
        self.source = source
        reference = options.reference if options.reference is not None else source.mtime()
        if options.reference is None and options.year is None:
            reference = _dated_reference(source, reference, options.tz)
        self.clock = StampClock(reference, options.tz, options.year)
        self.last_t: float | None = None
        self.last_timed_line: int | None = None  # line_no of the line that gave last_t
        self.collector_clock: StampClock | None = None  # journald's year-less stamps
        self.calibrated = options.year is not None
        self.pending: list[LogEvent] = []  # untimed events before the source's first timed one
        self.group: list[tuple[RawLine, LineFields]] = []
        self.mode = ""  # "" | "cont" | "traceback" | "pywarn"
        self.chars = 0
        self.out: list[LogEvent] = []
        self.key_blocks = KeyBlocks()  # one source: a key block is followed line to line

    def feed(self, raw: RawLine) -> None:
        text = raw.text
        if not text or text.isspace():
            if self.group and self.mode != "cont":
                self.flush()
            return
        fields = parse_line(text)
        if self.group:
            if self._continues(fields):
                self.group.append((raw, fields))
                self.chars += len(text)
                if self._closes(fields):
                    self.flush()
                return
            self.flush()
        if fields.cont and (fields.kind == "vllm" or fields.kind == "json"):
            self.mode = "cont"
        elif fields.kind == "pywarn":
            self.mode = "pywarn"
        elif fields.message.startswith(TRACEBACK):
            self.mode = "traceback"
        else:
            self._emit([(raw, fields)])
            return
        self.group.append((raw, fields))
        self.chars += len(text)

    def _continues(self, fields: LineFields) -> bool:
        if len(self.group) >= MAX_RECORD_LINES or self.chars >= MAX_RECORD_CHARS:
            return False
        head = self.group[0][1]
        last = self.group[-1][1]
        if self.mode == "cont":
            return last.cont and fields.kind == head.kind and (
                fields.process, fields.pid, fields.level, fields.source_file, fields.source_line,
                fields.stamp) == (head.process, head.pid, head.level, head.source_file,
                                  head.source_line, head.stamp)
        if fields.process != head.process or fields.pid != head.pid or fields.kind != "text" \
                or fields.relay != head.relay or fields.rank != head.rank:
            return False
        if self.mode == "pywarn":
            return len(self.group) == 1 and fields.message[:1] in (" ", "\t")
        return True  # traceback: indented lines, then the exception line closes it

    def _closes(self, fields: LineFields) -> bool:
        if self.mode == "cont":
            return not fields.cont
        if self.mode == "pywarn":
            return True
        return fields.message[:1] not in (" ", "\t") and not fields.message.startswith(TRACEBACK)

    def flush(self) -> None:
        if self.group:
            group, self.group, self.mode, self.chars = self.group, [], "", 0
            self._emit(group)

    def finish(self) -> None:
        """The source ended: flush the open record; untimed events never timed stay untimed."""
        self.flush()
        self.release_pending()

    def _emit(self, group: list[tuple[RawLine, LineFields]]) -> None:
        raw0, head = group[0]
        t, t_source = self._time(raw0, head)
        if len(group) == 1:
            message, raw_text, truncated = head.message, raw0.text, raw0.truncated
        else:
            message = "\n".join(f.message for _, f in group)
            raw_text = "\n".join(r.text for r, _ in group)
            truncated = any(r.truncated for r, _ in group)
        kind = head.kind
        if kind == "text" and head.message.startswith(TRACEBACK):
            kind = "traceback"
        if self.key_blocks.inside(message):  # a private key's lines: emptied before any
            keep = len(raw_text) - len(message)  # stage sees them (redact/detect.py)
            raw_text = (raw_text[:keep] if keep > 0 and raw_text.endswith(message) else "") + "***"
            message = "***"
        node = self.source.node
        if raw0.node and not self.source.node_given:
            node = raw0.node
        event = _make_event({
            "t": t, "t_source": t_source, "node": node, "stream": raw0.stream or head.stream,
            "process": head.process, "pid": head.pid, "relay": head.relay, "level": head.level,
            "source_file": head.source_file, "source_line": head.source_line,
            "message": message, "raw": raw_text, "line_no": raw0.line_no,
            "origin": self.source.origin, "kind": kind, "truncated": truncated,
            "timed_by": self.last_timed_line if t_source == "inferred" else None,
            "collector": head.collector,
        })
        if t is None:
            if len(self.pending) < MAX_PENDING:
                self.pending.append(event)  # an excerpt's top: its time comes from below
                return
            self.release_pending()
            self.out.append(event)
            return
        if self.pending and t_source != "inferred":
            self.release_pending(t, raw0.line_no)
        self.out.append(event)

    def release_pending(self, t: float | None = None, line_no: int | None = None) -> None:
        """Emit the held untimed events, with time `t` (the first timed line's) when given."""
        pending, self.pending = self.pending, []
        for event in pending:
            if t is not None:
                event = _make_event({**event.__dict__, "t": t, "t_source": "inferred",
                                     "timed_by": line_no})
            self.out.append(event)

    def _time(self, raw: RawLine, fields: LineFields) -> tuple[float | None, str]:
        t = None
        source = "none"
        if raw.t_receive is not None:
            t, source = raw.t_receive, "receive"
        else:
            collected = self._collector_time(fields) if fields.collector is not None else None
            if fields.stamp is not None:
                if collected is not None and not self.calibrated and \
                        fields.collector_full is not None:
                    self.calibrated = True  # the collector's dated stamp: year (and zone)
                    self.clock.calibrate(collected, fields.stamp, fields.collector_offset)
                t = self.clock.from_stamp(fields.stamp, fields.frac)
                source = "log"
            elif fields.stamp_full is not None:
                t = self.clock.from_full(fields.stamp_full, fields.frac, fields.utc_offset)
                source = "log"
            if t is None and collected is not None:
                t, source = collected, "receive"
        if t is None:
            if self.last_t is not None:
                return self.last_t, "inferred"
            return None, "none"
        self.last_t = t
        self.last_timed_line = raw.line_no
        return t, source

    def _collector_time(self, fields: LineFields) -> float | None:
        """Unix seconds of the collector's stamp on this line (None: it has none or it is not
        a real date). A journald stamp has no year: it gets its own clock (same rules)."""
        if fields.collector_full is not None:
            return self.clock.from_full(fields.collector_full, fields.collector_frac,
                                        fields.collector_offset)
        if fields.collector_stamp is not None:
            if self.collector_clock is None:
                self.collector_clock = StampClock(self.clock.reference, self.clock.tz,
                                                  self.clock.fixed_year)
            return self.collector_clock.from_stamp(fields.collector_stamp, fields.collector_frac)
        return None


def source_events(source: LogSource, options: ParseOptions | None = None,
                  lines: Iterable[RawLine] | None = None) -> Iterator[LogEvent]:
    """Events of one source, in input order."""
    options = options or ParseOptions()
    assembler = _Assembler(source, options)
    out = assembler.out
    for raw in (source.lines() if lines is None else lines):
        assembler.feed(raw)
        if out:
            yield from out
            out.clear()
    assembler.finish()
    yield from out


def _key(event: LogEvent, index: int) -> tuple:
    return (event.t if event.t is not None else float("-inf"), index, event.line_no)


def merge_events(streams: Sequence[Iterator[LogEvent]]) -> Iterator[LogEvent]:
    """Merge per-source event streams by time; ties keep input order."""
    if len(streams) == 1:
        yield from streams[0]
        return
    keyed = [((_key(e, i), e) for e in stream) for i, stream in enumerate(streams)]
    for _, event in heapq.merge(*keyed, key=lambda pair: pair[0]):
        yield event


def iter_events(inputs: Sequence[str | Path | LogSource],
                options: ParseOptions | None = None) -> Iterator[LogEvent]:
    """Stream events from input specs (paths, ``NODE=path``, ``-``, bundles) or sources."""
    options = options or ParseOptions()
    sources: list[LogSource] = []
    for item in inputs:
        if isinstance(item, LogSource):
            sources.append(item)
        else:
            sources.extend(resolve_inputs([str(item)]))
    return merge_events([source_events(s, options) for s in sources])


def parse_files(paths: Sequence[str | Path], *, tz: tzinfo | None = None,
                year: int | None = None) -> list[LogEvent]:
    """Parse log files (or any input spec) into a time-merged list of events."""
    return list(iter_events(list(paths), ParseOptions(tz=tz, year=year)))


def parse_lines(lines: Iterable[str | bytes], *, node: str = "local", origin: str = "<lines>",
                tz: tzinfo | None = None, year: int | None = None,
                reference: float | None = None) -> list[LogEvent]:
    """Parse lines held in memory (str, or bytes decoded as UTF-8 with replacement)."""
    source = BytesSource(origin, node, False)
    raws = (
        RawLine(_decode(line) if isinstance(line, bytes) else line.rstrip("\n"), number)
        for number, line in enumerate(lines, 1)
    )  # lines given one by one: their CRs are kept (no CRLF sniffing)
    return list(source_events(source, ParseOptions(tz=tz, year=year, reference=reference), raws))


def parse_bytes(data: bytes, *, node: str = "local", origin: str = "<bytes>",
                records: bool = False, options: ParseOptions | None = None) -> list[LogEvent]:
    """Parse a whole log (plain text or line records) held as bytes."""
    source = BytesSource(origin, node, records, data=data)
    return list(source_events(source, options))


def iter_stream(stream, *, node: str = "local", origin: str = "<stream>",
                options: ParseOptions | None = None) -> Iterator[LogEvent]:
    """Events from any binary stream of plain log text, in bounded memory."""
    source = BytesSource(origin, node, False)
    crlf = stream_crlf(stream)
    raws = (RawLine(_decode(raw, crlf), n, truncated=cut)
            for n, (raw, cut) in enumerate(split_lines(stream), 1))
    return source_events(source, options, raws)


__all__ = ["ParseOptions", "iter_events", "parse_files", "parse_lines", "parse_bytes",
           "iter_stream", "source_events", "merge_events"]
