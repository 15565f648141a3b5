"""Run directories for the report's consistency test: one launch, selfcheck with and without its
server log and metrics, and sessions whose sweep ends in each decision state, with and without
the depth model.

Every launch folder is SYNTHETIC (sparktriage.testbed.synthetic_run: raw request records and the
bench document the real bench code derives from them); a session's `sweep.json` is written by
the sweep's own code (sweep.document.build_document over the launch folders, which reads each
launch's rates from its bench.json), so the sweep and its launches agree as a real sweep's do.
A session's run directory has the layout `session run` writes: its protocol launch in
`launches/L001`, its sweep a run directory of its own in `sweep/` with launches S001, ...

No server is started: a run takes a few hundred milliseconds.
"""

from __future__ import annotations

import json
import math
import shutil
from dataclasses import dataclass
from pathlib import Path

from sparktriage.store.documents import write_document
from sparktriage.testbed.synthetic_run import SyntheticSpec, make_run

SMALL = dict(requests=4, warmup=1, max_tokens=32, nodes=1, stall_every=99)


@dataclass(frozen=True)
class Case:
    """One generated run: its name and how it is made."""

    name: str
    kind: str  # launch, selfcheck, session
    seed: int = 7
    depths: tuple[int, ...] = (0,)
    per_depth: int = 1
    rates: tuple[tuple[int, float], ...] = ()
    spread: float = 0.03
    log: bool = True
    metrics: bool = True
    model: str | None = None  # used, rejected: a depth-model entry made by the sweep's code
    nodes: int = 1
    legacy_labels: bool = False  # the sweep's launches L001, ... as sessions numbered them before
    hot_start: bool = False  # the log holds busy windows before the protocol (a probe's, say)


def _rewrite(path: Path, **fields) -> None:
    doc = json.loads(path.read_text(encoding="utf-8"))
    doc.update(fields)
    path.write_text(json.dumps(doc, indent=2) + "\n", encoding="utf-8")


def _hot_start(launch: Path) -> None:
    """Three stats windows at three times the protocol's rate before the protocol began: the
    whole log's mean and peak then differ from those of the windows overlapping the protocol."""
    path = launch / "logs.json"
    doc = json.loads(path.read_text(encoding="utf-8"))
    gen = doc["throughput"]["generation"]
    values = [w["generation"] for w in doc["throughput"]["windows"]]
    hot = [3.0 * max(values)] * 3
    first = doc["throughput"]["windows"][0]
    doc["throughput"]["windows"] = [{**first, "generation": v} for v in hot] + doc["throughput"]["windows"]
    everything = hot + values
    gen.update(windows=len(everything), mean=sum(everything) / len(everything),
               mean_active=sum(everything) / len(everything), peak=max(everything))
    path.write_text(json.dumps(doc, indent=2) + "\n", encoding="utf-8")


def _one_launch(root: Path, case: Case) -> Path:
    make_run(root, SyntheticSpec(depths=(0,), seed=case.seed, **{**SMALL, "nodes": case.nodes}))
    if case.hot_start:
        _hot_start(root / "launches" / "L001")
    return root


def _selfcheck(root: Path, case: Case) -> Path:
    make_run(root, SyntheticSpec(depths=(0,), seed=case.seed, workloads=("code",), **SMALL))
    (root / "deployment.yaml").unlink()
    launch = root / "launches" / "L001"
    (launch / "stalls.json").unlink()
    shutil.rmtree(launch / "bundle")
    if not case.log:
        (launch / "logs.json").unlink()
    elif case.hot_start:
        _hot_start(launch)
    reconcile = launch / "reconcile.json"
    if not case.log and not case.metrics:
        _rewrite(reconcile, verdict="not_measured", reasons=[
            {"code": "not_measured",
             "text": "every /metrics scrape returned HTTP 404 and no server log was given"}])
    else:
        doc = json.loads(reconcile.read_text(encoding="utf-8"))
        doc["inputs"] = {**doc.get("inputs", {}), "metrics": case.metrics,
                         "logs": doc.get("inputs", {}).get("logs", []) if case.log else []}
        reconcile.write_text(json.dumps(doc, indent=2) + "\n", encoding="utf-8")
    return root


