"""When the collector stopped each node of a bundle on purpose (its `teardown` events).

What a server logs as the collector kills it is its teardown, not a crash: `logs` and `stalls`
hand these times to the one failure decision (logs/decision.py), so both read the same bundle
the same way. The events are the bundle's `events.jsonl` (docs/formats.md), in a folder or an
archive; only teardowns under an outcome where the server was still running count (after
"target-exited", "failed" or a lost link the server ended on its own).
"""

from __future__ import annotations

import json
import re
from pathlib import Path
from typing import Iterable

from sparktriage.bundle import layout
from sparktriage.bundle.archive import Archive, is_archive

# outcomes under which the collector stopped a server that was still running (docs/formats.md)
DELIBERATE_STOPS = ("ready", "duration-elapsed", "interrupted", "completed", "timeout")
MAX_EVENT_BYTES = 8 << 20  # a collector writes a few events per node: anything larger is not one
_EVENTS_MEMBER = re.compile(r"(?:^|/)" + re.escape(layout.EVENTS_FILE) + r"\Z")


def _num(value) -> float | None:
    return float(value) if isinstance(value, (int, float)) and not isinstance(value, bool) \
        else None


def deliberate_stops(events: Iterable[object], nodes: list[str]) -> dict[str, float]:
    """The first deliberate teardown of each node (an event without a known node stops all)."""
    out: dict[str, float] = {}
    for event in events:
        if not isinstance(event, dict) or event.get("event") != "teardown" \
                or event.get("reason") not in DELIBERATE_STOPS or _num(event.get("t")) is None:
            continue
        for node in [event["node"]] if event.get("node") in nodes else nodes:
            out[node] = min(out.get(node, float("inf")), float(event["t"]))
    return out


def _parse(data: bytes) -> list[object]:
    out: list[object] = []
    for line in data[:MAX_EVENT_BYTES].splitlines():
        try:
            out.append(json.loads(line))
        except ValueError:
            continue  # a torn last line of a collector that was killed
    return out


def bundle_events(path: Path) -> list[object]:
    """The supervision events of a bundle folder (or a run's launch folder holding one) or a
    bundle archive; none when it has no events file."""
    if path.is_dir():
        for root in (path, path / "bundle"):
            events = root / layout.EVENTS_FILE
            if (root / layout.BUNDLE_FILE).is_file() and events.is_file() \
                    and not events.is_symlink():
                with open(events, "rb") as stream:
                    return _parse(stream.read(MAX_EVENT_BYTES))
        return []
    if not is_archive(path):
        return []
    archive = Archive.opened(path)
    names = sorted((n for n in archive.names() if _EVENTS_MEMBER.search(n)), key=len)
    if not names:
        return []
    with archive.open_member(names[0]) as stream:
        return _parse(stream.read(MAX_EVENT_BYTES))


__all__ = ["DELIBERATE_STOPS", "bundle_events", "deliberate_stops"]
