"""The depth model: the delivered rate at every depth from acceptance counts and a fitted step
cost (`depth.py`), its parts (`acceptance_model.py`, `stepfit.py`, `ratiofit.py`), the checks
that reject it (`fitchecks.py`) and the sentence that says why (`rejection.py`), and its part of
`sweep.json` (`entry.py`). It predicts; it does not decide (sweep.policy does)."""
