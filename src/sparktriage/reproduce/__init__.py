"""`sparktriage reproduce`: from what a client sends to a launchable deployment, a lab plan and
the diff that matters (docs/reproduce.md).

One pipeline, its stages in folders: `read/` (each input once, bounded, its kind decided once),
`importers/` (one `Importer` protocol, one ordered registry), `bash/` (the one shell reader, no
vLLM knowledge), `meaning/` (which commands start the server, the wrappers around them),
`place/` (ranks, nodes, addresses and devices onto the lab), `check/` (the lab's side, the diff,
the traps), then the written files (`core`, `secrets`, `supply`, `render`). Beside them:
`model` (typed results), `normalize` (inputs into one client deployment), `vllm_options` and
`flags` (vLLM's option rules per release), `shell` (compose's command-string rule),
`clientcode` (what the inputs ask to run, never followed), `budget` (the expansion bound).
"""

from sparktriage.reproduce.core import reproduce
from sparktriage.reproduce.model import ReproduceResult

__all__ = ["reproduce", "ReproduceResult"]
