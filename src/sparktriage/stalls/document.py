"""The `stalls` JSON document (schema_version 1): timeline, phases and classified findings.

Contract (docs/stalls.md): `findings` is a list of `{kind, node, start, end, duration_s, phase,
verdict: {id, confidence, evidence, alternatives: [{id, why_not}], fix}}`; a healthy start has
none. Everything else here is ours and may grow.
"""

from __future__ import annotations

from sparktriage import __version__
from sparktriage.logs.facts import redact
from sparktriage.stalls.engine import DECIDED, EXCLUDED, OPEN, Classification, Score, Verdict
from sparktriage.stalls.markers import phase_spans

SCHEMA_VERSION = 1
MAX_ALTERNATIVES = 5


def _literal_text(name: str, negated: bool, detail: str) -> str:
    return f"{'not ' if negated else ''}{name}: {detail}"


def _evidence(verdict: Verdict) -> list[dict]:
    winner = verdict.winner
    if winner is None:
        return []
    out = []
    for name, negated, outcome in winner.satisfied():
        condition = winner.rule.conditions[name]
        item = {"condition": ("not " if negated else "") + name,
                "observed": redact(outcome.detail), "t": outcome.at, "node": outcome.node}
        if condition.explain:
            item["means"] = condition.explain
        out.append(item)
    return out


def why_not(score: Score, winner: Score | None) -> str:
    """One sentence: why this rule is not the verdict."""
    if score.gate:
        return f"excluded: {score.gate}"
    if score.state == EXCLUDED:
        against = score.against()
        parts = [_literal_text(n, not neg, o.detail) for n, neg, o in against[:2]]
        return "excluded: " + "; ".join(parts) if parts else "excluded"
    if score.state == OPEN:
        unknown = [n for n, _ in score.decision_literals if score.outcomes[n].value is None]
        if not unknown:
            return ("open: its decision holds, but only on gates, the phase or a silence; "
                    "nothing that is evidence for it was seen")
        missing = score.missing()
        need = f"needs {', '.join(missing)}" if missing else "its evidence is not in this window"
        return (f"open: cannot be told apart without more evidence ({need}; unknown: "
                f"{', '.join(unknown[:4])})")
    if winner is not None:
        told = _told_apart(winner, score.rule.id)
        lead = f"fits too, but with less support ({score.support:.2f} vs {winner.support:.2f})"
        return f"{lead}; {told}" if told else lead
    return f"fits with support {score.support:.2f}"


def _told_apart(winner: Score, other_id: str) -> str | None:
    for item in winner.rule.lookalikes:
        if item.id == other_id:
            seen = [f"{n}: {winner.outcomes[n].detail}" for n in item.told_apart_by
                    if n in winner.outcomes and winner.outcomes[n].value is not None]
            if seen:
                return "told apart by " + "; ".join(seen)
    return None


def _alternatives(verdict: Verdict) -> list[dict]:
    winner = verdict.winner
    lookalikes = {item.id for item in winner.rule.lookalikes} if winner else set()
    rest = [s for s in verdict.ranked if s is not winner]
    chosen = [s for s in rest if s.state in (DECIDED, OPEN) and (s.support > 0 or
                                                                  s.rule.id in lookalikes)]
    chosen += [s for s in rest if s.state == EXCLUDED and s.rule.id in lookalikes and not s.gate]
    chosen += [s for s in rest if s.state == EXCLUDED and s not in chosen and not s.gate
               and s.support > 0]
    out = []
    for score in chosen[:MAX_ALTERNATIVES]:
        why = why_not(score, winner)
        if score.state == EXCLUDED and winner and score.rule.id in lookalikes:
            told = _told_apart(winner, score.rule.id)
            if told:
                why = f"{why}; {told}"
        out.append({"id": score.rule.id, "why_not": redact(why), "state": score.state,
                    "support": score.support})
    return out


def _fix(verdict: Verdict) -> dict | None:
    if verdict.winner is None:
        return None
    fix = verdict.winner.rule.fix
    return {"summary": fix.summary, "steps": list(fix.steps), "before_after": list(fix.before_after)}


def _held(verdict: Verdict, origin: float) -> dict:
    """The verdict of a node that waited for a slower one: the holder's cause and fix."""
    holder = verdict.holder
    own = finding(Verdict(verdict.period, "unknown", 0.0, verdict.winner, verdict.ranked,
                          verdict.open, verdict.advice), origin)["verdict"]
    return {
        "id": verdict.id,
        "title": holder.winner.rule.title if holder.winner else verdict.id,
        "confidence": verdict.confidence,
        "state": "held",
        "evidence": [{"condition": "held_by", "t": holder.period.start,
                      "node": holder.period.node,
                      "observed": f"waited while {holder.period.node} was stuck in "
                                  f"{holder.period.phase} ({holder.id}, confidence "
                                  f"{holder.confidence:.2f}); this node logged nothing new"}]
                    + own["evidence"],
        "alternatives": own["alternatives"],
        "open": own["open"],
        "to_raise_confidence": own["to_raise_confidence"],
        "fix": _fix(holder),
    }


