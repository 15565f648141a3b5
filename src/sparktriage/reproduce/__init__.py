"""`sparktriage reproduce`: from what a client sends to a launchable deployment, a lab plan and
the diff that matters (docs/reproduce.md).

Modules, one job each: `shell` (shell text as data), `importers/` (one per input kind),
`detect` (kind from content), `normalize` (inputs into one client deployment), `secrets`
(placeholders), `nodemap`, `labplan` (the launch planner's view), `capture` and `labfacts`
(the lab's environment), `diff` (with the why-table), `facts` and `traps` (rules-as-data in
rules/config/), `core` (the pipeline and the written files), `render` (the human summary).
"""

from sparktriage.reproduce.core import reproduce
from sparktriage.reproduce.model import ReproduceResult

__all__ = ["reproduce", "ReproduceResult"]
