"""Analyse log inputs into the `logs` document (the entry point of `sparktriage logs`)."""

from __future__ import annotations

import datetime as _dt
from typing import Sequence

from sparktriage.evidence.logsdoc import LogAnalyzer
from sparktriage.evidence.parser import ParseOptions, merge_events, source_events
from sparktriage.evidence.sources import LogSource, resolve_inputs


def analyze_inputs(specs: Sequence[str | LogSource], *, tz: _dt.tzinfo | None = None,
                   year: int | None = None) -> dict:
    """Resolve input specs, stream their events once, and return the `logs` document."""
    sources: list[LogSource] = []
    for spec in specs:
        sources.extend([spec] if isinstance(spec, LogSource) else resolve_inputs([spec]))
    options = ParseOptions(tz=tz, year=year)
    analyzer = LogAnalyzer(tz)
    analyzer.feed_all(merge_events([source_events(s, options) for s in sources]))
    return analyzer.document()
