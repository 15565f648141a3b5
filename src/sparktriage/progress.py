"""Progress events: the one typed definition every stage reports progress through.

A stage that runs for a while takes an `Observer` and calls it with an event name and its
details (`observe("launch", {"label": "L001", "depth": 0})`); the CLI decides how to show it
(console lines, nothing under `--quiet`, JSON elsewhere). Names are short kebab-case words
(`launch`, `step`, `step-failed`, `warning`, `probe-phase`, ...); details are JSON-able values.
The core never prints.
"""

from __future__ import annotations

from dataclasses import dataclass, field
from typing import Any, Mapping, Protocol


class Observer(Protocol):
    """Receives progress events: `observe(event, details)`."""

    def __call__(self, event: str, details: dict[str, Any], /) -> None: ...


@dataclass(frozen=True)
class ProgressEvent:
    """One progress event, as kept by `Recorder` (tests, summaries)."""

    name: str
    details: Mapping[str, Any] = field(default_factory=dict)


def quiet(event: str, details: dict[str, Any], /) -> None:
    """The observer that ignores every event (the default)."""


def prefixed(observe: Observer, prefix: str) -> Observer:
    """An observer that passes events on with `prefix` added to their names (`probe-`)."""

    def forward(event: str, details: dict[str, Any], /) -> None:
        observe(prefix + event, details)

    return forward


class Recorder:
    """An observer that keeps every event in order."""

    def __init__(self) -> None:
        self.events: list[ProgressEvent] = []

    def __call__(self, event: str, details: dict[str, Any], /) -> None:
        self.events.append(ProgressEvent(event, dict(details)))
