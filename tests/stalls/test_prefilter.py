"""The literal prefilter (stalls/prefilter.py) never rejects a line an expression matches."""

from __future__ import annotations

import re
from pathlib import Path

import pytest

from sparktriage.logs.parser import iter_events
from sparktriage.stalls.prefilter import Prefilter, required_literals
from sparktriage.stalls.quiet import log_patterns
from sparktriage.stalls.texts import ANY_LINE, line_text

REPO = Path(__file__).resolve().parents[2]
LOGS = sorted([*(REPO / "tests" / "stalls" / "field").glob("*.log"),
               *(REPO / "tests" / "stalls" / "untimed").glob("*.txt"),
               *(REPO / "tests" / "fixtures" / "logs").glob("*.log")])


@pytest.mark.parametrize(("pattern", "needs"), [
    (r"Loading weights took (?P<took_s>[\d.]+) seconds", {"loading weights took "}),
    (r"(?i)waiting (for|on) the (lock|store)", {"waiting "}),
    (r"foo(bar|bazz)?quux", {"quux"}),
    (r"(?:abc\d+|defg)xy", {"abc", "defg"}),
    (r"(?:abc|de)\d", None),  # a branch with no literal of three characters: no requirement
    (r"x*yz", None),
    (r"(?:retry ){2,}now", {"retry "}),
])
def test_required_literals(pattern, needs):
    got = required_literals(pattern)
    assert (set(got) if got is not None else None) == needs


def test_case_and_unicode():
    keep = Prefilter([r"(?i)nccl error"])
    assert keep.maybe("ProcessGroup NCCL ERROR 3") and not keep.maybe("all fine")
    assert keep.maybe("ǹccl ёrror")  # not ASCII: always tried
    assert Prefilter([r"a\d+b"]).maybe("anything")  # no usable literal: always tried


def _expressions(rules) -> list[tuple[str, re.Pattern, bool]]:
    """(name, expression, reads the prefixed text) as the classifier applies them."""
    out = [(name, rules.markers.compiled[name], False) for name in rules.markers.markers]
    out += [(f"log_match {p}", re.compile(p, re.M), False) for p in log_patterns(rules.ruleset)]
    out += [(f"texts {rx.pattern[:30]}", rx, True) for rx in ANY_LINE]
    return out


def test_no_corpus_line_an_expression_matches_is_rejected(rules):
    expressions = _expressions(rules)
    filters = {name: Prefilter([rx.pattern]) for name, rx, _ in expressions}
    tried = matched = 0
    for event in iter_events([str(p) for p in LOGS]):
        text = line_text(event.relay, event.process, event.message)
        for name, rx, prefixed in expressions:
            line = text if prefixed else event.message
            tried += 1
            if rx.search(line):
                matched += 1
                assert filters[name].maybe(line), (name, line[:200])
    assert tried > 50_000 and matched > 500, (tried, matched)
