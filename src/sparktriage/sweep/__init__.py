"""Speculative-depth sweeps: the decision from per-launch delivered rates (docs/sweep.md).

Four parts, in the order a launch's data flows: `running/` launches and records, `evidence/`
derives what each launch showed, `model/` predicts every depth from that evidence, `policy/`
proposes the next launch and decides. `plan.py` is the declared plan they all read;
`assess.py` joins evidence, model and policy once per launch; `document.py` writes `sweep.json`
from that assessment and `render.py` draws it."""