def _session(root: Path, case: Case) -> Path:
    """A session: protocol launch L001 at depth 0, the sweep's launches S001, ... in sweep/."""
    make_run(root, SyntheticSpec(depths=(0,), seed=case.seed, **SMALL))
    staging = root.parent / f".{root.name}-sweep"
    make_run(staging, SyntheticSpec(depths=case.depths, launches_per_depth=case.per_depth,
                                    seed=case.seed + 1, workloads=("code",), rates=case.rates,
                                    spread=case.spread, **SMALL))
    sweep = root / "sweep"
    (sweep / "launches").mkdir(parents=True)
    shutil.copy(staging / "run.json", sweep / "run.json")
    records = []
    for folder in sorted((staging / "launches").iterdir()):
        label = folder.name if case.legacy_labels else "S" + folder.name[1:]
        shutil.move(str(folder), sweep / "launches" / label)
        depth = case.depths[(int(folder.name[1:]) - 1) // case.per_depth]
        records.append({"label": label, "depth": depth, "why": "synthetic", "attempt": 1,
                        "wall_s": 300.0, "ready_s": 95.0, "outcome": "completed"})
    shutil.rmtree(staging)
    doc = _sweep_document(root, sweep, case, records)
    write_document(sweep / "sweep.json", doc)
    write_document(root / "sweep.json", doc)
    return root


def _sweep_document(root: Path, sweep: Path, case: Case, records: list[dict]) -> dict:
    from sparktriage.sweep.document import build_document
    from sparktriage.sweep.plan import SweepPlan
    from sparktriage.sweep.running.state import SweepState

    plan = SweepPlan(deployment_path=str(root / "deployment.yaml"), depths_requested=case.depths,
                     depths=case.depths, method="ngram", max_launches=len(records), pairs=0,
                     model=case.model is not None)
    doc = build_document(plan, SweepState(sweep, plan, records), sweep, "launch budget spent")
    if case.model:
        doc["model"] = _model(case, doc)  # beside the black-box rule's decision, not deciding
    return doc


def _model(case: Case, doc: dict) -> dict:
    """A depth-model entry computed by the sweep's code (sweep.model.depth.build, model_entry) from
    launches shaped like the sweep's, with step ratios measured inside them."""
    from sparktriage.sweep.evidence.counts import Counts
    from sparktriage.sweep.model.depth import ModelLaunch, build
    from sparktriage.sweep.model.entry import model_entry
    from sparktriage.sweep.model.stepfit import StepShape
    from sparktriage.sweep.evidence.steptimes import StepRatio

    shape = StepShape("expert-union", 384, 8, 0.0, "kimi-k2")
    slope, q, launches = 0.3, 0.7, []
    for i, launch in enumerate(doc["launches"]):
        d = launch["depth"]
        rates = (0.8, 0.6, 0.3, 0.1)[:d]
        per = tuple(4000.0 * r for r in rates)
        counts = Counts(d, 4000.0, 4000.0 * d, sum(per), per, 4000.0 / q + sum(per)) if d else None
        verify = 1 + slope * shape.g(d)
        ratio = StepRatio(d, math.log(verify) + 0.005 * (-1) ** i, 0.02) if d else None
        launches.append(ModelLaunch(launch["label"], d, launch["delivered_tok_s"], counts, ratio, None))
    model = build(launches, tuple(sorted({l.depth for l in launches})), shape)
    entry = model_entry(model, doc["decision"], True)
    if case.model == "rejected":
        entry.update(state="rejected", decided=False,
                     reason="the step time jumps: a free factor on jump from depth 2 (×1.40)",
                     summary="The depth model was rejected (the step time jumps); the black-box "
                             "rule decided over every launch made.")
    return entry


MAKERS = {"launch": _one_launch, "selfcheck": _selfcheck, "session": _session}


def make(root: Path, case: Case) -> Path:
    return MAKERS[case.kind](root, case)


# depth 0 about 28 tok/s; each state reached by the rates and the launches behind them
CLEAR = ((0, 26.0), (2, 36.0))
TIED = ((0, 30.0), (2, 30.1))
CLOSE = ((0, 30.0), (2, 31.5))

CASES = (
    [Case(f"launch-{s}", "launch", seed=s, nodes=n, hot_start=h)
     for s, n, h in ((1, 1, False), (2, 2, False), (3, 1, True), (4, 4, True))]
    + [Case(f"selfcheck-log{int(l)}-metrics{int(m)}-{s}", "selfcheck", seed=s, log=l, metrics=m,
            hot_start=s == 6) for s in (5, 6) for l in (True, False) for m in (True, False)]
    + [Case(f"best-{s}", "session", seed=s, depths=(0, 2), per_depth=3, rates=CLEAR, spread=0.01)
       for s in (11, 12, 13)]
    + [Case(f"best-three-depths-{s}", "session", seed=s, depths=(0, 1, 2), per_depth=3,
            rates=((0, 26.0), (1, 30.0), (2, 36.0)), spread=0.01) for s in (14, 15)]
    + [Case(f"tied-{s}", "session", seed=s, depths=(0, 2), per_depth=4, rates=TIED, spread=0.002)
       for s in (21, 22, 23)]
    + [Case(f"insufficient-{s}", "session", seed=s, depths=(0, 2), per_depth=1, rates=CLOSE)
       for s in (31, 32, 33)]
    + [Case(f"insufficient-spread-{s}", "session", seed=s, depths=(0, 2, 4), per_depth=2,
            rates=CLOSE + ((4, 30.5),), spread=0.06) for s in (34, 35)]
    + [Case(f"demo-{s}", "session", seed=s, depths=(0, 2), per_depth=1) for s in (41, 42)]
    + [Case(f"demo-old-labels-{s}", "session", seed=s, depths=(0, 2), per_depth=1,
            legacy_labels=True) for s in (43,)]
    # rates on the model's own curve (acceptance 0.8, 0.6 at a draft share of 0.7, slope 0.3)
    + [Case(f"model-used-{s}", "session", seed=s, depths=(0, 1, 2), per_depth=2,
            rates=((0, 30.0), (1, 38.82), (2, 42.22)), spread=0.005, model="used")
       for s in (51, 52)]
    + [Case(f"model-rejected-{s}", "session", seed=s, depths=(0, 1, 2), per_depth=2,
            rates=((0, 30.0), (1, 33.0), (2, 34.0)), spread=0.01, model="rejected") for s in (53,)]
)
