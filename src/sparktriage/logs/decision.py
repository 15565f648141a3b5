"""The failure decision `logs` and `stalls` share: per node, per start attempt, per serving stretch.

Every error `logs` counts (facts.py, typed in failures.py) belongs to one group: its node, the
start attempt of that node it was logged in (the attempt the timeline builder had open when the
line was read, so a paste whose stamps jump back stays in the attempt it was printed in), and
whether that attempt had become ready by then (its serving stretch) or not (its start). Each
group is decided once, here, for both commands:

* a start group is a failure (`startup-failed`) when its attempt never became ready, or a
  failure line of the catalog ended it: the start ended in its error, whether or not the log is
  an excerpt (what a start did last, when the log stops after it, is the error it logged);
  a start that logged errors and still became ready failed only when one of them is an engine
  death or a fatal signature (then `engine-died`: an engine died before the server came up);
* a serving group is a failure (`engine-died`) when one of its errors is an engine death or a
  fatal signature; a request's error the server survived is no failure;
* a group whose first error follows a stop (a stop signal the node logged in the same attempt,
  or the collector's own teardown of a bundle, up to `TEARDOWN_WINDOW_S` before its event) is
  the server's teardown, not a failure.

An attempt the catalog's failure line marked failed without an error `logs` counts is a failure
too, with no error line. The errors of groups that are no failure are counted apart (`other`,
`teardown`). `sparktriage logs` writes one finding per failure, `sparktriage stalls` one
`failure` period per failure, so their counts agree by construction (docs/logs.md, "The failure
decision").
"""

from __future__ import annotations

import re
from dataclasses import dataclass, field

from sparktriage.logs.failures import LogFailure
from sparktriage.logs.timeline import Timeline
from sparktriage.redact.logtext import redact

STARTUP_FAILED = "startup-failed"
ENGINE_DIED = "engine-died"
# the collector signals the server (SIGTERM, then SIGKILL after its grace period, 15 s by
# default) before it records its teardown event: errors this close before it are the kill's
TEARDOWN_WINDOW_S = 30.0
# someone stopped the server: the stall vocabulary's `stopped` marker reads the same lines
STOP = re.compile(r"trigger received signal=SIG(?:TERM|INT)|[Rr]eceived (?:signal )?SIG(?:TERM|INT)"
                  r"|^KeyboardInterrupt|Aborted!$")


def is_stop(message: str) -> bool:
    """Does this line say the server was told to stop (a signal, Ctrl-C)?"""
    return STOP.search(message) is not None


@dataclass(frozen=True)
class Failed:
    """One failure both commands report: a start attempt that failed, or an engine that died."""

    node: str
    attempt: int  # index of the node's start attempt (0-based)
    attempts: int  # how many start attempts the node has
    code: str  # STARTUP_FAILED | ENGINE_DIED (the `logs` finding codes)
    serving: bool  # the attempt had become ready when its errors began
    text: str  # what it failed of (redacted, as in `errors[]`)
    t: float | None  # when: its telling error, else the failure line; None in untimed logs
    phase: str | None  # the phase of its telling error (`serving` after ready)
    key: tuple[str, int] | None  # (origin, line) of its telling error; None: no error line
    errors: tuple[tuple[str, int], ...] = ()  # (origin, line) of every counted error it holds


@dataclass
class Decision:
    """The failures of a log and the counted errors that ended nothing, per node."""

    failed: list[Failed] = field(default_factory=list)
    apart: dict[str, dict[str, int]] = field(default_factory=dict)  # node -> teardown/other
    stopped: set[tuple[str, int]] = field(default_factory=set)  # (node, attempt) torn down

    def of(self, node: str) -> list[Failed]:
        return [f for f in self.failed if f.node == node]


def _ready_t(tl: Timeline) -> float | None:
    if not tl.complete:
        return None
    return tl.phases[-1].end if tl.phases else tl.first_t


