"""The fast path of `sparktriage logs`: read only the lines the analysis needs.

Until a source's server serves, every line is fed to the parser (gate.py: the startup is read
whole). After that, the lines that pass the gate are found in each block of raw bytes
(blocks.py) and only those are split, decoded and parsed, plus what keeps the result identical
to the full path: a multi-line record is fed from its first line (backing up over lines that
end in ``\r``; such lines at a block's end travel into the next block), an open record is fed to
its end, and a candidate without a time stamp is preceded by the nearest stamped line (its time
is inferred from it, as the full path does).

The gate is evaluated by the compiled scanner when the extension is built (compiled.py), else by
gate.candidate_starts. When one plain-text source is analysed on its own, the compiled scanner
also folds the hot lines (stats and SpecDecoding lines) straight into the analysis (hotlink.py)
instead of handing them over as events. Tests check that every path gives the same document on
every fixture and on generated logs.
"""

from __future__ import annotations

import datetime as _dt
import gc
import re
import sys
from pathlib import Path
from typing import Iterator, Sequence

from sparktriage.bundle.archive import is_archive
from sparktriage.bundle.teardown import bundle_events, deliberate_stops
from sparktriage.errors import InputError
from sparktriage.logs import compiled
from sparktriage.logs.blocks import BLOCK, BlockReader
from sparktriage.logs.events import LogEvent
from sparktriage.logs.gate import candidate_starts, first_serving_mark, restart_mark, serving_mark
from sparktriage.logs.hotlink import HotLink
from sparktriage.logs.lineformat import FAST_PREFIX, has_time, parse_line
from sparktriage.logs.document import LogAnalyzer
from sparktriage.logs.parser import ParseOptions, _Assembler, merge_events, source_events
from sparktriage.logs.sources import (MAX_LINE, LogSource, RawLine, _decode, resolve_inputs,
                                      split_node)

_STAMPED = re.compile(FAST_PREFIX.encode())
MAX_FOLLOW = 4000  # lines fed after a candidate while its record stays open
CARRY_MAX = 64 * 1024  # bytes of trailing "\r"-ended lines carried into the next block
WINDOW_FIRST, WINDOW = 16 * 1024, 1024 * 1024  # pure Python: candidates searched window by window


