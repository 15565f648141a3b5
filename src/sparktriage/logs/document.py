"""The `logs` document: one streaming pass over events → timeline, series, facts, findings.

`LogAnalyzer.feed(event)` keeps only what the document needs (anchors, windows, facts; never the
events themselves), so a log of any size is analysed in bounded memory. `document()` returns the
JSON contract of `sparktriage logs` (docs/logs.md): version, phases, reported, throughput,
spec_decode, kernels, errors, and the extra fields described there. Times are ISO 8601 strings
with a UTC offset (milliseconds), in the zone the stamps were read in.
"""

from __future__ import annotations

import datetime as _dt
from collections import Counter
from typing import Iterable

from sparktriage.logs.catalog import PHASE_INDEX, match_message
from sparktriage.logs.clock import IsoFormatter
from sparktriage.logs.decision import (ENGINE_DIED, STARTUP_FAILED, Decision, decide,
                                       fail_attempts, failure_findings, is_stop)
from sparktriage.logs.events import LogEvent
from sparktriage.logs.excerpt import Excerpt, ExcerptTracker
from sparktriage.logs.facts import Facts
from sparktriage.logs.failures import LogFailure, failure_of, record
from sparktriage.logs.startup_time import DEFINITION, span
from sparktriage.redact.logtext import redact
from sparktriage.logs.gate import interesting, restart_mark, serving_mark
from sparktriage.logs.series import SpecSeries, StatsSeries, parse_spec, parse_stats
from sparktriage.logs.timeline import Timeline, TimelineBuilder
from sparktriage.logs.untimed import NOT_A_LOG, UntimedReader, require_log