def _cluster_ready(timelines: dict[str, list[Timeline]]) -> dict[str, float]:
    """Per node, when another node first became ready: a node that never says it is ready
    (a Ray worker's, a headless rank's) serves once the cluster's API server does."""
    ready = {node: min(ts) for node, attempts in timelines.items()
             if (ts := [t for tl in attempts if (t := _ready_t(tl)) is not None])}
    return {node: min(t for other, t in ready.items() if other != node)
            for node in timelines if any(other != node for other in ready)}


def _group_of(f: LogFailure, attempts: list[Timeline], cluster: float | None
              ) -> tuple[int, bool]:
    """The attempt an error belongs to and whether that attempt was serving by then."""
    if f.attempt is not None and 0 <= f.attempt < len(attempts):
        tl = attempts[f.attempt]
        serving = f.serving or tl.serving_only
        if not serving and not tl.complete and cluster is not None and f.t is not None \
                and f.t >= cluster and (tl.failure_t is None or tl.failure_t >= cluster):
            serving = True  # a headless node's error once its cluster served
        return f.attempt, bool(serving)
    if not attempts:
        return 0, f.phase == "serving"
    # an untimed excerpt (untimed.py): its attempts are [failed start?, ready start]
    serving = f.phase == "serving" and attempts[-1].complete
    return (len(attempts) - 1 if serving else 0), serving


def _is_death(f: LogFailure) -> bool:
    return f.engine_death or f.kind == "fatal"


def _torn_down(group: list[LogFailure], tl: Timeline | None, stops: list[float],
               teardown: float | None) -> bool:
    first = group[0].t
    if first is None:
        return False
    if teardown is not None and first >= teardown - TEARDOWN_WINDOW_S:
        return True
    begun = tl.first_t if tl is not None and tl.first_t is not None else float("-inf")
    return any(begun <= s <= first for s in stops)


def decide(failures: list[LogFailure], timelines: dict[str, list[Timeline]],
           stops: dict[str, list[float]] | None = None,
           teardown: dict[str, float] | None = None) -> Decision:
    """The one failure decision (module docstring). `failures`: the errors `logs` counts;
    `timelines`: each node's finished start attempts; `stops`: when each node logged a stop
    signal; `teardown`: when the collector tore each node down on purpose (bundles)."""
    stops, teardown = stops or {}, teardown or {}
    groups: dict[tuple[str, int, bool], list[LogFailure]] = {}
    cluster = _cluster_ready(timelines)
    for f in failures:
        attempt, serving = _group_of(f, timelines.get(f.node, []), cluster.get(f.node))
        groups.setdefault((f.node, attempt, serving), []).append(f)
    out = Decision()
    decided: set[tuple[str, int]] = set()
    for (node, k, serving), group in groups.items():
        attempts = timelines.get(node, [])
        tl = attempts[k] if k < len(attempts) else None
        apart = out.apart.setdefault(node, {"teardown": 0, "other": 0})
        if _torn_down(group, tl, stops.get(node, []), teardown.get(node)):
            apart["teardown"] += len(group)
            if not serving:
                out.stopped.add((node, k))
            continue
        deaths = [f for f in group if _is_death(f)]
        if serving:
            code = ENGINE_DIED if deaths else None
        elif tl is None or tl.failed or not tl.complete:
            code = STARTUP_FAILED
        else:
            code = ENGINE_DIED if deaths else None
        if code is None:
            apart["other"] += len(group)
            continue
        telling = deaths[0] if deaths else group[0]
        if code == STARTUP_FAILED and tl is not None and tl.failed and tl.failure_t is not None:
            telling = next((f for f in group if f.t == tl.failure_t), telling)
        if not serving:
            decided.add((node, k))  # its start's failure: no second one for its failure line
        out.failed.append(Failed(node, k, max(len(attempts), 1), code, serving, telling.text,
                                 telling.t, telling.phase, (telling.origin, telling.line),
                                 tuple((f.origin, f.line) for f in group)))
    for node, attempts in timelines.items():  # a failure line without an error `logs` counts
        for k, tl in enumerate(attempts):
            if not tl.failed or (node, k) in decided or _while_serving(tl, cluster.get(node)):
                continue
            if _stopped_before(tl, stops.get(node, []), teardown.get(node)):
                out.stopped.add((node, k))
            else:
                out.failed.append(Failed(node, k, len(attempts), STARTUP_FAILED, False,
                                         tl.failure or "", tl.failure_t,
                                         tl.current_phase, None))
    out.failed.sort(key=lambda f: (f.node, f.attempt, f.serving))
    return out


