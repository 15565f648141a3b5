"""The variables at one point of the static bash walk, and the values it could not know.

A `Scope` holds the script's own variables (strings and arrays), then the values the client
supplied; a `Hole` is a value the script computes at run time, which becomes a
`<supply:NAME>` placeholder with its line. The scope carries the byte budget of the read
(budget.py), shared by its copies (subshells, branches) and by the scripts it runs.
"""

from __future__ import annotations

import re
from dataclasses import dataclass, field

from sparktriage.reproduce.bash.tree import Node, line
from sparktriage.reproduce.budget import Budget
from sparktriage.reproduce.secrets import placeholder

Value = str | list[str]
_NAME_CHARS = re.compile(r"[^A-Za-z0-9_]+")


@dataclass(frozen=True)
class Hole:
    """A value the script computes at run time: its placeholder name, line and construct."""

    name: str
    line: int
    what: str
    dropped: bool = False  # the words were left out (script arguments), no placeholder put


@dataclass
class Scope:
    """Variables at one point of the walk: the script's own, then the client's."""

    given: dict[str, str]
    values: dict[str, Value] = field(default_factory=dict)
    unset: set[str] = field(default_factory=set)  # unset by the script (`unset X`)
    exported: set[str] = field(default_factory=set)
    positional: list[str] | None = None  # None: the script's own arguments (unknown)
    holes: list[Hole] = field(default_factory=list)
    file: str | None = None  # another input script being read (named in holes)
    # the script's own arguments read as unknown values rather than as none given (the
    # second reading of a script that runs no server without arguments: serve.py)
    args_unknown: bool = False
    budget: Budget = field(default_factory=lambda: Budget("script"))

    def lookup(self, name: str) -> Value | None:
        if name in self.values:
            return self.values[name]
        if name in self.unset:
            return None
        return self.given.get(name)

    def copy(self) -> Scope:
        return Scope(self.given, dict(self.values), set(self.unset), set(self.exported),
                     self.positional, self.holes, self.file, self.args_unknown, self.budget)

    def hole(self, name: str, node: Node, what: str, dropped: bool = False) -> str:
        name = _NAME_CHARS.sub("_", name).strip("_")[:60] or "value"
        self.holes.append(Hole(name, line(node), f"{what} (in {self.file})" if self.file
                               else what, dropped))
        return "" if dropped else placeholder(name)