class LogAnalyzer:
    """Accumulates what the `logs` document needs from a stream of events."""

    def __init__(self, tz: _dt.tzinfo | None = None,
                 windows_around: tuple[float, float] | None = None) -> None:
        self.tz = tz
        self.builders: dict[str, TimelineBuilder] = {}
        self.facts = Facts()
        self.stats = StatsSeries(around=windows_around)
        self.spec = SpecSeries()
        self.events = 0
        self.levels: Counter = Counter()
        self.t_sources: Counter = Counter()
        self.kinds: Counter = Counter()
        self.truncated = 0
        self.collectors: Counter = Counter()
        self.excerpts = ExcerptTracker()
        self.untimed = UntimedReader()  # logs/untimed.py: an excerpt without one stamp
        self.first_t: float | None = None
        self.last_t: float | None = None
        self.inputs: dict[str, dict] = {}
        self.stops: dict[str, list[float]] = {}  # node -> when it logged a stop signal
        self.teardown: dict[str, float] = {}  # node -> the collector tore it down (bundles)
        self.decision = Decision()  # decision.py: the failures both commands report
        self._serving: dict[str, bool] = {}  # origin → startup over: read gated lines only
        self._iso = IsoFormatter(tz)

    def feed(self, event: LogEvent) -> None:
        serving = self._serving.get(event.origin, False)
        if serving:  # gate.py: a serving server's log is read through the gate
            if not interesting(event.raw):
                return
            if restart_mark(event.raw):
                self._serving[event.origin] = False
        elif serving_mark(event.raw):
            self._serving[event.origin] = True
        self.events += 1
        self.levels[event.level or "none"] += 1
        self.t_sources[event.t_source] += 1
        self.kinds[event.kind] += 1
        self.truncated += event.truncated
        if event.collector is not None:
            self.collectors[event.collector] += 1
        info = self.inputs.get(event.origin)
        if info is None:
            info = self.inputs[event.origin] = {"origin": event.origin, "node": event.node,
                                                "events": 0}
        info["events"] += 1
        if event.t is not None:
            if is_stop(event.message) and len(self.stops.get(event.node, ())) < 64:
                self.stops.setdefault(event.node, []).append(event.t)
            self.first_t = event.t if self.first_t is None else min(self.first_t, event.t)
            self.last_t = event.t if self.last_t is None else max(self.last_t, event.t)
        hits = match_message(event.message)
        builder = self.builders.get(event.node)
        if builder is None:
            builder = self.builders[event.node] = TimelineBuilder(event.node)
        builder.feed(event, hits)
        for hit in hits:
            if hit.id == "stats":
                window = parse_stats(hit, event)
                if window is not None:
                    self.stats.add(window)
            elif hit.id == "spec":
                window = parse_spec(hit, event)
                if window is not None:
                    self.spec.add(window)
        errors = self.facts.errors_total
        self.facts.feed(event, hits)
        counted = self.facts.errors_total != errors and self.facts.last_error is not None
        self.untimed.feed(event, hits, counted)
        current = builder.current
        if counted:
            record(self.facts.last_error, event, hits, self.untimed.shown_phase(event.node),
                   len(builder.attempts) - 1 if current is not None else None,
                   current is not None and current.complete)
        self.excerpts.feed(event, hits, current is not None and not current.complete)

    @property
    def failures(self) -> list[LogFailure]:
        """Every error counted (the first facts.MAX_ERRORS), typed, with the phase it happened
        in (logs/failures.py); `facts.errors_total` counts them all."""
        return [failure_of(e, self._attempts(e["node"])) for e in self.facts.errors]

    def _attempts(self, node: str) -> list[Timeline]:
        builder = self.builders.get(node)
        if builder is None:
            return []
        return builder.attempts

    def excerpt(self) -> Excerpt:
        """Is the log an excerpt, and what can it not tell (logs/excerpt.py)?"""
        timelines = {node: b.attempts[-1] for node, b in self.builders.items() if b.attempts}
        primary = _primary({node: [tl] for node, tl in timelines.items()})
        tl = timelines.get(primary) if primary else None
        return self.excerpts.result(bool(tl and tl.complete), bool(tl and tl.failed))

    def feed_all(self, events: Iterable[LogEvent]) -> "LogAnalyzer":
        for event in events:
            self.feed(event)
        return self

    # --- the document ---
    def _t(self, t: float | None) -> str | None:
        return self._iso(t)

    def document(self) -> dict:
        timelines = {node: attempts for node, b in self.builders.items()
                     if (attempts := b.finish())}
        if self.first_t is None:  # no timed line: what the untimed lines say (untimed.py)
            timelines = self.untimed.timelines(self.facts.errors)
        failures = self.failures
        # decision.py: the one failure decision, per node and attempt, that `stalls` reads too
        self.decision = decide(failures, timelines, self.stops, self.teardown)
        fail_attempts(self.decision, timelines)
        primary = _primary(timelines)
        tl = timelines[primary][-1] if primary else Timeline(node="local")
        self.stats.place()
        spec = self.spec.summary()
        seen: dict = {}
        excerpt = self.excerpts.result(tl.complete, tl.failed)
        doc = {
            "kind": "logs",
            "inputs": list(self.inputs.values()),
            "time_basis": self._time_basis(),
            "version": self.facts.version(),
            "versions": dict(self.facts.versions),
            "model": self.facts.model,
            "startup": self._startup(tl, len(timelines.get(primary, [])) if primary else 0,
                                     timelines, excerpt.start_in_log),
            "excerpt": excerpt.excerpt,
            "excerpt_detail": excerpt.as_json(self._t),
            "phases": self._phases(tl),
            "reported": dict(tl.reported),
            "reported_detail": {k: [self._entry(e) for e in v] for k, v in tl.reported_detail.items()},
            "gaps": [self._gap(g) for g in tl.gaps],
            "silences": [self._silence(s) for s in tl.silences],
            "nodes": {node: self._node(atts) for node, atts in timelines.items()},
            "throughput": {
                "generation": self.stats.generation.summary(),
                "prompt": self.stats.prompt.summary(),
                "interval_s": round(self.stats.interval(), 3),
                "hidden_idle_windows": self.stats.hidden_idle(),
                "engines": sorted(self.stats.engines),
                "windows": self._windows(seen),
                "windows_kept": len(self.stats.windows),
            },
            "spec_decode": None if spec is None else {
                **spec, "windows_detail": self._spec_windows(seen)},
            "kernels": list(self.facts.kernels),
            "kernel_detail": [{**k, "t": self._t(k["t"])} for k in self.facts.kernel_detail],
            "kernel_rejections": list(self.facts.kernel_rejections),
            "config": dict(self.facts.config),
            "args": dict(self.facts.args),
            "distributed": dict(self.facts.distributed),
            "storage": self._storage(),
            "shards": [self._shard(s) for s in self.facts.shards.values()],
            "kv_cache": dict(self.facts.kv_cache),
            "warnings": [{"time": self._t(w["t"]), "text": w["text"], "count": w["count"],
                          "node": w["node"]} for w in self.facts.warnings.values()],
            "warnings_total": self.facts.warnings_total,
            "errors": [{"time": self._t(f.t), "text": f.text, "node": f.node,
                        "process": f.process, "origin": f.origin, "line": f.line,
                        "kind": f.kind, "phase": f.phase, "engine_death": f.engine_death}
                       for f in failures],
            "errors_total": self.facts.errors_total,
            "counts": {"events": self.events, "recognised_untimed": self.untimed.recognised,
                       "levels": dict(self.levels),
                       "kinds": dict(self.kinds), "truncated_lines": self.truncated},
        }
        doc["findings"] = findings(doc, tl, timelines, self.decision)
        return doc

    def _time_basis(self) -> dict:
        zone = "local" if self.tz is None else str(self.tz)
        return {"format": "ISO 8601, milliseconds, with UTC offset",
                "zone_of_log_stamps": zone, "sources": dict(self.t_sources),
                "collectors": dict(self.collectors),
                "first": self._t(self.first_t), "last": self._t(self.last_t),
                "timed": self.first_t is not None}

    def _phases(self, tl: Timeline) -> list[dict]:
        return [{"name": p.name, "start": self._t(p.start), "end": self._t(p.end),
                 "duration_s": None if p.duration_s is None else round(p.duration_s, 3),
                 "open": p.open, "anchor": redact(p.anchor)} for p in tl.phases]

    def _startup(self, tl: Timeline, attempts: int, timelines: dict | None = None,
                 start_in_log: bool = True) -> dict:
        # one definition (logs/startup_time.py): the earliest phase start on any node to the
        # latest phase end, over each node's last attempt; unknown when the log is an excerpt
        # that starts after the startup did (`seen_s` is then the part it shows)
        lasts = [atts[-1] for atts in (timelines or {}).values()] or [tl]
        seen = span((p.start, p.end) for t in lasts for p in t.phases) if tl.startup_s is not None \
            else None
        took = seen if start_in_log or attempts > 1 else None
        starts = [t.phases[0].start for t in lasts if t.phases]
        start = min(starts) if starts else None
        return {
            "complete": tl.complete, "failed": tl.failed, "failure": redact(tl.failure or "") or None,
            "failure_time": self._t(tl.failure_t), "startup_s": took,
            "start": self._t(start), "definition": DEFINITION,
            "current_phase": tl.current_phase, "last_line": redact(tl.last_line or "") or None,
            "last_time": self._t(tl.last_t), "attempts": attempts,
            "seen": not tl.serving_only and bool(tl.phases),
            "start_in_log": start_in_log or attempts > 1, "seen_s": seen,
        }

    def _entry(self, e: dict) -> dict:
        return {**e, "t": self._t(e["t"])}

    def _gap(self, g) -> dict:
        return {"name": g.name, "reported_s": g.reported_s, "wall_s": round(g.wall_s, 3),
                "gap_s": round(g.gap_s, 3), "significant": g.significant,
                "window_start": self._t(g.window_start), "window_end": self._t(g.window_end)}

    def _silence(self, s) -> dict:
        return {"start": self._t(s.start), "end": self._t(s.end),
                "duration_s": round(s.duration_s, 3), "phase": s.phase,
                "before": redact(s.before), "after": redact(s.after)}

    def _node(self, attempts: list[Timeline]) -> dict:
        last = attempts[-1]
        return {"attempts": len(attempts), "complete": last.complete, "failed": last.failed,
                "failure": redact(last.failure or "") or None, "startup_s": last.startup_s,
                "current_phase": last.current_phase, "phases": self._phases(last),
                "reported": dict(last.reported), "gaps": [self._gap(g) for g in last.gaps],
                "version": self.facts.versions.get(last.node)}

    def _windows(self, seen: dict) -> list[dict]:
        """The kept stats windows (up to 20 000 of them: one tight loop). `seen` memoises the
        time strings: a window starts where the previous one ended, the spec line shares it."""
        fmt, get, out = self._iso, seen.get, []
        append = out.append
        for w in self.stats.windows:
            end, start = get(w.t), get(w.start)
            if end is None:
                end = seen[w.t] = fmt(w.t)
            if start is None:
                start = seen[w.start] = fmt(w.start)
            append({"end": end, "start": start, "start_estimated": w.start_estimated,
                    "engine": w.engine, "node": w.node, "prompt": w.prompt,
                    "generation": w.generation, "level": w.level, **w.parts})
        return out

    def _spec_windows(self, seen: dict) -> list[dict]:
        fmt, get, out = self._iso, seen.get, []
        append = out.append
        for w in self.spec.windows:
            end, drafts = get(w.t), w.drafts
            if end is None:
                end = seen[w.t] = fmt(w.t)
            append({"end": end, "node": w.node, **w.values, "per_position": w.per_position,
                    "drafts_estimated": None if drafts is None else round(drafts, 2)})
        return out

    def _storage(self) -> dict:
        s = dict(self.facts.storage)
        for key in ("prefetch_started", "prefetch_finished"):
            if key in s:
                s[key] = self._t(s[key])
        return s

    def _shard(self, bar: dict) -> dict:
        span = None
        if bar.get("first_t") is not None and bar.get("last_t") is not None:
            span = round(bar["last_t"] - bar["first_t"], 3)
        return {**bar, "first_t": self._t(bar.get("first_t")), "last_t": self._t(bar.get("last_t")),
                "wall_s": span}


