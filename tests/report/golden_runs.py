"""The three run directories whose reports are pinned as goldens (tests/report/goldens/).

All three are SYNTHETIC (sparktriage.testbed.synthetic_run, fixed seeds): nothing here was
measured, and no server is started.

- `demo`: shaped like `sparktriage demo`'s run directory: one local node, a protocol launch at
  depth 0 and a sweep launch at depth 2, probe healthy, no stall.
- `selfcheck`: shaped like `sparktriage selfcheck`'s: one launch against an endpoint the tool did
  not start (no deployment.yaml, no bundle, no log), every `/metrics` scrape a 404, so the
  reconciliation has nothing on the server's side.
- `eight_node`: an eight-node session with a classified stall, a five-depth sweep and a garbage
  verdict on the depth-4 launches.
"""

from __future__ import annotations

import json
import shutil
from pathlib import Path

from sparktriage.testbed.synthetic_run import SyntheticSpec, make_run


def _rewrite(path: Path, **fields) -> None:
    doc = json.loads(path.read_text(encoding="utf-8"))
    doc.update(fields)
    path.write_text(json.dumps(doc, indent=2) + "\n", encoding="utf-8")


def demo(root: Path) -> Path:
    return make_run(root, SyntheticSpec(depths=(0, 2), launches_per_depth=1, requests=5, warmup=1,
                                        max_tokens=48, nodes=1, stall_every=99))


def selfcheck(root: Path) -> Path:
    make_run(root, SyntheticSpec(depths=(0,), launches_per_depth=1, requests=5, warmup=1,
                                 max_tokens=48, nodes=1, stall_every=99))
    (root / "deployment.yaml").unlink()
    launch = root / "launches" / "L001"
    for name in ("logs.json", "stalls.json"):
        (launch / name).unlink()
    shutil.rmtree(launch / "bundle")
    _rewrite(launch / "reconcile.json", verdict="not_measured", reasons=[
        {"code": "not_measured", "text": "every /metrics scrape returned HTTP 404 and no server log was given"}])
    return root


GARBAGE_FAMILIES = [
    {"name": "logprob-sanity", "status": "ok", "numbers": {"finite": 1.0},
     "evidence": ["all logprobs finite and <= 0"]},
    {"name": "text-statistics", "status": "garbage", "numbers": {"non_ascii_share": 0.61, "distinct_bigrams": 0.97},
     "evidence": ["61% of generated characters outside the prompt's script"]},
    {"name": "known-answer", "status": "garbage", "numbers": {"passed": 2, "total": 24},
     "evidence": ["2/24 probes answered"]},
]


def eight_node(root: Path) -> Path:
    make_run(root, SyntheticSpec(depths=(0, 1, 2, 3, 4), launches_per_depth=2, requests=4, warmup=1,
                                 max_tokens=32, nodes=8, stall_every=3))
    sweep = json.loads((root / "sweep.json").read_text(encoding="utf-8"))
    for point in sweep["depths"]:
        if point["depth"] == 4:
            for launch in point["launches"]:
                _rewrite(root / "launches" / launch["label"] / "probe.json", verdict="garbage",
                         pattern="F4", families=GARBAGE_FAMILIES)
    return root


RUNS = {"demo": demo, "selfcheck": selfcheck, "eight_node": eight_node}
