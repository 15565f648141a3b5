"""Untimed excerpts: a log with no timed line is read as far as it goes.

People paste log excerpts without stamps: a bare traceback of an engine that died at start,
`hf download` output waiting on a lock, NCCL error lines. Such a paste is still a log of the
serving stack when at least one of its lines is recognisable as one: a catalog rule matches it
(vLLM's own shapes: logs/catalog.py), the parser read it as a traceback, a Python warning, an
access line or an NCCL debug line, `logs` counts it as an error (facts.py: exception lines,
fatal signatures), or it has a shape only the stack writes (`_STACK`: NCCL, Ray, torch
distributed, huggingface_hub, vLLM module paths). A level word alone is not enough: an untimed
line with a level is a vLLM line whose stamp could not be read, which garbage can imitate. `UntimedReader` watches every analysed event
for that and for what the lines say without a time: the furthest startup phase a catalog anchor
names (phases never go back) and whether the server said it was serving. With no time there is
no startup time, no phase duration, no silence and no rate; the failure model stays the one of
document.py: a start that holds an error `logs` counts and never said it was ready ended in that
error (one failure), and a server that said it was ready failed only on an engine death.

A file with no recognisable line at all (prose, a binary, an empty file) is refused whole with
`NOT_A_LOG`, as before (docs/logs.md, "Untimed excerpts").
"""

from __future__ import annotations

import re

from sparktriage.errors import InputError
from sparktriage.logs.catalog import PHASE_INDEX, Hit
from sparktriage.logs.events import LogEvent
from sparktriage.logs.timeline import Timeline, serving_text

NOT_A_LOG = "no timed log lines (is this a vLLM log?)"
_KNOWN_KINDS = frozenset({"traceback", "pywarn", "uvicorn", "nccl"})
_STACK = re.compile(
    r"\bNCCL (?:INFO|WARN|ERROR)\b|\bnccl[A-Z]\w*(?:Error|Failure)\b|\bray\.exceptions\."
    r"|\(raylet\)|\bhuggingface_hub[.\]]|\bFetching \d+ files\b|\btorch\.distributed\."
    r"|\bvllm\.(?:v1|entrypoints|engine|worker|executor|model_executor|distributed)\b"
    r"|\bprocess_group_nccl\b|ProcessGroupNCCL|\bc10d\b")
# what says the server serves, as the stall markers read it (server_ready, serving_traffic)
_READY_IDS = frozenset({"ready.complete", "ready.server", "stats", "spec"})


def recognisable(event: LogEvent, hits: list[Hit], counted_error: bool) -> bool:
    """Is this line recognisably one of the serving stack's (see the module docstring)?"""
    return bool(hits) or counted_error or event.kind in _KNOWN_KINDS \
        or _STACK.search(event.message) is not None


class UntimedReader:
    """What untimed lines tell, per node, in input order."""

    def __init__(self) -> None:
        self.recognised = 0  # untimed events recognisable as a serving-stack log
        self.phase: dict[str, str] = {}  # node -> furthest phase a catalog anchor names
        self.ready: dict[str, bool] = {}  # node -> an untimed line said it serves

    def feed(self, event: LogEvent, hits: list[Hit], counted_error: bool) -> None:
        if event.t is not None:  # only untimed lines count: every path reads them all, while
            return               # timed ones may be skipped by the fast paths (docs/logs.md)
        if recognisable(event, hits, counted_error):
            self.recognised += 1
        for hit in hits:
            phase = hit.rule.phase
            current = self.phase.get(event.node)
            if phase is not None and (current is None
                                      or PHASE_INDEX[phase] > PHASE_INDEX[current]):
                self.phase[event.node] = phase
        if any(h.id in _READY_IDS for h in hits) or (event.kind == "uvicorn" and '" 200'
                                                     in event.message) \
                or serving_text(event.message) or "EngineDeadError" in event.message:
            self.ready[event.node] = True

    def shown_phase(self, node: str) -> str | None:
        """The phase the node's lines named so far (an untimed error's phase), else None."""
        if self.ready.get(node):
            return "serving"
        return self.phase.get(node)

    def timelines(self, errors: list[dict]) -> dict[str, list[Timeline]]:
        """The untimed attempts of each node that logged an error: no phases, no times. A node
        that never said it serves failed with its first engine death (else its first error);
        one that did had a start that failed first when an engine death or fatal signature came
        before its first serving line (a restart, as `stalls` reads it), then a start that
        became ready, whose serving errors are judged by `findings` (engine-died)."""
        out: dict[str, list[Timeline]] = {}
        for entry in errors:
            node = entry["node"]
            if node in out:
                continue
            mine = [e for e in errors if e["node"] == node]
            if not self.ready.get(node):
                first = next((e for e in mine if e.get("engine_death")), mine[0])
                out[node] = [_failed(node, first)]
                continue
            before = [e for e in mine if e.get("shown_phase") != "serving"
                      and (e.get("engine_death") or e.get("kind") == "fatal")]
            out[node] = ([_failed(node, before[0])] if before else []) + \
                [Timeline(node=node, complete=True)]
        return out


def _failed(node: str, entry: dict) -> Timeline:
    return Timeline(node=node, failed=True, failure=entry["text"][:300])


def require_log(origin: str, document: dict) -> None:
    """Refuse, in the same words for `logs` and `stalls` (exit 2), a `logs` document of input
    with no timed line and no line recognisable as a serving-stack log."""
    basis = document.get("time_basis") or {}
    counts = document.get("counts") or {}
    if basis.get("first") is None and not counts.get("recognised_untimed"):
        raise InputError(f"{origin}: {NOT_A_LOG}")


__all__ = ["NOT_A_LOG", "UntimedReader", "recognisable", "require_log"]
