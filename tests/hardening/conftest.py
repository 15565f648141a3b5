"""The fuzz job's counts in the terminal summary (examples per target, crashes)."""

from __future__ import annotations

import sys


def pytest_terminal_summary(terminalreporter, exitstatus, config):
    fuzz = sys.modules.get("test_fuzz")
    counts = getattr(fuzz, "COUNTS", None)
    if not counts:
        return
    failed = [r for r in terminalreporter.stats.get("failed", [])
              if "test_fuzz" in r.nodeid or "test_exit_codes_property" in r.nodeid]
    terminalreporter.write_sep("-", "fuzz job")
    for name, n in counts.items():
        terminalreporter.write_line(f"{name:28s} {n:6d} examples")
    terminalreporter.write_line(f"{len(counts)} targets, crashes: {len(failed)}")
