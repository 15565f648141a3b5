"""Speculative acceptance read window by window from the `/metrics` pages a launch kept.

The protocol scrapes `/metrics` before and after each workload (bench/metrics_recorder.py) and
keeps every page raw in the launch's `metrics/` folder. Acceptance read once over the whole run
hides a collapse: a drafter that was accepted 70 % of the time for the first minutes and 1.5 %
after averages to a plausible number. `acceptance_windows` returns the speculative counters'
increase between every two consecutive pages, in the order they were taken, so a later window
can be compared with the earlier ones (session/findings.py).
"""

from __future__ import annotations

import json
from pathlib import Path

from sparktriage.errors import SparktriageError
from sparktriage.limits import METRICS_MAX_BYTES
from sparktriage.metrics.prometheus import parse_text, spec_window

INDEX = "scrapes.jsonl"
MAX_PAGES = 200


def _pages(folder: Path) -> list[tuple[dict, object]]:
    pages = []
    try:
        lines = (folder / INDEX).read_text(encoding="utf-8").splitlines()[:MAX_PAGES]
    except OSError:
        return []
    for line in lines:
        try:
            entry = json.loads(line)
        except ValueError:
            continue
        name = entry.get("file") if isinstance(entry, dict) else None
        if not isinstance(name, str) or "/" in name or name.startswith("."):
            continue
        path = folder / name
        try:
            if path.is_symlink() or path.stat().st_size > METRICS_MAX_BYTES:
                continue
            page = parse_text(path.read_text(encoding="utf-8", errors="replace"), str(path))
        except (OSError, SparktriageError):
            continue
        pages.append((entry, page))
    return pages


def acceptance_windows(folder: Path) -> list[dict]:
    """`{from, to, drafts, draft_tokens, accepted_tokens, acceptance_rate, ...}` for every pair of
    consecutive pages that both carry the speculative counters; [] without speculation."""
    pages = _pages(folder)
    windows = []
    for (a_entry, a), (b_entry, b) in zip(pages, pages[1:]):
        window = spec_window(a, b)
        if window is None:
            continue
        windows.append({"from": f"{a_entry.get('when')} {a_entry.get('workload')}",
                        "to": f"{b_entry.get('when')} {b_entry.get('workload')}", **window})
    return windows
