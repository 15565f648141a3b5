"""Is this log whole, or an excerpt? And what can an excerpt not tell?

Logs pasted into issues and chats are excerpts: they start mid-run, start inside a traceback,
or have lines cut out of them. Judged as a whole log, an excerpt lies: its first line looks like
the start of the startup, a cut looks like a silence. `ExcerptTracker` watches the analysed
events (per input and node) and says, with reasons (docs/logs.md, "Excerpts"):

* ``no-start``: a phase anchor past `resolve`/`engine_start` comes before any start line (version
  banner or logo, argument dump, engine config, ``headless`` launch), or the log has no start
  line at all (only waits, warnings or a traceback);
* ``serving-only``: the log starts while the server already serves (no startup lines at all);
* ``starts-mid-record``: the first line is the inside of a multi-line record (an indented or
  ``File "..."`` traceback frame, a bare exception line, a caret line);
* ``ends-mid-record``: the last line is a traceback frame or caret line (the exception line that
  ends every traceback is missing);
* ``untimed``: no line of the input carries a time stamp (a bare traceback, `hf download`
  output, NCCL lines pasted alone: logs/untimed.py); nothing that needs a time can be read;
* ``cut``: a line that only says lines were left out (``...``, ``[...]``, ``<snip>``, ``[N lines
  omitted]``), a jump of more than `CUT_GAP_S` between consecutive lines of a starting node, or
  time going back by more than `BACK_JUMP_S`. Each cut is a window where lines are missing: it is
  not a silence, and no stall can be read in it (``cuts``, Unix seconds).

Our own line records (``*.lines.jsonl``, evidence bundles) are captured from the launch on and
are never excerpts. Only events the analysis reads count, so the full, fast and compiled paths
agree (cuts are looked for during startups only, where every line is read).
"""

from __future__ import annotations

import re
from dataclasses import dataclass, field

from sparktriage.logs.catalog import PHASE_INDEX, Hit
from sparktriage.logs.events import LogEvent
from sparktriage.logs.timeline import serving_text
from sparktriage.redact.logtext import redact

CUT_GAP_S = 7200.0  # no healthy or stalled start is silent this long and then goes on
BACK_JUMP_S = 300.0  # lines of one node out of order by more than this: pieces pasted together
MAX_CUTS = 50
START_IDS = frozenset({"version.banner", "version.logo", "args", "args.namespace",
                       "engine.config", "engine.headless"})
_SERVING_IDS = frozenset({"stats", "spec", "ready.complete"})
# matched against the stripped line: a leading `\s*` before alternatives that hold `\s*`
# again took time quadratic in a line of blanks (minutes for 50,000)
_CUT_LINE = re.compile(
    r"(?:\.{3,}|\u2026+|\[\s*(?:\.{3}|\u2026)[^\]]{0,60}\]|\(\s*(?:\.{3}|\u2026)[^)]{0,60}\)"
    r"|<\s*(?:snip|snipped|truncated|\.{3})\s*>|-{2,}\s*(?:snip|cut)\s*-{2,}"
    r"|\[\s*(?:snip|snipped|truncated|cut|omitted)[^\]]{0,60}\]"
    r"|\[?\s*(?:\.{3}\s*)?\d+ (?:more )?lines? (?:omitted|removed|skipped|truncated)[^\]]{0,40}\]?"
    r")\Z", re.IGNORECASE)
_FRAME = re.compile(r"^(?:\s+\S|File \"|\s*\^+\s*$|\s*~+\^*~*\s*$|During handling of|The above "
                    r"exception was the direct cause)")
_EXCEPTION = re.compile(r"^(?:[A-Za-z_][\w.]*\.)?[A-Z]\w*(?:Error|Exception|Exit|Interrupt)\b:")


@dataclass(frozen=True)
class Excerpt:
    """What the tracker concluded: `excerpt` and why, what it cannot tell, where lines are cut."""

    excerpt: bool
    reasons: tuple[dict, ...] = ()  # {code, text, node, origin}
    cannot_tell: tuple[str, ...] = ()
    cuts: tuple[dict, ...] = ()  # {node, start, end, why} (Unix seconds)
    start_in_log: bool = True  # the start of the (last) startup is in the log

    def as_json(self, iso=None) -> dict:
        fmt = iso or (lambda t: t)
        return {"reasons": [dict(r) for r in self.reasons], "cannot_tell": list(self.cannot_tell),
                "cuts": [{**c, "start": fmt(c["start"]), "end": fmt(c["end"])}
                         for c in self.cuts]}


@dataclass
class _Origin:
    node: str
    records: bool
    first: bool = True
    start_seen: bool = False
    timed: bool = False  # a line of this input had a time stamp
    reasons: list[dict] = field(default_factory=list)
    last: LogEvent | None = None  # the last event read from this input


