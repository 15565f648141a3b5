"""The byte budget of the static readers of client text (bash/ and read/makefile.py).

A value these readers build (a variable, an expanded word, an array) can grow far faster than
its source: `A=${A//x/$A}` squares a length in a 12-byte line, `A := $(A)$(A)` doubles it, and
`A=("${A[@]}" "${A[@]}")` doubles an array. Every value is measured *before* it is built and
charged to one budget per input read: past a cap the input is refused with one line naming the
cap and the line (limits.EXPAND_*, docs/limits.md), never a MemoryError or minutes of copying.
Sizes are counted in characters.
"""

from __future__ import annotations

from sparktriage.limits import (EXPAND_MAX_ITEMS, EXPAND_MAX_REFERENCES, EXPAND_TOTAL_MAX_CHARS,
                                EXPAND_VALUE_MAX_CHARS, LimitError, limit_hit, size_text)


class Budget:
    """What one read of one input may build; `origin` names the file in a refusal."""

    def __init__(self, origin: str) -> None:
        self.origin = origin
        self.used = 0
        self.references = 0

    def check(self, size: int, line: int | None, items: int = 0) -> None:
        """Refuse a value of `size` characters (and `items` items) before it is built."""
        if size > EXPAND_VALUE_MAX_CHARS:
            raise self._refuse("a value the script builds (expanded)",
                               f"{size_text(EXPAND_VALUE_MAX_CHARS)} per value", line)
        if items > EXPAND_MAX_ITEMS:
            raise self._refuse("an array or word list the script builds",
                               f"{EXPAND_MAX_ITEMS} items", line)

    def charge(self, size: int, line: int | None, items: int = 0) -> None:
        """`check`, then count the value against the budget of the whole read."""
        self.check(size, line, items)
        self.used += size + items
        if self.used > EXPAND_TOTAL_MAX_CHARS:
            raise self._refuse("the total of the values the script builds",
                               f"{size_text(EXPAND_TOTAL_MAX_CHARS)} per input", line)

    def reference(self, line: int | None) -> None:
        """Count one variable reference followed: make's `=` variables expand lazily, so
        `B = $(A)$(A)...` a few levels deep is astronomically many references to empty
        values, which the byte counts alone never see."""
        self.references += 1
        if self.references > EXPAND_MAX_REFERENCES:
            raise self._refuse("the number of variable references expanded",
                               f"{EXPAND_MAX_REFERENCES} references", line)

    def _refuse(self, what: str, limit: str, line: int | None) -> LimitError:
        error = limit_hit(what, f"{limit} (the expansion budget)", self.origin, line)
        error.hint = "see docs/limits.md; not a launch script a client sends"
        return error


def size_of(value: str | list[str]) -> int:
    """Characters of a value; an array counts its items and one separator each."""
    return len(value) if isinstance(value, str) else sum(map(len, value)) + len(value)


__all__ = ["Budget", "LimitError", "size_of"]