def finding(verdict: Verdict, origin: float) -> dict:
    period = verdict.period
    last = period.last_line
    if verdict.holder is not None:
        out = finding(Verdict(period, verdict.id, verdict.confidence, None, verdict.ranked,
                              verdict.open, verdict.advice), origin)
        out["verdict"] = _held(verdict, origin)
        return out
    return {
        "kind": period.kind,
        "node": period.node,
        "start": round(period.start, 3),
        "end": round(period.end, 3),
        "duration_s": round(period.duration_s, 3),
        "phase": period.phase,
        "start_offset_s": round(period.start - origin, 3),
        "how": list(period.how),
        "reason": redact(period.reason),
        **({"errors": period.facts["errors"]} if "errors" in period.facts else {}),
        "open_ended": period.open_ended,
        "held_by": period.held_by,
        "last_line": redact(last.event.message.strip()[:300]) if last else None,
        "verdict": {
            "id": verdict.id,
            "title": verdict.winner.rule.title if verdict.winner else "no rule fits",
            "confidence": verdict.confidence,
            "state": verdict.winner.state if verdict.winner else OPEN,
            "evidence": _evidence(verdict),
            "alternatives": _alternatives(verdict),
            "open": verdict.open,
            "to_raise_confidence": verdict.advice,
            "fix": _fix(verdict),
        },
    }


def _untimed(out: dict) -> dict:
    """An untimed excerpt's document: no time anywhere (its lines were read at one instant),
    `input.timed` false, and never `healthy` (no stall can be judged without times)."""
    out["input"]["timed"] = False
    for item in out["findings"]:
        item.update(start=None, end=None, duration_s=None, start_offset_s=None)
        for seen in item["verdict"]["evidence"]:
            seen["t"] = None
    for node in out["nodes"].values():
        node.update(start=None, end=None, ready_at=None, failed_at=None, phases=[])
    out["summary"]["healthy"] = False
    return out


def build(classification: Classification, rules_dir: str) -> dict:
    """The whole `stalls` document."""
    evidence, detection = classification.evidence, classification.detection
    span = evidence.span()
    origin = span[0] if span else 0.0
    nodes = {}
    for name, timeline in detection.timelines.items():
        outcome = "ready" if timeline.ready_at else "failed" if timeline.failed_at else "not-ready"
        nodes[name] = {"start": timeline.start, "end": timeline.end, "ready_at": timeline.ready_at,
                       "failed_at": timeline.failed_at, "outcome": outcome,
                       "phases": phase_spans(timeline),
                       "lines": timeline.line_count,
                       "sources": sorted(s for s in _SOURCES if evidence.nodes[name].has(s)),
                       "skipped": dict(evidence.nodes[name].skipped)}
    findings = [finding(v, origin) for v in classification.verdicts]
    excerpt = evidence.logs.get("excerpt")
    out = {
        "schema_version": SCHEMA_VERSION,
        "kind": "sparktriage-stalls",
        "tool_version": __version__,
        "input": {"path": evidence.origin, "form": evidence.form, "rules": rules_dir},
        "params": dict(detection.params.__dict__),
        "nodes": nodes,
        "phases": evidence.logs.get("phases", []),  # exactly as `sparktriage logs` shows them
        "findings": findings,
        "observations": [{**o, "start_offset_s": round(o["start"] - origin, 3)}
                         for o in detection.observations],
        "summary": {
            "stalls": sum(1 for f in findings if f["kind"] == "stall"),
            "failures": sum(1 for f in findings if f["kind"] == "failure"),
            "healthy": not findings,
            "causes": sorted({f["verdict"]["id"] for f in findings}),
            # the errors `logs` counts: held by the failures, logged in a teardown, or survived
            "errors": sum(f.get("errors") or 0 for f in findings),
            "errors_teardown": sum(a["teardown"] for a in detection.errors_apart.values()),
            "errors_other": sum(a["other"] for a in detection.errors_apart.values()),
        },
    }
    if excerpt is not None:  # as the logs document of the same lines says (docs/logs.md)
        out["excerpt"] = bool(excerpt)
        out["excerpt_detail"] = evidence.logs.get("excerpt_detail")
    return out if evidence.timed else _untimed(out)


_SOURCES = ("log", "host", "disk", "net", "procs", "gpu", "stacks", "dmesg")