class _FastFeeder:
    """Feeds an assembler with the lines of blocks that the gate (and exactness) requires.

    A block is ``buf[start:end]`` (whole lines); every offset below is an index into `buf`."""

    def __init__(self, assembler: _Assembler, crlf: bool = False, scanner=None,
                 link: HotLink | None = None) -> None:
        self.asm = assembler
        self.line_base = 0  # lines before the current block
        self.serving = False
        self.crlf = crlf  # a Windows file: each line's own CR is dropped
        self.mark = b"\r\r\n" if crlf else b"\r\n"  # the end of a line that continues a record
        self.scanner = scanner  # the compiled scanner, or None (pure Python)
        self.link = link  # lends the analysis to the compiled scanner for hot lines, or None
        self._start = self._end = 0

    def _raw(self, block, start: int, end: int, line_no: int) -> RawLine:
        raw = block[start:end]
        cut = len(raw) > MAX_LINE
        return RawLine(_decode(raw[:MAX_LINE] if cut else raw, self.crlf), line_no, truncated=cut)

    def _return_state(self, block) -> None:
        """Python is about to feed a line: take the analysis state back from the compiled
        scanner if it is lent (it stays lent across blocks while only hot lines come)."""
        if self.link is not None and self.link.state.loaded:
            self.link.store(block)

    def _follow(self, block, pos: int, number: int) -> tuple[int, int]:
        """Feed lines from `pos` (line `number`) while the assembler holds an open record."""
        find, end = block.find, self._end
        for _ in range(MAX_FOLLOW):
            if not self.asm.group or pos >= end:
                break
            self._return_state(block)
            stop = find(b"\n", pos, end)
            self.asm.feed(self._raw(block, pos, stop, number))
            pos, number = stop + 1, number + 1
        return pos, number

    def _feed_all(self, block, pos: int, stop: int, number: int) -> tuple[int, int]:
        """Feed every line in block[pos:stop] (stop is a line start)."""
        if stop <= pos:
            return pos, number
        self._return_state(block)
        feed, crlf = self.asm.feed, self.crlf
        for line in block[pos:stop - 1].split(b"\n"):
            if len(line) > MAX_LINE:
                feed(RawLine(_decode(line[:MAX_LINE], crlf), number, truncated=True))
            else:
                feed(RawLine(_decode(line, crlf), number))
            number += 1
        return stop, number

    def block(self, block, start: int, end: int) -> int:
        """Feed what block[start:end] needs; return where the bytes to carry into the next
        block begin (end when there are none)."""
        self._start, self._end = start, end
        emitted = len(self.asm.out)
        pos, next_line = self._follow(block, start, self.line_base + 1)
        self._restarted(emitted)  # a record that went on into this block may hold a restart
        limit = end  # trailing lines that may open a record travel to the next block
        mark, width = self.mark, len(self.mark)
        while limit - start >= width and block[limit - width:limit] == mark and \
                end - limit < CARRY_MAX:
            limit = max(block.rfind(b"\n", start, limit - 1) + 1, start)
            if limit <= pos:
                limit = end
                break
        gated = self._gated if self.scanner is None else self._gated_compiled
        while pos < limit:
            if self.asm.pending:  # untimed lines wait for the next timed line, whatever it is
                pos, next_line = self._until_timed(block, pos, limit, next_line)
                continue
            if not self.serving:  # a server starting: every line is read
                found = first_serving_mark(block, pos, limit)
                stop = limit if found < 0 else block.find(b"\n", found, end) + 1
                pos, next_line = self._feed_all(block, pos, stop, next_line)
                pos, next_line = self._follow(block, pos, next_line)
                if found >= 0:
                    self.serving = True
                continue
            pos, next_line = gated(block, pos, limit, next_line)
        if pos > limit:
            limit = pos
        self.line_base = next_line - 1
        return limit

    def _until_timed(self, block, pos: int, limit: int, number: int) -> tuple[int, int]:
        """Feed lines one by one while untimed events wait for a time (an excerpt's top), so
        they take the time of the same line as on the full path."""
        self._return_state(block)
        out = self.asm.out
        emitted = len(out)
        while pos < limit and self.asm.pending:
            stop = block.find(b"\n", pos, self._end)
            raw = self._raw(block, pos, stop, number)
            self.asm.feed(raw)
            if not self.serving and serving_mark(raw.text):
                self.serving = True
            pos, number = stop + 1, number + 1
        pos, number = self._follow(block, pos, number)
        self._restarted(emitted)
        return pos, number

    def _restarted(self, emitted: int) -> None:
        """A restart mark among the events emitted since `emitted`: read everything again."""
        if self.serving and any(restart_mark(e.raw) for e in self.asm.out[emitted:]):
            self.serving = False

    @staticmethod
    def _candidates(block, pos: int, limit: int) -> Iterator[int]:
        """Candidate line starts in block[pos:limit], found window by window (a restart mark
        stops the caller early, so the rest of the block is not scanned for nothing)."""
        window = WINDOW_FIRST
        while pos < limit:
            stop = min(limit, pos + window)
            if stop < limit:
                stop = block.find(b"\n", stop - 1, limit) + 1 or limit
            yield from candidate_starts(block, pos, stop)
            pos = stop
            window = min(2 * window, WINDOW)

    def _gated(self, block, pos: int, limit: int, next_line: int) -> tuple[int, int]:
        """Feed the candidates in block[pos:limit] until a restart mark; return where it stopped."""
        count = block.count
        for candidate in self._candidates(block, pos, limit):
            if candidate < pos:
                continue
            pos, next_line, restarted = self._candidate(
                block, pos, candidate, next_line + count(b"\n", pos, candidate))
            if restarted:
                return pos, next_line
        if pos < limit:
            skipped = count(b"\n", pos, limit)
            self._time_anchor(block, pos, limit, next_line + skipped, candidate=False)
            next_line += skipped
        return max(pos, limit), next_line

    def _gated_compiled(self, block, pos: int, limit: int, next_line: int) -> tuple[int, int]:
        """`_gated` with the compiled scanner: it finds the candidates, and folds the hot ones
        into the analysis while the link lends it the state (until Python feeds a line)."""
        link = self.link
        state = link.state if link is not None else None
        scan = self.scanner.next
        while True:
            cand, fed, lines_fed, to_cand, hot = scan(block, pos, limit, next_line, state)
            pos, next_line = fed, next_line + lines_fed
            if cand < 0:
                break
            if hot and link.load():
                continue
            self._return_state(block)
            pos, next_line, restarted = self._candidate(block, pos, cand, next_line + to_cand)
            if restarted:
                return pos, next_line
        if pos < limit:
            self._time_anchor(block, pos, limit, next_line + to_cand, candidate=False)
            next_line += to_cand
        return max(pos, limit), next_line

    def _candidate(self, block, pos: int, candidate: int, line_no: int) -> tuple[int, int, bool]:
        """Feed one candidate (`line_no`), with what exactness needs before and after it."""
        out = self.asm.out
        mark, width = self.mark, len(self.mark)
        start, backed = candidate, 0
        while start - width >= pos and block[start - width:start] == mark and \
                backed < MAX_FOLLOW:  # back to the first line of the candidate's record
            start = max(block.rfind(b"\n", pos, start - width + 1) + 1, pos)
            line_no -= 1
            backed += 1
        if start > pos:
            self._time_anchor(block, pos, start, line_no)
        emitted = len(out)
        end = block.find(b"\n", candidate, self._end)
        fed, number = self._feed_all(block, start, end + 1, line_no)  # through the candidate
        pos, next_line = self._follow(block, fed, number)
        if any(restart_mark(e.raw) for e in out[emitted:]):
            self.serving = False  # a new server process: read its startup in full
            return pos, next_line, True
        return pos, next_line, False

    def _time_anchor(self, block, lo: int, start: int, line_no: int,
                     candidate: bool = True) -> None:
        """Feed the nearest stamped line before `start` (when the line at `start` has none)."""
        if candidate:
            if _STAMPED.match(block, start):  # vLLM's common prefix: the line has its own stamp
                return
            end = block.find(b"\n", start, self._end)
            fields = parse_line(_decode(block[start:end][:MAX_LINE], self.crlf))
            if has_time(fields):
                return
        hi = start - 1  # the newline that ends the previous line
        number = line_no - 1
        if self.scanner is not None:  # uvicorn and empty lines carry no stamp: skip them in C
            hi, skipped = self.scanner.skip_unstamped(block, lo, hi)
            number -= skipped
        while hi >= lo and hi > self._start:
            begin = max(block.rfind(b"\n", lo, hi) + 1, lo)
            text = _decode(block[begin:hi][:MAX_LINE], self.crlf)
            prev = parse_line(text)
            if has_time(prev):
                self._return_state(block)
                self.asm.feed(RawLine(text, number))
                return
            if begin == lo:
                return
            hi, number = begin - 1, number - 1


