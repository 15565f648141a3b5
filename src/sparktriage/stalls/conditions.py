"""Evaluate one named condition of a rule in a stall window: true, false or unknown.

Every outcome says what it read and what it saw (the evidence shown to the user, with its
time and node), and, when unknown, which source was missing. Log tests read the node's lines
in a scope relative to the stall (`last`, `before`, `during`, `end`: the lines at its end
(within a second: 1-second stamps), `until_end`, `anywhere`);
frame and child tests count the share of sampling rounds in the window that match.
"""

from __future__ import annotations

import re
from dataclasses import dataclass
from functools import lru_cache

from sparktriage.stalls import expr
from sparktriage.stalls.inputs import frames_text
from sparktriage.stalls.markers import Mark, MarkerSet, matching_line
from sparktriage.stalls.schema import Condition
from sparktriage.stalls.signals import SIGNALS, Window, compute

_DMESG_BEFORE_S = 60.0
_DMESG_AFTER_S = 30.0
_ROUND_GAP_S = 0.5  # dumps of one py-spy round lie closer together than this
_END_SLACK_S = 1.0  # `where: end`: lines stamped to the second around the stall's end


@dataclass(frozen=True)
class Outcome:
    value: bool | None
    detail: str  # what was seen, for the evidence list
    at: float | None = None  # time of the deciding record, when there is one
    node: str | None = None
    missing: tuple[str, ...] = ()  # sources whose absence left it unknown
    measured: float | bool | None = None


@lru_cache(maxsize=512)
def _rx(pattern: str) -> re.Pattern:
    return re.compile(pattern, re.M)


@lru_cache(maxsize=512)
def _any_of(patterns: tuple[str, ...]) -> re.Pattern:
    """One expression for a list of patterns, matched line by line (re.M)."""
    return re.compile("|".join(f"(?:{p})" for p in patterns), re.M)


def _frames_text(dump: dict) -> str:
    """A dump's frames as `function (file)` lines (loaders store them as `frames_text`)."""
    text = dump.get("frames_text")
    return text if isinstance(text, str) else frames_text(dump)


def _fmt(value: float | bool | None, unit: str) -> str:
    if isinstance(value, bool) or value is None:
        return str(value).lower()
    if unit == "B/s":
        return f"{value / 1e6:.1f} MB/s"
    if unit == "fraction":
        return f"{value:.2f}"
    return f"{value:.1f} {unit}".strip()


