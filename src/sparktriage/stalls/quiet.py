"""Quiet lines: those whose text no reader of the classifier looks at.

A line is quiet when no marker of the vocabulary, no `log_match` of a rule or of a shared
condition, and no expression the classifier reads in every line (stalls/texts.py) matches it.
Such a line still counts (a run of N stands for N lines) and still has a time and a speaker,
but what it says changes no verdict, so a stretch of them may be folded (stalls/lineruns.py,
"Thinning").
"""

from __future__ import annotations

import re
from typing import Callable, Iterable

from sparktriage.logs.events import LogEvent
from sparktriage.stalls.loader import RuleSet
from sparktriage.stalls.markers import MarkerSet
from sparktriage.stalls.prefilter import Prefilter
from sparktriage.stalls.schema import Condition
from sparktriage.stalls.texts import ANY_LINE, line_text

QUIET_MEMO = 4096  # answers remembered per message (a log repeats its messages)


def _conditions(condition: Condition) -> Iterable[Condition]:
    yield condition
    for child in (condition.all or []) + (condition.any or []):
        yield from _conditions(child)


def log_patterns(ruleset: RuleSet) -> list[str]:
    """Every `log_match` expression of the rules and of the vocabulary's shared conditions."""
    roots: list[Condition] = [c for loaded in ruleset.rules.values()
                              for c in loaded.rule.conditions.values()]
    if ruleset.vocabulary is not None:
        roots += list(ruleset.vocabulary.shared.values())
    return sorted({c.log_match for root in roots for c in _conditions(root)
                   if c.log_match is not None})


def quiet_lines(ruleset: RuleSet, markers: MarkerSet) -> Callable[[LogEvent], bool]:
    """The predicate: True for a line no reader looks at (module docstring)."""
    patterns = log_patterns(ruleset)
    rules = [re.compile(p, re.M) for p in patterns]  # as conditions.py reads them
    # a line holding none of the literals every expression needs is quiet without trying them
    maybe = Prefilter(patterns + [rx.pattern for rx in ANY_LINE]).maybe
    memo: dict[str, bool] = {}

    def quiet(event: LogEvent) -> bool:
        message = event.message
        text = line_text(event.relay, event.process, message)  # as the rank readers see it
        answer = memo.get(text)
        if answer is None:
            answer = not (markers.match(message) or maybe(text) and (
                any(rx.search(message) for rx in rules)
                or any(rx.search(text) for rx in ANY_LINE)))
            if len(memo) >= QUIET_MEMO:
                memo.clear()
            memo[text] = answer
        return answer

    return quiet


__all__ = ["quiet_lines", "log_patterns"]
