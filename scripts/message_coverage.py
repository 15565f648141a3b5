"""Coverage of the log reader against vLLM's message catalogue, as docs/logs.md states it.

    .venv/bin/python scripts/message_coverage.py [LOG ...]

With no argument it reads the field corpora (tests/stalls/field, tests/stalls/untimed,
tests/fixtures/logs). Prints one JSON document: the catalogue's size per release (logger calls,
and every kind), the share of start-up messages (INFO/WARNING/ERROR logger calls of the
start-up modules, `logs.meanings.in_pool`) that have a meaning, that the reader maps, and
that it maps through rules derived from the catalogue, per release; and the share of vLLM-format lines in the logs
that match a catalogue entry and that the reader maps.
"""

from __future__ import annotations

import json
import sys
from pathlib import Path

from sparktriage.logs import messages

ROOT = Path(__file__).resolve().parents[1]
CORPORA = ("tests/stalls/field", "tests/stalls/untimed", "tests/fixtures/logs")


def main() -> None:
    paths = [Path(p) for p in sys.argv[1:]] or sorted(
        p for folder in CORPORA for p in (ROOT / folder).rglob("*.log"))
    cat = messages.catalogue()
    mapped = messages.mapping()
    lines = []
    for path in paths:
        lines.extend(path.read_text(encoding="utf-8", errors="replace").splitlines())
    cov = messages.line_coverage(lines, mapped)
    logger_calls = {r: sum(m.kind == "log" for m in cat.in_release(r)) for r in cat.releases}
    startup = {}
    for release in cat.releases:
        share = messages.startup_share(release)
        startup[release] = {"messages": share.messages, "with_meaning": share.with_meaning,
                            "meaningful": share.meaningful, "mapped": share.mapped,
                            "derived": share.derived,
                            "meaning_share": round(share.with_meaning / share.messages, 3),
                            "mapped_share": round(share.mapped / share.messages, 3),
                            "derived_share": round(share.derived / share.messages, 3)}
    json.dump({
        "catalogue": {"entries": len(cat.messages), "releases": list(cat.releases),
                      "logger_calls_per_release": logger_calls,
                      "all_kinds_per_release": cat.size_per_release},
        "startup_mapped": startup,
        "startup_meanings_newest": messages.startup_meanings(cat.releases[-1]),
        "unread_stated_durations_newest": messages.unread_durations(cat.releases[-1]),
        "lines": {"files": len(paths), "vllm_lines": cov.lines, "catalogued": cov.catalogued,
                  "mapped": cov.mapped,
                  "catalogued_share": round(cov.catalogued / max(cov.lines, 1), 3),
                  "mapped_share": round(cov.mapped / max(cov.lines, 1), 3),
                  "not_catalogued_examples": list(cov.missing[:15])},
    }, sys.stdout, indent=1)
    print()


if __name__ == "__main__":
    main()
