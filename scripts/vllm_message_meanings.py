"""Generate logs/data/vllm_message_meanings.json: every start-up message of the catalogue with
its meaning, from the catalogue (data/vllm_messages.json) and the hand table
(data/message_meanings.tsv, keyed by format string), and data/vllm_rule_patterns.json, the
patterns of the rules derived from those formats; then logs/data/vllm_message_rules.json,
which catalogue messages the reader's rules (built from the new patterns) match.

    .venv/bin/python scripts/vllm_message_meanings.py [--check]

After a new release's catalogue is generated, this names every start-up message the hand table
does not decide yet and exits 1 without writing: add a line for each (`nothing` is a meaning),
then run it again. `--check` writes nothing and exits 1 when the committed table is not current.
"""

from __future__ import annotations

import json
import subprocess
import sys
from importlib import resources

from sparktriage.logs import meanings, messages


def main() -> int:
    check = "--check" in sys.argv[1:]
    try:
        hand = meanings.parse_hand(meanings.hand_text())
    except meanings.TableError as exc:
        print(f"data/message_meanings.tsv: {exc}", file=sys.stderr)
        return 1
    entries, undecided, stale = meanings.build(messages.catalogue(), hand)
    for fmt in stale:
        print(f"hand table: no catalogue message has this format: {fmt!r}", file=sys.stderr)
    if undecided:
        print(f"{len(undecided)} start-up messages have no meaning yet; add a line for each to "
              "src/sparktriage/logs/data/message_meanings.tsv:", file=sys.stderr)
        for fmt in undecided:
            print(f"  {fmt!r}", file=sys.stderr)
        return 1
    files = {meanings.TABLE: meanings.dump(entries), meanings.PATTERNS: meanings.dump_patterns(entries)}
    data = resources.files("sparktriage.logs")
    if check:
        current = all(data.joinpath(name).read_text(encoding="utf-8") == text
                      for name, text in files.items())
        print("current" if current else "out of date: run scripts/vllm_message_meanings.py")
        return 0 if current else 1
    for name, text in files.items():
        with open(str(data.joinpath(name)), "w", encoding="utf-8") as out:
            out.write(text)
    print(f"{len(entries)} messages written to {data.joinpath(meanings.TABLE)}")
    # the rules are compiled from the table at import: map in a fresh process that reads it
    subprocess.run([sys.executable, __file__, "--rules"], check=True)
    return 1 if stale else 0


def write_rules() -> None:
    mapped = messages.mapping()
    target = resources.files("sparktriage.logs").joinpath("data/vllm_message_rules.json")
    doc = {"about": "catalogue id -> the catalog.RULES ids that match it, for every message of "
                    "data/vllm_messages.json the log reader maps (sparktriage.logs.messages."
                    "mapping())", "mapped": mapped}
    with open(str(target), "w", encoding="utf-8") as out:
        out.write(json.dumps(doc, indent=0, sort_keys=True))
    print(f"{len(mapped)} mapped messages written to {target}")


if __name__ == "__main__":
    if sys.argv[1:] == ["--rules"]:
        write_rules()
        sys.exit(0)
    sys.exit(main())
