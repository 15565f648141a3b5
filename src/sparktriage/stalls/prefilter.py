"""A cheap necessary test before the vocabulary's expressions: the literals a match must hold.

Most log lines match no marker, and trying the union of all markers on a line that matches none
costs about 240 µs (72 expressions, several with leading wildcards). Every expression here
needs at least one of a few literal strings to occur in any text it matches (found from its
syntax tree: a literal run, a group whose every branch has one, a repeat taken at least once);
a line that holds none of them is not tried. The literals are compared lowercased against the
lowercased line, so a case-insensitive part needs no care, and a line that is not ASCII (where
Unicode case folding could match a literal without its lowercase form) is always tried.
"""

from __future__ import annotations

from re import _constants as C  # noqa: N812  (the standard parser's opcodes)
from re import _parser

MIN_LITERAL = 3  # a shorter literal rejects too little to be worth a test


def _best(options: list[frozenset[str]]) -> frozenset[str] | None:
    """Of several requirements that all hold, the one most likely to reject a line: the one
    whose shortest literal is longest."""
    usable = [o for o in options if o and min(map(len, o)) >= MIN_LITERAL]
    return max(usable, key=lambda o: (min(map(len, o)), -len(o)), default=None)


def _sequence(items) -> frozenset[str] | None:
    options: list[frozenset[str]] = []
    run: list[str] = []

    def flush() -> None:
        if run:
            options.append(frozenset({"".join(run).lower()}))
            run.clear()

    for op, arg in items:
        if op is C.LITERAL:
            run.append(chr(arg))
            continue
        flush()
        found = _item(op, arg)
        if found is not None:
            options.append(found)
    flush()
    return _best(options)


def _item(op, arg) -> frozenset[str] | None:
    if op is C.SUBPATTERN:
        return _sequence(arg[-1])
    if op is C.BRANCH:
        branches = [_sequence(branch) for branch in arg[1]]
        if any(b is None for b in branches):
            return None
        return frozenset().union(*branches)
    if op in (C.MAX_REPEAT, C.MIN_REPEAT, C.POSSESSIVE_REPEAT):
        low, _high, sub = arg
        return _sequence(sub) if low >= 1 else None
    if op is C.ATOMIC_GROUP:
        return _sequence(arg)
    return None  # a class, any character, an anchor, a look-around, a back-reference


def required_literals(pattern: str) -> frozenset[str] | None:
    """Lowercased literals of which any text `pattern` matches holds at least one; None when
    the expression needs none of at least MIN_LITERAL characters."""
    return _sequence(_parser.parse(pattern))


class Prefilter:
    """`maybe(text)`: False only when no expression of `patterns` can match `text`."""

    def __init__(self, patterns: list[str]) -> None:
        needs = [required_literals(p) for p in patterns]
        self.always = any(n is None for n in needs) or not needs
        self.literals = tuple(sorted(set().union(*[n for n in needs if n is not None]),
                                     key=len, reverse=True))

    def maybe(self, text: str) -> bool:
        if self.always or not text.isascii():
            return True
        low = text.lower()
        return any(literal in low for literal in self.literals)


__all__ = ["required_literals", "Prefilter", "MIN_LITERAL"]
