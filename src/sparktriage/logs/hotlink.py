"""Lend the analysis state to the compiled scanner while it folds hot lines in, and take it back.

The hot lines of a serving log, the periodic stats line and the SpecDecoding line in their
common shapes, make up most of what the analysis reads. The compiled scanner (`_fastscan`)
parses them in full and applies their effect directly instead of building an event for each.
It may do so only in the one situation where that effect is simple and known: the source is
serving, its node's startup timeline is complete, no multi-line record is being joined, the
stamp year is known, windows are not filtered by time. `HotLink.load` checks that, hands the
pending events to the analyzer, and copies into the C `HotState` what hot lines read: the stamp
clock, the running totals of both series, the engines' last stats times. `store` writes the
changes back (counters, totals, the timeline's last line and event, the assembler's last time)
before Python reads any other line. Every operation on a number is the same one the Python path
does, in the same order, so the document is identical (tests run both paths on the same logs).

Warnings are the other frequent line while serving (vLLM repeats some for every request). When
Python has analysed a WARNING line whose message matches no catalog rule, no fatal signature and
no restart mark, `drain` registers that exact message: the compiled scanner then folds later
lines with the same message in (they only count, and raise that warning's count).
"""

from __future__ import annotations

import math

from sparktriage.logs.catalog import match_message
from sparktriage.logs.events import LogEvent
from sparktriage.logs.facts import _FATAL_RE
from sparktriage.logs.gate import restart_mark
from sparktriage.logs.lineformat import parse_line
from sparktriage.logs.document import LogAnalyzer
from sparktriage.logs.parser import TRACEBACK, _Assembler, _make_event
from sparktriage.logs.series import SpecWindow, StatsWindow
from sparktriage.logs.sources import LogSource, _decode
from sparktriage.logs.timeline import _summary_line

_INT64 = 2**63 - 1
_NONE = float("nan")


def _nan(value: float | None) -> float:
    return _NONE if value is None else value


def _none(value: float) -> float | None:
    return None if math.isnan(value) else value


