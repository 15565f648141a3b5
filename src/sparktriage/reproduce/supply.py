"""The values to supply on the lab: the placeholders the written deployment holds, and no other.

A placeholder stands for a value the inputs do not carry (a secret, a `$(...)` known only at
run time). One that ended up only in a setting the deployment does not carry (a container
`--name node-$RANDOM` the plan replaces, a client address replaced by the lab's) is not asked
for: its unknowns row becomes a note saying it is not needed.
"""

from __future__ import annotations

from sparktriage.reproduce.model import Unknown
from sparktriage.reproduce.secrets import placeholder


def settle(unknown: list[Unknown], declared: list[str],
           supply: list[str]) -> tuple[list[Unknown], list[str]]:
    """(the unknowns rows to keep, notes for the placeholders not needed): a row whose text is
    a placeholder the written deployment does not hold is not a value to supply."""
    unused = {placeholder(name): name for name in declared if name not in supply}
    kept: list[Unknown] = []
    notes: list[str] = []
    said: set[str] = set()
    for row in unknown:
        name = unused.get(row.text.strip())
        if name is None:
            kept.append(row)
            continue
        what = row.note.split("; not known without running", 1)[0]
        if (row.input, name, what) not in said:
            said.add((row.input, name, what))
            notes.append(f"{row.input}: {name} ({what}): not needed, the written deployment "
                         "does not use the setting it was in")
    return kept, notes


def header(supply: list[str]) -> str:
    """The first line of the written deployment."""
    return ("# written by sparktriage reproduce (docs/reproduce.md); values to supply: "
            + (", ".join(supply) or "none") + "\n")