def _primary(timelines: dict[str, list[Timeline]]) -> str | None:
    """The node whose startup reached furthest (the API server's node on a cluster)."""
    best, best_key = None, None
    for node, attempts in timelines.items():
        tl = attempts[-1]
        key = (tl.complete, PHASE_INDEX.get(tl.current_phase or "resolve", 0))
        if best_key is None or key > best_key:
            best, best_key = node, key
    return best


def findings(doc: dict, tl: Timeline, timelines: dict[str, list[Timeline]],
             decision: Decision | None = None) -> list[dict]:
    """Plain statements about what the log shows; severity `error` makes `logs` exit 1. The
    failures (`startup-failed`, `engine-died`) are the shared decision's (decision.py): one
    per failed start attempt and per engine death, on every node."""
    out: list[dict] = []

    def add(code: str, severity: str, text: str) -> None:
        out.append({"code": code, "severity": severity, "text": text})

    st = doc["startup"]
    if decision is None:
        decision = Decision()
    out += failure_findings(doc["errors"], tl.node, timelines, decision, STARTUP_FAILED)
    if not st["failed"] and tl.phases and not tl.complete:
        excerpt = bool(doc.get("excerpt"))  # an excerpt that ends before ready cannot tell
        add("startup-incomplete", "info" if excerpt else "error",
            f"startup did not complete{' in the excerpt' if excerpt else ''}: last phase "
            f"{st['current_phase']}, last line at {st['last_time']}: {st['last_line']}")
    if st["attempts"] > 1:
        add("restarts", "warning", f"the log holds {st['attempts']} startup attempts")
    if doc.get("excerpt"):
        detail = doc["excerpt_detail"]
        add("excerpt", "info", "the log is an excerpt (" + "; ".join(
            sorted({r["code"] for r in detail["reasons"]})) + "): " + " ".join(
            detail["cannot_tell"][:2]))
    for gap in doc["gaps"]:
        if gap["significant"]:
            add("wall-vs-reported", "warning",
                f"{gap['name']}: vLLM reports {gap['reported_s']:.2f} s but the window took "
                f"{gap['wall_s']:.1f} s of wall time ({gap['gap_s']:.1f} s unaccounted)")
    # Gaps between lines are facts in `silences`; whether one was a stall is the stall
    # classifier's verdict alone (`sparktriage stalls` reads samples, stacks and per-phase
    # budgets), so `logs` never calls a gap a problem that `stalls` might call progress.
    for k in doc["kernel_detail"]:
        if k["fallback"]:
            add("kernel-fallback", "warning", f"kernel fallback: {k['kernel']}")
    out += failure_findings(doc["errors"], tl.node, timelines, decision, ENGINE_DIED)
    versions = set(doc["versions"].values())
    if len(versions) > 1:
        add("version-mismatch", "warning", f"nodes run different vLLM versions: {sorted(versions)}")
    thr = doc["throughput"]
    if thr["hidden_idle_windows"]:
        add("idle-windows-hidden", "info",
            f"{thr['hidden_idle_windows']} idle stats windows were logged at DEBUG (hidden): the "
            "logged mean covers logged windows only")
    if doc["counts"]["truncated_lines"]:
        add("truncated-lines", "info",
            f"{doc['counts']['truncated_lines']} over-long lines were cut when read")
    return out


def analyze(events: Iterable[LogEvent], tz: _dt.tzinfo | None = None) -> dict:
    """The `logs` document of a stream of events."""
    return LogAnalyzer(tz).feed_all(events).document()


def failures_of(events: Iterable[LogEvent]) -> list[LogFailure]:
    """The failures `logs` counts in these events (the first `facts.MAX_ERRORS`), in order."""
    return list(LogAnalyzer().feed_all(events).failures)


__all__ = ["NOT_A_LOG", "require_log", "LogAnalyzer", "analyze", "failures_of", "findings"]
