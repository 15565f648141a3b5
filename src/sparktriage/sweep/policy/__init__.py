"""The sweep's policy: over a typed `Situation` (`situation.py`: what the launches so far show a
rule), a `Policy` (`decide.py`) proposes the next depth and gives the decision; the black-box rule
(`allocate.py`) and the depth model's (`model_rule.py`) are the two policies, `rule.py` picks the
one that leads, `outlook.py` says what an undecided sweep would need, and `words.py` holds the one
word of each decision state that every renderer uses."""