class Evaluator:
    """Evaluates conditions for one window; caches signal values."""

    def __init__(self, window: Window, markers: MarkerSet) -> None:
        self.window = window
        self.markers = markers
        self.period = window.period
        self._signals: dict[str, float | bool | None] = {}

    def signal(self, name: str) -> float | bool | None:
        if name not in self._signals:
            self._signals[name] = compute(name, self.window)
        return self._signals[name]

    def evaluate(self, condition: Condition) -> Outcome:
        test = condition.test
        return getattr(self, f"_{test}")(condition)

    # --- tests -----------------------------------------------------------------------------
    def _signal(self, c: Condition) -> Outcome:
        spec = SIGNALS[c.signal]
        value = self.signal(c.signal)
        node = self.period.node
        if value is None:
            missing = () if spec.source == "log" or self.window.node.has(spec.source) \
                else (spec.source,)
            return Outcome(None, f"{c.signal}: no value in the window", node=node, missing=missing)
        if c.equals is not None:
            ok = bool(value) == c.equals
            want = f"= {str(c.equals).lower()}"
        elif c.above is not None:
            ok, want = float(value) > c.above, f"> {_fmt(c.above, spec.unit)}"
        else:
            ok, want = float(value) < c.below, f"< {_fmt(c.below, spec.unit)}"
        return Outcome(ok, f"{c.signal} = {_fmt(value, spec.unit)} (rule: {want})",
                       at=self.period.start, node=node, measured=value)

    def _lines(self, c: Condition) -> list[Mark] | None:
        detection = self.window.detection
        timelines = list(detection.timelines.values()) if c.nodes == "any" \
            else [detection.timelines.get(self.period.node)]
        timelines = [t for t in timelines if t is not None]
        if not timelines:
            return None
        if c.where == "last":
            return [self.period.last_line] if self.period.last_line else []
        start, end = self.period.start, self.period.end
        bounds = {"before": (float("-inf"), start), "during": (self.window.start, end),
                  "end": (end - _END_SLACK_S, end + _END_SLACK_S),
                  "until_end": (float("-inf"), end), "anywhere": (float("-inf"), float("inf"))}
        lo, hi = bounds[c.where]
        return [m for t in timelines for m in t.lines(lo, hi)]

    def _log_test(self, c: Condition, label: str, hit, rx: re.Pattern) -> Outcome:
        lines = self._lines(c)
        if lines is None:
            return Outcome(None, f"log {label}: no log", node=self.period.node, missing=("log",))
        for mark in lines:
            if hit(mark):
                text = matching_line(mark.event.message, rx)
                return Outcome(True, f"log ({mark.event.node}): {text[:200]}", at=mark.t,
                               node=mark.event.node)
        return Outcome(False, f"log: no line {label} ({c.where})", node=self.period.node)

    def _log(self, c: Condition) -> Outcome:
        return self._log_test(c, f"marked {c.log}", lambda m: c.log in m.markers,
                              self.markers.compiled[c.log])

    def _log_match(self, c: Condition) -> Outcome:
        rx = _rx(c.log_match)

        def hit(mark: Mark) -> bool:  # the process prefix counts too (e.g. RayWorkerWrapper)
            event = mark.event
            return bool(rx.search(event.message) or rx.search(f"{event.relay or ''} "
                                                              f"{event.process or ''}"))
        return self._log_test(c, f"matching /{c.log_match}/", hit, rx)

    def _phase(self, c: Condition) -> Outcome:
        ok = self.period.phase in c.phase or "any" in c.phase
        return Outcome(ok, f"phase {self.period.phase}", at=self.period.start,
                       node=self.period.node)

    def _shared(self, rounds: list[list[dict]], match, what: str, c: Condition,
                source: str) -> Outcome:
        node = self.period.node
        if not rounds:
            return Outcome(None, f"{what}: none recorded in the window", node=node,
                           missing=(source,))
        hits = [(g, found) for g in rounds for found in [match(g)] if found]
        share = len(hits) / len(rounds)
        if hits:
            first_round, found = hits[0]
            detail = f"{what}: {len(hits)}/{len(rounds)} rounds, e.g. {found}"
            return Outcome(share >= c.min_share, detail, at=first_round[0]["t"], node=node,
                           measured=share)
        return Outcome(False, f"{what}: 0/{len(rounds)} rounds match", node=node, measured=0.0)

    def _frames(self, c: Condition) -> Outcome:
        records = self.window.records("stacks")
        if records is None:
            return Outcome(None, "py-spy stacks: not recorded", node=self.period.node,
                           missing=("stacks",))
        rx = _any_of(tuple(c.frames))

        def match(group: list[dict]) -> str | None:
            for dump in group:
                found = rx.search(_frames_text(dump))
                if found:
                    line = matching_line(_frames_text(dump)[found.start():], rx)
                    return f"{dump.get('role') or 'pid ' + str(dump.get('pid'))}: {line}"
            return None
        rounds: list[list[dict]] = []
        for record in records:
            if rounds and record["t"] - rounds[-1][-1]["t"] <= _ROUND_GAP_S:
                rounds[-1].append(record)
            else:
                rounds.append([record])
        return self._shared(rounds, match, "py-spy frames", c, "stacks")

    def _children(self, c: Condition) -> Outcome:
        rounds = self.window.rounds
        if rounds is None:
            return Outcome(None, "child processes: not recorded", node=self.period.node,
                           missing=("procs",))
        patterns = [_rx(p) for p in c.children]

        def match(group: list[dict]) -> str | None:
            for record in group:
                names = [(ch.get("name") or "", ch.get("cmdline") or "")
                         for ch in record.get("children") or []]
                if record.get("role") == "child":
                    names.append((record.get("name") or "", record.get("cmdline") or ""))
                for name, cmdline in names:
                    text = f"{name} {cmdline if isinstance(cmdline, str) else ' '.join(cmdline)}"
                    if any(p.search(text) for p in patterns):
                        return text.strip()[:120]
            return None
        return self._shared(rounds, match, "child processes", c, "procs")

    def _dmesg(self, c: Condition) -> Outcome:
        node = self.window.node
        if not node.has("dmesg"):
            return Outcome(None, "dmesg: not recorded", node=self.period.node,
                           missing=("dmesg",))
        timeline = self.window.detection.timelines.get(self.period.node)
        lo = (timeline.start if timeline else self.period.start) - _DMESG_BEFORE_S
        patterns = [_rx(p) for p in c.dmesg]
        for record in node.get("dmesg").window(lo, self.period.end + _DMESG_AFTER_S,
                                               max_rounds=1 << 30):  # every kernel line
            line = str(record.get("line") or "")
            if any(p.search(line) for p in patterns):
                return Outcome(True, f"dmesg: {line.strip()[:200]}", at=record["t"],
                               node=self.period.node)
        return Outcome(False, "dmesg: no matching kernel line", node=self.period.node)

    def _combine(self, c: Condition, items: list[Condition], both: bool) -> Outcome:
        outcomes = [self.evaluate(item) for item in items]
        values = [o.value for o in outcomes]
        if both:
            value = expr._and(values)
        else:  # any: true if one is; false when none is and at least one could be evaluated
            value = True if True in values else False if False in values else None
        chosen = [o for o in outcomes if o.value == value] or outcomes
        detail = "; ".join(dict.fromkeys(o.detail for o in chosen[:3]))
        missing = tuple(sorted({m for o in outcomes for m in o.missing}))
        at = next((o.at for o in chosen if o.at is not None), None)
        return Outcome(value, detail, at=at, node=self.period.node, missing=missing)

    def _use(self, c: Condition) -> Outcome:
        shared = self.markers.vocabulary.shared.get(c.use)
        if shared is None:
            return Outcome(None, f"unknown shared condition {c.use}", node=self.period.node)
        return self.evaluate(shared)

    def _all(self, c: Condition) -> Outcome:
        return self._combine(c, c.all, True)

    def _any(self, c: Condition) -> Outcome:
        return self._combine(c, c.any, False)
