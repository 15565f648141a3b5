"""The one word each decision state of a sweep is called by, in every rendering: the report
(page one, summary, sweep section, findings), `sparktriage sweep`'s lines, the demo's and the
session's console summaries.

The states are the file's (`documents.sweep.DecisionState`, written to `sweep.json`): `best` and
`tied` are settled decisions (tied: within the margin of the best), `insufficient` names a depth
only as the highest mean so far, and a decision without a depth is undecided.
"""

from __future__ import annotations

from typing import get_args

from sparktriage.documents.sweep import DecisionState

WORDS: dict[DecisionState, str] = {"best": "settled", "tied": "tied", "insufficient": "provisional"}
UNDECIDED = "undecided"  # insufficient, with no depth to name
SETTLED: tuple[DecisionState, ...] = ("best", "tied")
STATES: tuple[DecisionState, ...] = get_args(DecisionState)


def decision_word(state: str | None, depth: int | None = 0) -> str | None:
    """The word a decision of `state` naming `depth` is called by (WORDS); None for a state this
    sweep does not write (another producer's sweep.json)."""
    if depth is None:
        return UNDECIDED
    return WORDS.get(state or "")  # type: ignore[call-overload]