def _scanner(compiled_path: bool | None):
    """The compiled scanner (None: pure Python). compiled_path: None = when built, True =
    required (InputError if not built), False = never."""
    if compiled_path is False:
        return None
    found = compiled.scanner()
    if found is None and compiled_path:
        raise InputError("the compiled scanner (sparktriage.logs._fastscan) is not available")
    return found


def fast_events(source: LogSource, options: ParseOptions, block_size: int = BLOCK, *,
                analyzer: LogAnalyzer | None = None,
                compiled_path: bool | None = None) -> Iterator[LogEvent]:
    """The events of a plain-text source that the analysis needs (see module docstring).

    With `analyzer` (the one analysis that consumes these events, alone), hot lines may be
    folded into it directly by the compiled scanner instead of being yielded."""
    assembler = _Assembler(source, options)
    out = assembler.out
    stream = source.open_binary()
    crlf = source.is_crlf(stream)
    scanner = _scanner(compiled_path)
    link = None
    if scanner is not None and analyzer is not None:
        link = HotLink(compiled.hot_state(), analyzer, assembler, source, crlf)
    feeder = _FastFeeder(assembler, crlf, scanner, link)
    reader = BlockReader(stream, block_size)
    try:
        for buf, start, end in reader:
            reader.consumed = feeder.block(buf, start, end)
            if link is not None:
                link.keep(buf)  # the buffer is reused: the last folded line is copied out
            if out:
                yield from out
                out.clear()
    except (OSError, EOFError, ValueError) as exc:
        raise InputError(f"cannot read {source.origin}: {exc}") from exc
    finally:
        if stream is not sys.stdin.buffer:
            stream.close()
    if link is not None:
        if link.state.loaded:
            link.store(None)
        options.stats["folded"] = options.stats.get("folded", 0) + link.folded
    assembler.finish()
    yield from out


def analyze_inputs(specs: Sequence[str | LogSource], *, tz: _dt.tzinfo | None = None,
                   year: int | None = None, fast: bool = True, block_size: int = BLOCK,
                   compiled_path: bool | None = None) -> dict:
    """Resolve input specs, stream them once, and return the `logs` document."""
    sources: list[LogSource] = []
    for spec in specs:
        sources.extend([spec] if isinstance(spec, LogSource) else resolve_inputs([spec]))
    options = ParseOptions(tz=tz, year=year)
    analyzer = LogAnalyzer(tz)
    analyzer.teardown = _teardown(specs, sources)
    alone = len(sources) == 1
    streams = [fast_events(s, options, block_size, analyzer=analyzer if alone else None,
                           compiled_path=compiled_path) if fast and not s.records
               else source_events(s, options) for s in sources]
    collecting = gc.isenabled()
    gc.disable()  # no per-line reference cycles; the collector only slows the tens of
    try:          # thousands of kept windows down (about 10% of the run)
        return analyzer.feed_all(merge_events(streams)).document()
    finally:
        if collecting:
            gc.enable()


def _teardown(specs: Sequence[str | LogSource], sources: list[LogSource]) -> dict[str, float]:
    """The collector's deliberate teardown of each node of the bundles among the inputs
    (bundle/teardown.py): what a node logs as it is stopped is no failure, as in `stalls`."""
    nodes = sorted({s.node for s in sources if s.records})
    out: dict[str, float] = {}
    for spec in specs:
        if not isinstance(spec, str):
            continue
        node, target = split_node(spec)
        path = Path(target)
        if node is not None or target == "-" or not (path.is_dir() or is_archive(path)):
            continue
        for name, t in deliberate_stops(bundle_events(path), nodes).items():
            out[name] = min(out.get(name, t), t)
    return out


__all__ = ["fast_events", "analyze_inputs", "BLOCK"]
