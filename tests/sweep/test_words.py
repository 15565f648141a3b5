"""One word per decision state, defined once (sweep.policy.words) and used by every renderer."""

from __future__ import annotations

import re
from pathlib import Path

import pytest
from pydantic import ValidationError

from sparktriage.documents.sweep import ContractDecision
from sparktriage.sweep.policy.words import STATES, UNDECIDED, WORDS, decision_word
from sparktriage.sweep.render import render_lines

SRC = Path(__file__).resolve().parents[2] / "src" / "sparktriage"


def test_every_state_of_the_file_has_one_distinct_word():
    assert set(WORDS) == set(STATES) == {"best", "tied", "insufficient"}
    assert len(set(WORDS.values()) | {UNDECIDED}) == len(STATES) + 1
    assert decision_word("best", 2) == "settled"
    assert decision_word("insufficient", 3) == "provisional"
    assert decision_word("insufficient", None) == UNDECIDED
    assert decision_word("something-else", 1) is None
    # the file's contract accepts these states and no word in their place
    part = {"depth": 2, "reason": "r", "candidates": [2]}
    for state in STATES:
        assert ContractDecision.model_validate({**part, "state": state}).state == state
    for word in WORDS.values():
        if word not in STATES:
            with pytest.raises(ValidationError):
                ContractDecision.model_validate({**part, "state": word})


def test_no_renderer_writes_a_state_word_of_its_own():
    words = "|".join(sorted(set(WORDS.values()) | {UNDECIDED}))
    own = re.compile(r"[\"'][^\"'\n]*\((?:" + words + r")\)")
    found = [f"{p.relative_to(SRC)}:{n}" for p in SRC.rglob("*.py")
             if p.name != "words.py"
             for n, line in enumerate(p.read_text(encoding="utf-8").splitlines(), 1)
             if own.search(line) and '"""' not in line and not line.lstrip().startswith("#")]
    assert found == []


def test_the_sweep_lines_name_the_decision_by_its_word():
    doc = {"method": "ngram", "depths_swept": [0, 2], "workload": "code", "launches_used": 2,
           "wall_s": 60.0, "launches": [], "depths": [],
           "decision": {"depth": 2, "state": "insufficient", "candidates": [0, 2],
                        "reason": "not separated"}}
    lines = render_lines(doc).text().splitlines()
    assert "decision: depth 2 (provisional), not separated from depth 0: not separated" in lines