class ExcerptTracker:
    """Fed every analysed event with its catalog hits and whether its node is starting."""

    def __init__(self) -> None:
        self.origins: dict[str, _Origin] = {}
        self.last_t: dict[str, float] = {}  # node → time of its last timed line while starting
        self.pending_cut: dict[str, str] = {}  # node → why (a cut line waits for the next time)
        self.cuts: list[dict] = []

    def feed(self, event: LogEvent, hits: list[Hit], starting: bool) -> None:
        info = self.origins.get(event.origin)
        if info is None:
            records = event.t_source == "receive" and event.collector is None
            info = self.origins[event.origin] = _Origin(event.node, records)
        if info.records:
            return
        info.last = event
        if info.first:
            info.first = False
            if event.kind != "traceback" and _mid_record(event.message):
                info.reasons.append(_reason("starts-mid-record", event,
                                            "the first line is inside a multi-line record: "
                                            + _short(event.message)))
        ids = [h.id for h in hits]
        if not info.start_seen:
            if any(i in START_IDS for i in ids):
                info.start_seen = True
            elif not any(r["code"] in ("no-start", "serving-only") for r in info.reasons):
                self._no_start(info, event, hits)
        if event.t is None:
            return
        info.timed = True
        if "\n" not in event.message and _CUT_LINE.match(event.message.strip()):
            self.pending_cut[event.node] = "a line says lines were left out: " + \
                event.message.strip()[:60]
            return
        if not starting:
            self.last_t.pop(event.node, None)
            self.pending_cut.pop(event.node, None)
            return
        prev = self.last_t.get(event.node)
        why = self.pending_cut.pop(event.node, None)
        if prev is not None and why is None:
            if event.t - prev > CUT_GAP_S:
                why = f"no line for {event.t - prev:.0f} s (more than {CUT_GAP_S:.0f} s)"
            elif prev - event.t > BACK_JUMP_S:
                why = f"time goes back by {prev - event.t:.0f} s"
        if why is not None and prev is not None and len(self.cuts) < MAX_CUTS:
            self.cuts.append({"node": event.node, "start": min(prev, event.t),
                              "end": max(prev, event.t), "why": why})
            info.reasons.append(_reason("cut", event, why))
        if why is None and prev is not None:
            self.last_t[event.node] = max(prev, event.t)
        else:
            self.last_t[event.node] = event.t

    @staticmethod
    def _final(info: _Origin) -> list[dict]:
        """The input's reasons, with those only its end can tell."""
        reasons = list(info.reasons)
        codes = {r["code"] for r in reasons}
        last = info.last
        if last is None or info.records:
            return reasons
        if not info.start_seen and not codes & {"no-start", "serving-only"}:
            reasons.append(_reason("no-start", last, "the log has no start line (no version "
                                   "banner, argument dump or engine config)"))
        if not info.timed:
            reasons.append(_reason("untimed", last, "no line has a time stamp"))
        if last.kind != "pywarn" and _ends_mid_record(last.message):
            reasons.append(_reason("ends-mid-record", last, "the last line is inside a "
                                   "traceback: its exception line is missing"))
        return reasons

    def _no_start(self, info: _Origin, event: LogEvent, hits: list[Hit]) -> None:
        serving = any(h.id in _SERVING_IDS for h in hits) or (
            event.kind == "uvicorn" and '" 200' in event.message) or \
            serving_text(event.message)
        phases = [h.rule.phase for h in hits if h.rule.phase is not None
                  and PHASE_INDEX[h.rule.phase] > PHASE_INDEX["engine_start"]]
        if phases:
            info.reasons.append(_reason(
                "no-start", event, f"the log's first startup line is in phase {phases[0]} "
                "(no version banner, argument dump or engine config before it)"))
        elif serving:
            info.reasons.append(_reason(
                "serving-only", event, "the log starts while the server already serves"))

    def result(self, complete: bool, failed: bool) -> Excerpt:
        reasons = tuple(r for info in self.origins.values() for r in self._final(info))
        codes = {r["code"] for r in reasons}
        no_start = bool(codes & {"no-start", "serving-only"})
        tell: list[str] = []
        if "untimed" in codes:
            tell.append("the excerpt has no time stamps: no startup time, phase durations, "
                        "silences, rates or stall durations can be read, only what its lines "
                        "say (errors, failures, the phases they name)")
        if "serving-only" in codes:
            tell.append("the startup is not in the excerpt: no startup phases and no startup "
                        "time; only what happened while serving can be judged")
        if "no-start" in codes:
            tell.append("the start of the startup is not in the excerpt: total startup time "
                        "unknown (startup.seen_s is the part shown), and the "
                        "phases before the first one shown are unknown")
        if "ends-mid-record" in codes:
            tell.append("the excerpt ends inside a traceback: the exception that ended it is "
                        "not shown")
        if "starts-mid-record" in codes:
            tell.append("the excerpt starts inside a multi-line record: the beginning of that "
                        "record (a traceback's first frames, a message's first lines) is missing")
        if "cut" in codes:
            tell.append("lines are missing inside the excerpt (cuts): a cut is not a silence, "
                        "no stall can be read there")
        if reasons and not complete and not failed:
            tell.append("the excerpt ends before the server was ready and without an error: "
                        "whether the start went on after its last line is unknown")
        return Excerpt(bool(reasons), reasons, tuple(tell), tuple(self.cuts), not no_start)


def _mid_record(message: str) -> bool:
    first = message.split("\n", 1)[0]
    return bool(_FRAME.match(first) or _EXCEPTION.match(first.strip()))


_TAIL = re.compile(r"^(?:\s*File \"|\s*[\^~]{3,}\s*$)")


def _ends_mid_record(message: str) -> bool:
    lines = [line for line in message.split("\n") if line.strip()]
    return bool(lines) and _TAIL.match(lines[-1]) is not None


def _short(message: str) -> str:
    return message.split("\n", 1)[0].strip()[:120]


def _reason(code: str, event: LogEvent, text: str) -> dict:
    return {"code": code, "text": redact(text), "node": event.node, "origin": event.origin}


__all__ = ["Excerpt", "ExcerptTracker", "CUT_GAP_S", "BACK_JUMP_S", "START_IDS"]