def _while_serving(tl: Timeline, cluster: float | None) -> bool:
    """Did a headless node's failure line come once its cluster served (its serving
    stretch's failure, decided with that stretch's errors)?"""
    t = tl.failure_t
    return t is not None and not tl.complete and cluster is not None and t >= cluster


def _stopped_before(tl: Timeline, stops: list[float], teardown: float | None) -> bool:
    t = tl.failure_t
    if t is None:
        return False
    if teardown is not None and t >= teardown - TEARDOWN_WINDOW_S:
        return True
    begun = tl.first_t if tl.first_t is not None else float("-inf")
    return any(begun <= s <= t for s in stops)


def fail_attempts(decision: Decision, timelines: dict[str, list[Timeline]]) -> None:
    """Mark the start attempts the decision failed on errors (the catalog's failure lines
    marked theirs already) and unmark those it found stopped before their failure line, so
    `startup.failed` and `nodes[].failed` say what the findings say."""
    for node, k in decision.stopped:
        attempts = timelines.get(node, [])
        if k < len(attempts) and (node, k) not in {(f.node, f.attempt) for f in decision.failed
                                                   if not f.serving}:
            tl = attempts[k]
            tl.failed, tl.failure, tl.failure_t = False, None, None
    for f in decision.failed:
        if f.code != STARTUP_FAILED or f.serving:
            continue
        attempts = timelines.get(f.node, [])
        if f.attempt >= len(attempts):
            continue
        tl = attempts[f.attempt]
        if not tl.failed:
            tl.failed, tl.failure, tl.failure_t = True, f.text[:300], f.t
            if tl.phases:
                tl.phases[-1].open = False


def failure_findings(errors: list[dict], primary: str, timelines: dict[str, list[Timeline]],
                      decision: Decision, code: str) -> list[dict]:
    """The `logs` findings of one code, one per failure of the decision, every node's: a node
    other than `primary` (the one that got furthest) is named in the text; `errors`: the
    document's `errors[]` (an untimed excerpt's phase is the one its lines named)."""
    out = []
    for f in decision.failed:
        if f.code != code:
            continue
        where = "" if f.node == primary else f" on {f.node}"
        attempts = timelines.get(f.node) or []
        tl = attempts[f.attempt] if f.attempt < len(attempts) else None
        if code == ENGINE_DIED:
            when = "after startup" if f.serving else "before the server became ready"
            text = f"engine died {when}{where}: {f.text}"
        else:
            # an untimed excerpt has no phases: the phase its lines named before the error
            phase = (tl.current_phase if tl is not None else None) or f.phase or next(
                (e["phase"] for e in errors if e["phase"] and e["node"] == f.node),
                None)
            failure = redact((tl.failure if tl is not None else None) or f.text)
            if f.attempt < f.attempts - 1:
                text = (f"startup attempt {f.attempt + 1} of {f.attempts}{where} failed "
                        f"during {phase}: {failure}")
            else:
                text = f"startup{where} failed during {phase or 'an unknown phase'}: {failure}"
        out.append({"code": code, "severity": "error", "text": text, "node": f.node})
    return out


__all__ = ["Decision", "ENGINE_DIED", "Failed", "STARTUP_FAILED", "STOP", "TEARDOWN_WINDOW_S",
           "decide", "fail_attempts", "failure_findings", "is_stop"]
