"""The depth-model section of bench_sweep.py: the rule with the model, the black-box rule, the
grid and the bound, on scenarios given as physics (sweep_physics.py). Each arm uses the engine's
own functions (sweep.policy.rule: next_depth, advance, decide; sweep.policy.allocate for the black
box) on the same simulated prompt (`SweepDraw`: one acceptance sample per depth) and, sweep i of
every arm, the same launch-noise seed. A decision is right when it names a depth within the 2%
margin of the best of that prompt's realized rates, wrong when it settles on another; `insufficient`
decides nothing."""

from __future__ import annotations

import random
import statistics
import sys
from pathlib import Path

sys.path.insert(0, str(Path(__file__).resolve().parents[1] / "src"))
sys.path.insert(0, str(Path(__file__).resolve().parent))

from sparktriage.stats.launch_bound import launch_bound  # noqa: E402
from sparktriage.sweep.policy import allocate, rule  # noqa: E402
from sparktriage.sweep.policy.allocate import MARGIN  # noqa: E402
from sparktriage.sweep.model.depth import ModelLaunch  # noqa: E402
from sweep_physics import (HOLDS, REUSE, SHAPE, WRONG, Physics, SweepDraw, as_ngram,  # noqa: E402
                           from_the_log)

ARMS = ("model", "model_one_stream", "adaptive", "grid")


def _verdict(decision, truth: dict[int, float]) -> str:
    if decision.state == "insufficient" or decision.depth is None:
        return "insufficient"
    return "right" if truth[decision.depth] >= (1 - MARGIN) * max(truth.values()) else "wrong"


def model_arm(draw: SweepDraw, rng: random.Random, cap: int, ratios: bool = True,
              pairs: bool = True):
    """The sweep's rule with the depth model (falling back to the black box when rejected);
    `pairs` False: without the launches' two-stream phase (the sweep before it had one)."""
    depths = list(draw.physics.depths)
    history: list[ModelLaunch] = []
    means: dict[int, list[float]] = {}
    model = None
    while len(history) < cap:
        where = rule.Situation(history, means, depths, SHAPE)
        depth = rule.next_depth(where, model if history else None)
        if depth is None:
            break
        value, counts = draw.launch(rng, depth)
        ratio = draw.ratio(rng, depth) if ratios else None
        pair = draw.pair(rng, depth) if pairs else None
        history.append(ModelLaunch(f"L{len(history) + 1:03d}", depth, value, counts, ratio, pair))
        means.setdefault(depth, []).append(value)
        model = rule.advance(model, history, rule.Situation(history, means, depths, SHAPE))
    decision = rule.decide(rule.Situation(history, means, depths, SHAPE), True, model)
    return decision, len(history), model.state if model is not None else "not-enough-data"


def one_stream_arm(draw: SweepDraw, rng: random.Random, cap: int):
    """The model without the two-stream phase: the slope from launch step times alone."""
    return model_arm(draw, rng, cap, pairs=False)


def adaptive_arm(draw: SweepDraw, rng: random.Random, cap: int):
    """The black-box rule alone (`--no-model`)."""
    means: dict[int, list[float]] = {}
    depths = list(draw.physics.depths)
    while sum(len(v) for v in means.values()) < cap:
        d = allocate.next_depth(means, depths, 1)
        if d is None:
            break
        means.setdefault(d, []).append(draw.launch(rng, d)[0])
    return allocate.decide(means), sum(len(v) for v in means.values()), None


def grid_arm(draw: SweepDraw, rng: random.Random, cap: int, per_depth: int = 3):
    means = {d: [draw.launch(rng, d)[0] for _ in range(per_depth)] for d in draw.physics.depths}
    return allocate.decide(means), per_depth * len(means), None


def run(name: str, physics: Physics, sweeps: int, seed: int, cap: int,
        arms: tuple[str, ...] = ARMS, first: int = 0) -> dict:
    """The `arms` over sweeps first .. first + sweeps − 1 of one scenario: rows (verdict,
    launches, model state). Sweep i's prompt and launch noise depend on the seed and i alone,
    so runs over consecutive ranges add up to one run over their union."""
    rows: dict[str, list[tuple]] = {arm: [] for arm in arms}
    fns = {"model": model_arm, "model_one_stream": one_stream_arm, "adaptive": adaptive_arm,
           "grid": grid_arm}
    for i in range(first, first + sweeps):
        draw = SweepDraw(physics, seed * 100003 + i)
        truth = draw.truth()
        for arm in arms:
            decision, launches, state = fns[arm](draw, random.Random(seed * 1000 + i), cap)
            rows[arm].append((_verdict(decision, truth), launches, state))
    return {"name": name, "rows": rows}


def bound(physics: Physics) -> dict:
    """The black-box bound of the scenario's expected rates (stats/launch_bound.py), spread
    unknown, never under one launch per depth."""
    truth = physics.truth()
    sds = {d: physics.launch_sd(d) for d in truth}
    found = launch_bound(truth, sds, MARGIN, unknown_scale=True)
    return {"spread_unknown": found.launches, "floor_with_one_launch_per_depth":
            max(found.launches, float(len(truth))), "good_depths": list(found.good)}


NGRAM = " · ngram drafts"
FROM_LOG = " · ngram, 30% no-match, counts from the log"


def no_match_from_log() -> list[tuple[str, Physics, bool]]:
    """The holding scenarios whose ngram drafter finds no match at 30% of steps (q = 0.70),
    their counts read from the log's SpecDecoding lines (no generated-token count): the
    sweep's evidence must take the steps from the stream's chunks to price those steps."""
    out = []
    for name, physics in HOLDS.items():
        ngram = as_ngram(physics)
        if ngram.match == 0.7:
            out.append((name + FROM_LOG, from_the_log(ngram), True))
    return out


def scenarios(only: str | None = None) -> list[tuple[str, Physics, bool]]:
    """Every scenario twice: with a drafter that drafts at every step (MTP, EAGLE: no plain step
    inside a launch) and with ngram drafts at 70% of steps (`as_ngram`: the same true rates,
    plain steps inside every launch, so the step-time ratios of sweep.evidence.steptimes can be
    measured).
    `only`: the scenarios whose name contains it ("reuse": issue 38's; "!reuse": the others).
    The counts-from-the-log scenarios (`no_match_from_log`) are listed only when `only` names
    them ("from the log"), so that every other run lists what it listed before them."""
    chain = ([(n, p, True) for n, p in HOLDS.items()] + [(n, p, False) for n, p in WRONG.items()]
             + [(n, p, True) for n, p in REUSE.items()])
    listed = chain + [(n + NGRAM + f" (q = {as_ngram(p).match:.2f})", as_ngram(p), holds)
                      for n, p, holds in chain]
    if only and only.startswith("!"):
        return [s for s in listed if only[1:] not in s[0]]
    if only and "from the log" in only:
        listed = listed + no_match_from_log()
    return [s for s in listed if not only or only in s[0]]


def states(rows: list[tuple]) -> dict[str, float]:
    n = len(rows)
    return {s: sum(1 for r in rows if r[2] == s) / n for s in ("used", "rejected", "not-enough-data")}


def mean_launches(rows: list[tuple]) -> float:
    return statistics.fmean(r[1] for r in rows)