class HotLink:
    """The link between one source's analysis (Python) and the compiled scanner's HotState."""

    def __init__(self, state, analyzer: LogAnalyzer, assembler: _Assembler, source: LogSource,
                 crlf: bool) -> None:
        self.state = state
        self.analyzer = analyzer
        self.asm = assembler
        self.origin = source.origin
        self.node = source.node
        self.crlf = crlf
        state.crlf = int(crlf)
        state.node = source.node
        state.hour_base = assembler.clock.hour_base
        state.stats_cls = StatsWindow
        state.spec_cls = SpecWindow
        self.folded = 0  # hot lines folded in (for tests and the benchmark)

    def drain(self) -> None:
        """Feed the events Python has built so far to the analyzer (in order), and register
        the warnings that later lines may fold into."""
        out, an = self.asm.out, self.analyzer
        for event in out:
            an.feed(event)
            if event.level == "WARNING" and event.kind == "vllm":
                self._known_warning(event)
        out.clear()

    def _known_warning(self, event: LogEvent) -> None:
        message = event.message
        if (event.truncated or "\n" in message or not self.analyzer._serving.get(self.origin)
                or message.startswith(TRACEBACK) or restart_mark(message)
                or _FATAL_RE.search(message) or match_message(message)):
            return
        entry = self.analyzer.facts.warnings.get(message.strip()[:500])
        if entry is not None:
            self.state.register_warning(message, entry)

    def load(self) -> bool:
        """Lend the state if hot lines may be folded in now; False leaves them to Python."""
        asm, an, st = self.asm, self.analyzer, self.state
        if asm.group or asm.pending:
            return False
        if asm.out:  # events before the hot lines reach the analyzer first
            self.drain()
        builder = an.builders.get(self.node)
        timeline = builder.current if builder is not None else None
        stats, spec, clock = an.stats, an.spec, asm.clock
        if (not an._serving.get(self.origin) or self.origin not in an.inputs
                or timeline is None or not timeline.complete or stats.around is not None
                or clock.year is None or not -_INT64 <= clock.year <= _INT64
                or not (0 <= spec.accepted <= _INT64 and 0 <= spec.drafted <= _INT64)
                or len(spec.per_pos_accepted) > 64):
            return False
        engines = [(engine, t) for (node, engine), t in stats._last.items() if node == self.node]
        try:
            st.set_engines(engines)
            st.set_per_pos(spec.per_pos_accepted)
        except (OverflowError, TypeError, ValueError):
            return False
        st.year, st.clock_last = clock.year, _nan(clock.last)
        gen, prompt = stats.generation, stats.prompt
        st.gen_n, st.gen_active, st.gen_total = gen.n, gen.active, gen.total
        st.gen_total_active, st.gen_peak = gen.total_active, _nan(gen.peak)
        st.prompt_n, st.prompt_active, st.prompt_total = prompt.n, prompt.active, prompt.total
        st.prompt_total_active, st.prompt_peak = prompt.total_active, _nan(prompt.peak)
        st.diffs, st.diffs_len = stats._diffs, len(stats._diffs)
        st.stats_windows, st.stats_keep = stats.windows, stats.keep
        st.spec_n, st.accepted, st.drafted = spec.n, spec.accepted, spec.drafted
        st.drafts, st.peak_tps = spec.drafts, _nan(spec.peak_accepted_tps)
        st.spec_windows, st.spec_keep = spec.windows, spec.keep
        st.loaded = 1
        return True

    def keep(self, buf) -> None:
        """The block in `buf` is done with: copy the last folded line out of it."""
        if self.state.loaded:
            self.state.keep_last(buf)

    def store(self, buf) -> None:
        """Take the state back (before Python feeds anything); `buf` holds the last folded
        line unless `keep` copied it out."""
        st = self.state
        if not st.dirty:
            st.reset()
            return
        an, asm = self.analyzer, self.asm
        n = st.events
        self.folded += n
        an.events += n
        for level, count in st.levels():
            an.levels[level] += count
        an.t_sources["log"] += n
        an.kinds["vllm"] += n
        an.inputs[self.origin]["events"] += n
        an.first_t = st.t_min if an.first_t is None else min(an.first_t, st.t_min)
        an.last_t = st.t_max if an.last_t is None else max(an.last_t, st.t_max)

        event = self._last_event(buf)
        builder = an.builders[self.node]
        builder.current.last_t, builder.current.last_line = event.t, _summary_line(event)
        builder._prev = event
        asm.last_t = event.t
        clock = asm.clock
        clock.year, clock.last = st.year, _none(st.clock_last)
        clock._cache = ("", None)  # a stamp cache only; it must not outlive the lent time

        stats, spec = an.stats, an.spec
        gen, prompt = stats.generation, stats.prompt
        gen.n, gen.active, gen.total = st.gen_n, st.gen_active, st.gen_total
        gen.total_active, gen.peak = st.gen_total_active, _none(st.gen_peak)
        prompt.n, prompt.active, prompt.total = st.prompt_n, st.prompt_active, st.prompt_total
        prompt.total_active, prompt.peak = st.prompt_total_active, _none(st.prompt_peak)
        for engine, t in st.engines():
            stats._last[(self.node, engine)] = t
            stats.engines.add(engine)
        for spacing, count in st.diff_counts():
            stats._diffs[spacing] += count
        spec.n, spec.accepted, spec.drafted = st.spec_n, st.accepted, st.drafted
        spec.drafts, spec.peak_accepted_tps = st.drafts, _none(st.peak_tps)
        spec.per_pos_accepted[:] = st.per_pos()
        for entry, count in st.warning_counts():
            entry["count"] += count
        an.facts.warnings_total += st.n_warning
        st.reset()

    def _last_event(self, buf) -> LogEvent:
        """The event the Python path would have built for the last hot line."""
        st = self.state
        text = _decode(st.last_line(buf), self.crlf)
        f = parse_line(text)
        return _make_event({
            "t": st.last_t, "t_source": "log", "node": self.node, "stream": None,
            "process": f.process, "pid": f.pid, "relay": f.relay, "level": f.level,
            "source_file": f.source_file, "source_line": f.source_line, "message": f.message,
            "raw": text, "line_no": st.last_line_no, "origin": self.origin, "kind": f.kind,
            "truncated": False,
        })


__all__ = ["HotLink"]
