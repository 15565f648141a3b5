"""Adaptive launch allocation vs the fixed grid of 3 launches per depth (docs/benchmarks.md).

Simulated sweeps with the seed's spread: a launch mean of depth d is μ_d·(1 + ε), ε ~ N(0, cv²)
with cv = 6.5% (the seed: four launches 25.9-28.4 tok/s and a relaunch at 23.4, sd about 1.7 on
26.4), plus the mean of 15 requests with a within-launch sd of 1.5 tok/s. Both strategies use the
engine's own functions (sweep.policy.allocate.next_depth / decide) on the same scenarios, in the
same run, with the same seeds. The adaptive sweep runs until its decision is settled (95%
separation, or tied within 2%) or a cap of --cap launches; the fixed grid runs 3 launches per
depth and is decided with the same rule. A decision is right when it names a depth whose true
rate is within the 2% margin of the best (any of a true tie is right), wrong when it settles on
another; "insufficient" reaches no decision. Lab time per launch: 2 min 45 s cold start (the
seed) + the protocol (1 warm-up + 15 requests × 256 tokens at the depth's rate) + the gate's
64 greedy tokens. A fourth arm, not a strategy a lab can run: the same adaptive rule told the
true spread of a launch mean (no estimate, normal tails, no df floor). Two arms read the goal as
a fixed budget: the grid picking its highest mean (as labs use a grid) and the adaptive rule
stopped at half the grid's launches, its settled or provisional depth taken as its pick; beside
them, the best fixed allocation of 8 launches (one per depth at least) chosen knowing the true
rates, picking its highest mean (numpy, 40000 draws per allocation).
Per scenario, the lower bound on the launches of *any* rule that names a wrong depth in at most
5% of sweeps whatever the truth, told the spread or not (stats/launch_bound.py, docs/sweep.md
"What no rule can do").

The depth-model section (benchmarks/sweep_model_arms.py, docs/benchmarks.md): the same 95% rule
with the depth model (sweep.policy.rule) beside the black-box rule, the grid and the bound, on the
six scenarios given as physics (acceptance per position, a step cost with the Kimi K2 expert union)
and on scenarios where the model is wrong on purpose (a kernel-path jump, a graph-capture bucket,
a slow path at one width, a drafter that depends on k, short ngram drafts).

    .venv/bin/python benchmarks/bench_sweep.py --sweeps 1000   # writes benchmarks/results/sweep.json
    .venv/bin/python benchmarks/bench_sweep.py --sweeps 1000 --section model --jobs 2

Issue 38 added scenarios with routing reuse 0.15, 0.3 and 0.5 and a batched step
(sweep_physics.REUSE; `goal_reuse`), and `--only TEXT` (scenarios whose name contains it; `!TEXT`
those without), `--arms model,...` and `--first N` (sweeps N .. N + sweeps − 1: runs over
consecutive ranges merge with merge_sweep_chunks.py, e.g. on a loaded machine):

    .venv/bin/python benchmarks/bench_sweep.py --section model --only reuse --arms model \
        --sweeps 250 --first 0 --out /tmp/reuse_0.json
"""

from __future__ import annotations

import argparse
import itertools
import json
import math
import multiprocessing
import os
import platform
import random
import statistics
import sys
import time
from pathlib import Path

import numpy as np

sys.path.insert(0, str(Path(__file__).resolve().parents[1] / "src"))
sys.path.insert(0, str(Path(__file__).resolve().parent))

import sparktriage.sweep.policy.allocate as allocate  # noqa: E402
import sweep_model_arms as arms  # noqa: E402
from sparktriage.stats.launch_bound import launch_bound  # noqa: E402
from sparktriage.sweep.policy.allocate import MARGIN, decide, next_depth  # noqa: E402

CV = 0.065
WITHIN_SD = 1.5
REQUESTS = 15
TOKENS = 256
COLD_START_S = 165.0
GATE_TOKENS = 64

SCENARIOS = {
    "depth 2 clearly best (+25%)": {0: 26.4, 1: 28.0, 2: 33.0, 3: 27.0, 4: 24.0},
    "depth 2 best, depth 4 slower than none": {0: 26.4, 1: 29.0, 2: 31.7, 3: 30.0, 4: 25.0},
    "speculation loses at every depth": {0: 26.4, 1: 24.0, 2: 22.0, 3: 20.5, 4: 18.5},
    "monotone gain, 9% between depths 3 and 4": {0: 26.4, 1: 35.0, 2: 41.0, 3: 46.0, 4: 50.0},
    "a true tie at the top (1 and 2 within 1%)": {0: 26.4, 1: 30.0, 2: 30.3, 3: 28.0, 4: 25.0},
    # the field's only full single-stream k-curve on GB10 (field-reports L-S2, MTP k = 0..4)
    "field k-curve L-S2 (11% between 3 and 4)": {0: 25.9, 1: 43.4, 2: 52.6, 3: 59.1, 4: 65.8},
}


def launch_mean(rng: random.Random, mu: float) -> float:
    return mu * (1 + rng.gauss(0, CV)) + rng.gauss(0, WITHIN_SD / math.sqrt(REQUESTS))


def lab_seconds(mu: float) -> float:
    return COLD_START_S + ((REQUESTS + 1) * TOKENS + GATE_TOKENS) / mu


def picked(decision, true: dict[int, float]) -> str:
    """A fixed-budget arm's verdict: its depth, settled or provisional, is its pick."""
    best = max(true.values())
    return "right" if true[decision.depth] >= (1 - MARGIN) * best else "wrong"


def verdict(decision, true: dict[int, float]) -> str:
    return "insufficient" if decision.state == "insufficient" else picked(decision, true)


def launch_sd(mu: float) -> float:
    """The exact sd of one simulated launch mean at true rate mu (launch_mean's two terms)."""
    return math.hypot(CV * mu, WITHIN_SD / math.sqrt(REQUESTS))


def adaptive(rng: random.Random, true: dict[int, float], cap: int):
    means: dict[int, list[float]] = {}
    seconds = 0.0
    while sum(len(v) for v in means.values()) < cap:
        d = next_depth(means, list(true), 1)
        if d is None:
            break
        means.setdefault(d, []).append(launch_mean(rng, true[d]))
        seconds += lab_seconds(true[d])
    return decide(means), sum(len(v) for v in means.values()), seconds


def known_spread(true: dict[int, float]) -> float:
    """The relative sd of a launch mean, known exactly: the launch spread and the request noise
    of a 15-request mean (at the scenario's mean rate)."""
    mu = statistics.fmean(true.values())
    return math.hypot(CV, WITHIN_SD / math.sqrt(REQUESTS) / mu)


def adaptive_oracle(rng: random.Random, true: dict[int, float], cap: int):
    """The adaptive rule told the true spread (no estimate, normal tails, no df floor): not a
    strategy a lab can run, but a floor under what any rule of this kind can reach."""
    saved, spread = allocate.pooled_cv, known_spread(true)
    allocate.pooled_cv = lambda means, prior_df=None: (spread, math.inf)
    try:
        return adaptive(rng, true, cap)
    finally:
        allocate.pooled_cv = saved


def grid(rng: random.Random, true: dict[int, float], per_depth: int = 3, rule=decide):
    """3 launches per depth, then `rule` over the launch means (the sweep's decision, or
    `highest_mean` as labs use a grid; the same draws for the same seed)."""
    means = {d: [launch_mean(rng, mu) for _ in range(per_depth)] for d, mu in true.items()}
    return rule(means), per_depth * len(true), sum(per_depth * lab_seconds(mu) for mu in true.values())


def highest_mean(means: dict[int, list[float]]):
    best = max(means, key=lambda d: (statistics.fmean(means[d]), -d))
    return allocate.Decision("best", best, (best,), "highest mean", True)


def grid_rounds(rng: random.Random, true: dict[int, float], cap: int):
    """The non-adaptive grid run to the same stopping rule: one launch on every depth per
    round, until the decision is settled or the cap is reached."""
    means: dict[int, list[float]] = {d: [] for d in true}
    seconds = 0.0
    decision = None
    while sum(len(v) for v in means.values()) + len(true) <= cap:
        for d, mu in true.items():
            means[d].append(launch_mean(rng, mu))
            seconds += lab_seconds(mu)
        decision = decide(means)
        if decision.state != "insufficient":
            break
    return decision, sum(len(v) for v in means.values()), seconds


def wilson(k: int, n: int, z: float = 1.959964) -> list[float] | None:
    """95% Wilson score interval of a binomial proportion k/n."""
    if n == 0:
        return None
    p = k / n
    centre = (p + z * z / (2 * n)) / (1 + z * z / n)
    half = z * math.sqrt(p * (1 - p) / n + z * z / (4 * n * n)) / (1 + z * z / n)
    return [max(0.0, centre - half), min(1.0, centre + half)]


def summarise(rows: list[tuple]) -> dict:
    n = len(rows)
    counts = {k: sum(1 for r in rows if r[0] == k) for k in ("right", "wrong", "insufficient")}
    decided = [r for r in rows if r[0] != "insufficient"]
    right = [r for r in rows if r[0] == "right"]
    launches = sum(r[1] for r in rows)
    return {
        "sweeps": n, "counts": counts,
        "right_rate": counts["right"] / n, "right_rate_ci95": wilson(counts["right"], n),
        "error_rate": counts["wrong"] / n, "error_rate_ci95": wilson(counts["wrong"], n),
        "error_rate_among_decided": counts["wrong"] / len(decided) if decided else None,
        "error_rate_among_decided_ci95": wilson(counts["wrong"], len(decided)),
        "insufficient_rate": counts["insufficient"] / n,
        "launches_mean": statistics.fmean(r[1] for r in rows),
        "launches_median": statistics.median(r[1] for r in rows),
        "launches_mean_when_right": statistics.fmean(r[1] for r in right) if right else None,
        "launches_per_right_decision": launches / len(right) if right else None,
        "lab_minutes_mean": statistics.fmean(r[2] for r in rows) / 60,
        "lab_minutes_mean_when_right": statistics.fmean(r[2] for r in right) / 60 if right else None,
        "lab_minutes_per_right_decision": sum(r[2] for r in rows) / 60 / len(right) if right else None,
    }


def _pct(ci: list[float] | None) -> str:
    return "-" if ci is None else f"[{ci[0]:.1%}, {ci[1]:.1%}]"


def bounds(true: dict[int, float], abstain: float) -> dict:
    """What no rule can do on this scenario (docs/sweep.md): the launch lower bound of a rule that
    names a wrong depth in at most 5% of sweeps whatever the truth, told the spread or not (a lab
    is not), when it always settles and when it leaves the adaptive rule's share of sweeps
    undecided; with one launch per depth, never under the number of depths."""
    sds = {d: launch_sd(mu) for d, mu in true.items()}
    known = launch_bound(true, sds, MARGIN)
    unknown = launch_bound(true, sds, MARGIN, unknown_scale=True)
    leaves = launch_bound(true, sds, MARGIN, abstain=abstain, unknown_scale=True)
    floor = max(unknown.launches, float(len(true)))
    return {"spread_known": known.launches, "spread_unknown": unknown.launches,
            "spread_unknown_at_adaptive_undecided_rate": leaves.launches,
            "floor_with_one_launch_per_depth": floor, "answer": unknown.answer,
            "good_depths": list(unknown.good),
            "shares": {str(k): round(v, 4) for k, v in unknown.shares.items()},
            "half_grid_possible": floor <= HALF_GRID}


def best_fixed_allocation(true: dict[int, float], launches: int, seed: int,
                          draws: int = 40000) -> dict:
    """The fixed allocation of `launches` (at least one per depth) whose highest mean is wrong
    least often, searched over every allocation knowing the true rates: what a fixed budget of
    that size can do at best when nothing has to be learnt about where to spend it."""
    depths = sorted(true)
    mu = np.array([true[d] for d in depths])
    rng = np.random.default_rng(seed)
    noise = WITHIN_SD / math.sqrt(REQUESTS)
    best: tuple[float, list[int]] | None = None
    for cut in itertools.combinations(range(1, launches), len(depths) - 1):
        alloc = [b - a for a, b in zip((0,) + cut, cut + (launches,))]
        means = np.stack([(m * (1 + rng.normal(0, CV, (draws, n)))
                           + rng.normal(0, noise, (draws, n))).mean(axis=1)
                          for m, n in zip(mu, alloc)], axis=1)
        error = float(np.mean(mu[np.argmax(means, axis=1)] < (1 - MARGIN) * mu.max()))
        if best is None or error < best[0]:
            best = (error, alloc)
    return {"launches": launches, "error_rate": best[0],
            "allocation": {str(d): n for d, n in zip(depths, best[1])}, "draws": draws}


ARMS = {  # arm -> its key in the JSON
    "adaptive": "adaptive", "grid": "grid_3_per_depth", "rounds": "grid_rounds_to_decision",
    "oracle": "adaptive_spread_known", "grid_argmax": "grid_3_per_depth_highest_mean",
    "half_budget": "adaptive_half_grid_budget"}
HALF_GRID = 7.5


def run_scenario(true: dict[int, float], sweeps: int, seed: int,
                 cap: int) -> dict[str, list[tuple]]:
    """Every arm over `sweeps` simulated sweeps, sweep i of every arm drawn from seed i."""
    rows: dict[str, list[tuple]] = {k: [] for k in ARMS}
    half = len(true) * 3 // 2
    for i in range(sweeps):
        for kind, run, judge in (("adaptive", lambda r: adaptive(r, true, cap), verdict),
                                 ("grid", lambda r: grid(r, true), verdict),
                                 ("rounds", lambda r: grid_rounds(r, true, cap), verdict),
                                 ("oracle", lambda r: adaptive_oracle(r, true, cap), verdict),
                                 ("grid_argmax", lambda r: grid(r, true, rule=highest_mean), picked),
                                 ("half_budget", lambda r: adaptive(r, true, half), picked)):
            decision, launches, seconds = run(random.Random(seed * 1000 + i))
            rows[kind].append((judge(decision, true), launches, seconds))
    return rows


def _ratio(a: float | None, b: float | None) -> float | None:
    return a / b if a and b else None


def scenario_entry(name: str, true: dict[int, float], rows: dict[str, list[tuple]],
                   seed: int) -> dict:
    arms = {ARMS[k]: summarise(rows[k]) for k in ARMS}
    a, g, r = arms["adaptive"], arms["grid_3_per_depth"], arms["grid_rounds_to_decision"]
    return {"scenario": name, "true_tok_s": {str(k): v for k, v in true.items()}, **arms,
            "lower_bound": bounds(true, a["insufficient_rate"]),
            "best_fixed_allocation_half_grid": best_fixed_allocation(true, math.ceil(HALF_GRID), seed),
            "launch_ratio_adaptive_to_grid": a["launches_mean"] / g["launches_mean"],
            "launch_ratio_adaptive_to_grid_rounds": a["launches_mean"] / r["launches_mean"],
            "launches_per_right_ratio_adaptive_to_grid":
                _ratio(a["launches_per_right_decision"], g["launches_per_right_decision"])}


def scenario_line(e: dict) -> str:
    a, g, r = e["adaptive"], e["grid_3_per_depth"], e["grid_rounds_to_decision"]
    o, ga = e["adaptive_spread_known"], e["grid_3_per_depth_highest_mean"]
    h, fixed, bound = e["adaptive_half_grid_budget"], e["best_fixed_allocation_half_grid"], e["lower_bound"]

    def arm(x: dict) -> str:
        return (f"right {x['right_rate']:.1%}, wrong {x['error_rate']:.1%} "
                f"{_pct(x['error_rate_ci95'])}, none {x['insufficient_rate']:.1%}")

    return (f"{e['scenario']}: adaptive {a['launches_mean']:.1f} launches "
            f"({a['lab_minutes_mean']:.0f} min), {arm(a)} | grid {g['launches_mean']:.0f} launches "
            f"({g['lab_minutes_mean']:.0f} min), {arm(g)} | grid rounds {r['launches_mean']:.1f} "
            f"launches, {arm(r)} | spread known {o['launches_mean']:.1f} launches, {arm(o)} | "
            f"grid's highest mean wrong {ga['error_rate']:.1%}, adaptive stopped at "
            f"{h['launches_mean']:.0f} launches wrong {h['error_rate']:.1%}, best fixed "
            f"{fixed['launches']} told the truth wrong {fixed['error_rate']:.1%} | any 95% rule needs "
            f">= {bound['floor_with_one_launch_per_depth']:.1f} launches "
            f"({bound['spread_known']:.1f} if told the spread)")


def goal_section(results: list[dict], over: dict, overall: dict) -> dict:
    """The issue's goal (half the grid's launches or fewer, the error rate not worse: the adaptive
    error interval's low end not above the grid's high end), and what no rule can do."""
    ratio = overall["adaptive"] / overall["grid_3_per_depth"]
    a_err, g_err = over["adaptive"]["error_rate_ci95"], over["grid_3_per_depth"]["error_rate_ci95"]
    floor = statistics.fmean(r["lower_bound"]["floor_with_one_launch_per_depth"] for r in results)
    told = statistics.fmean(max(r["lower_bound"]["spread_known"], float(len(r["true_tok_s"])))
                            for r in results)
    argmax, half = over["grid_3_per_depth_highest_mean"], over["adaptive_half_grid_budget"]
    return {"launch_ratio_max": 0.5, "launch_ratio": ratio,
            "error_rate_not_worse": a_err[0] <= g_err[1],
            "met": ratio <= 0.5 and a_err[0] <= g_err[1],
            "any_95pct_rule_launches_at_least_mean": floor,
            "any_95pct_rule_ratio_to_grid_at_least": floor / overall["grid_3_per_depth"],
            "any_95pct_rule_told_the_spread_launches_at_least_mean": told,
            "scenarios_where_half_the_grid_is_possible":
                [r["scenario"] for r in results if r["lower_bound"]["half_grid_possible"]],
            "fixed_budget": {
                "grid_highest_mean_error_rate": argmax["error_rate"],
                "grid_highest_mean_error_rate_ci95": argmax["error_rate_ci95"],
                "half_budget_error_rate": half["error_rate"],
                "half_budget_error_rate_ci95": half["error_rate_ci95"],
                "half_budget_error_not_worse":
                    half["error_rate_ci95"][0] <= argmax["error_rate_ci95"][1],
                "best_fixed_allocation_told_the_truth_error_rate_mean": statistics.fmean(
                    r["best_fixed_allocation_half_grid"]["error_rate"] for r in results),
                "grid_highest_mean_error_rate_mean": statistics.fmean(
                    r["grid_3_per_depth_highest_mean"]["error_rate"] for r in results)}}


def _arm_summary(rows: list[tuple]) -> dict:
    n = len(rows)
    counts = {k: sum(1 for r in rows if r[0] == k) for k in ("right", "wrong", "insufficient")}
    return {"sweeps": n, "counts": counts, "right_rate": counts["right"] / n,
            "error_rate": counts["wrong"] / n, "error_rate_ci95": wilson(counts["wrong"], n),
            "insufficient_rate": counts["insufficient"] / n,
            "launches_mean": statistics.fmean(r[1] for r in rows),
            "launches_median": statistics.median(r[1] for r in rows)}


def _model_job(job: tuple) -> dict:
    name, physics, sweeps, seed, cap, which, first = job
    return arms.run(name, physics, sweeps, seed, cap, which, first)


def model_section(sweeps: int, seed: int, cap: int, jobs: int, only: str | None = None,
                  which: tuple[str, ...] = arms.ARMS, first: int = 0) -> dict:
    """The depth model beside the black-box rule, the grid and the bound (module doc);
    `which` arms only, over sweeps first .. first + sweeps − 1 (`rows` kept in the entries
    of a partial run, so that runs over consecutive ranges can be merged)."""
    listed = arms.scenarios(only)
    work = [(name, physics, sweeps, seed, cap, which, first) for name, physics, _ in listed]
    if jobs > 1:
        with multiprocessing.get_context("fork").Pool(jobs) as pool:
            done = pool.map(_model_job, work, chunksize=1)
    else:
        done = [_model_job(w) for w in work]
    entries = []
    for (name, physics, holds), result in zip(listed, done):
        rows = result["rows"]
        floor = arms.bound(physics)
        entry = {"scenario": name, "model_holds": holds,
                 "drafter": "ngram" if physics.match < 1.0 else "every step",
                 "drafted_share": physics.match,
                 "true_tok_s": {str(k): round(v, 3) for k, v in physics.truth().items()},
                 **{arm: _arm_summary(rows[arm]) for arm in which},
                 "model_states": arms.states(rows["model"]), "bound": floor}
        if which != arms.ARMS:
            entry["rows"] = {arm: rows[arm] for arm in which}
            entry["sweeps_from"] = first
        entry["launch_ratio_model_to_bound"] = (entry["model"]["launches_mean"]
                                                / floor["floor_with_one_launch_per_depth"])
        entries.append(entry)
        m = entry["model"]
        line = (f"[model] {name}: model {m['launches_mean']:.1f} launches, wrong "
                f"{m['error_rate']:.1%} {_pct(m['error_rate_ci95'])}, none "
                f"{m['insufficient_rate']:.1%}, rejected {entry['model_states']['rejected']:.0%}")
        if which == arms.ARMS:
            a, o = entry["adaptive"], entry["model_one_stream"]
            entry["launch_ratio_model_to_adaptive"] = m["launches_mean"] / a["launches_mean"]
            entry["launch_ratio_model_to_one_stream"] = m["launches_mean"] / o["launches_mean"]
            line += (f" | one stream {o['launches_mean']:.1f}, wrong {o['error_rate']:.1%} | "
                     f"black box {a['launches_mean']:.1f}, wrong {a['error_rate']:.1%} | grid "
                     f"wrong {entry['grid']['error_rate']:.1%} | bound "
                     f"{floor['floor_with_one_launch_per_depth']:.1f}")
        print(line, flush=True)
    logged = [e for e in entries if arms.FROM_LOG in e["scenario"]]
    entries_before = [e for e in entries if arms.FROM_LOG not in e["scenario"]]
    chain = [e for e in entries_before if arms.NGRAM not in e["scenario"] and not _reuse(e)]
    ngram = [e for e in entries_before if arms.NGRAM in e["scenario"] and not _reuse(e)]
    reuse = [e for e in entries_before if _reuse(e)]
    if which != arms.ARMS:
        return {"scenarios": entries, "arms": list(which), "goal_reuse": _reuse_goal(reuse),
                "goal_no_match_from_log": _reuse_goal(logged)}
    return {"scenarios": entries, "goal": _model_goal(chain), "goal_ngram": _model_goal(ngram),
            "goal_all": _model_goal([e for e in entries_before if not _reuse(e)]),
            "goal_reuse": _reuse_goal(reuse), "goal_no_match_from_log": _reuse_goal(logged)}


def _reuse(entry: dict) -> bool:
    return entry["scenario"].startswith("routing reuse")


def _reuse_goal(entries: list[dict]) -> dict | None:
    """At most 9 launches on average, at most 5% wrong in each: issue 38's goal on the
    routing-reuse and batched-step scenarios, and the goal on ngram's no-match steps with
    counts from the log."""
    if not entries:
        return None
    mean = statistics.fmean(e["model"]["launches_mean"] for e in entries)
    worst = max(e["model"]["error_rate"] for e in entries)
    return {"scenarios": len(entries), "model_launches_mean": mean, "max_error_rate": worst,
            "model_rejected_mean": statistics.fmean(e["model_states"]["rejected"] for e in entries),
            "met": mean <= 9.0 and worst <= 0.05}


def _model_goal(entries: list[dict]) -> dict:
    """The issue's goal over some scenarios: at most half the bound's launches where the model
    holds with at most 5% wrong in each, at most 5% wrong where it does not."""
    holds = [e for e in entries if e["model_holds"]]
    wrong = [e for e in entries if not e["model_holds"]]
    if not holds or not wrong:
        return None
    mean = lambda xs: statistics.fmean(xs)  # noqa: E731
    model_mean = mean(e["model"]["launches_mean"] for e in holds)
    bound_mean = mean(e["bound"]["floor_with_one_launch_per_depth"] for e in holds)
    goal = {"holds_model_launches_mean": model_mean, "holds_bound_mean": bound_mean,
            "holds_adaptive_launches_mean": mean(e["adaptive"]["launches_mean"] for e in holds),
            "holds_one_stream_launches_mean": mean(e["model_one_stream"]["launches_mean"]
                                                   for e in holds),
            "wrong_one_stream_max_error_rate": max(e["model_one_stream"]["error_rate"]
                                                   for e in wrong),
            "holds_ratio_to_bound": model_mean / bound_mean,
            "holds_ratio_to_the_black_box_table_bound_15": model_mean / 15.0,
            "holds_max_error_rate": max(e["model"]["error_rate"] for e in holds),
            "wrong_max_error_rate": max(e["model"]["error_rate"] for e in wrong),
            "wrong_launches_mean": mean(e["model"]["launches_mean"] for e in wrong)}
    goal["met_holds"] = goal["holds_ratio_to_bound"] <= 0.5 and goal["holds_max_error_rate"] <= 0.05
    goal["met_wrong"] = goal["wrong_max_error_rate"] <= 0.05
    goal["scenarios_over_5_percent_wrong"] = [e["scenario"] for e in entries
                                              if e["model"]["error_rate"] > 0.05]
    return goal


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--sweeps", type=int, default=400, help="simulated sweeps per scenario")
    parser.add_argument("--cap", type=int, default=40, help="launch cap of the adaptive sweep")
    parser.add_argument("--seed", type=int, default=20261201)
    parser.add_argument("--section", choices=("all", "black-box", "model"), default="all",
                        help="the black-box arms, the depth-model arms, or both")
    parser.add_argument("--jobs", type=int, default=1, help="processes for the depth-model arms")
    parser.add_argument("--only", default=None,
                        help="depth-model scenarios whose name contains this ('!x': without x)")
    parser.add_argument("--arms", default=",".join(arms.ARMS),
                        help="depth-model arms to run, comma-separated (model first)")
    parser.add_argument("--first", type=int, default=0,
                        help="index of the first sweep (runs over consecutive ranges merge)")
    parser.add_argument("--out", type=Path, default=Path(__file__).parent / "results" / "sweep.json")
    args = parser.parse_args()
    started = time.time()
    previous = json.loads(args.out.read_text()) if args.out.is_file() else {}
    if args.section == "model":
        which = tuple(a for a in args.arms.split(",") if a)
        document = {**previous, "depth_model": model_section(args.sweeps, args.seed, args.cap, args.jobs,
                                                              args.only, which, args.first),
                    "depth_model_settings": {"sweeps_per_scenario": args.sweeps, "cap": args.cap,
                                             "seed": args.seed, "only": args.only,
                                             "arms": list(which), "first_sweep": args.first,
                                             "seconds": round(time.time() - started, 1)}}
        args.out.parent.mkdir(parents=True, exist_ok=True)
        args.out.write_text(json.dumps(document, indent=2) + "\n")
        model = document["depth_model"]
        print(f"wrote {args.out}: every-step drafters {json.dumps(model.get('goal'))}; ngram "
              f"{json.dumps(model.get('goal_ngram'))}; reuse {json.dumps(model['goal_reuse'])}; "
              f"no-match from the log {json.dumps(model.get('goal_no_match_from_log'))}")
        return
    results = []
    pooled: dict[str, list[tuple]] = {k: [] for k in ARMS}
    for name, true in SCENARIOS.items():
        rows = run_scenario(true, args.sweeps, args.seed, args.cap)
        for kind in rows:
            pooled[kind] += rows[kind]
        results.append(scenario_entry(name, true, rows, args.seed))
        print(scenario_line(results[-1]), flush=True)
    overall = {key: statistics.fmean(r[key]["launches_mean"] for r in results) for key in ARMS.values()}
    over = {ARMS[k]: summarise(pooled[k]) for k in ARMS}
    per_right = {k: over[k]["launches_per_right_decision"] for k in over}
    goal = goal_section(results, over, overall)
    document = {
        "benchmark": "sweep-allocation",
        "created": time.strftime("%Y-%m-%dT%H:%M:%SZ", time.gmtime()),
        "python": platform.python_version(), "load_average": os.getloadavg(),
        "settings": {"sweeps_per_scenario": args.sweeps, "adaptive_cap": args.cap, "cv": CV,
                     "within_sd_tok_s": WITHIN_SD, "requests": REQUESTS, "max_tokens": TOKENS,
                     "cold_start_s": COLD_START_S, "margin": MARGIN, "seed": args.seed},
        "scenarios": results,
        "launches_mean_over_scenarios": overall,
        "over_scenarios": over,
        "launch_ratio_over_scenarios": goal["launch_ratio"],
        "launch_ratio_to_grid_rounds_over_scenarios":
            overall["adaptive"] / overall["grid_rounds_to_decision"],
        # not a strategy: the same rule told the true spread (docs/benchmarks.md)
        "launch_ratio_spread_known_to_grid_over_scenarios":
            overall["adaptive_spread_known"] / overall["grid_3_per_depth"],
        "launches_per_right_ratio_to_grid_over_scenarios":
            _ratio(per_right["adaptive"], per_right["grid_3_per_depth"]),
        "launches_per_right_ratio_to_grid_rounds_over_scenarios":
            _ratio(per_right["adaptive"], per_right["grid_rounds_to_decision"]),
        "goal": goal,
        "seconds": round(time.time() - started, 1),
    }
    if args.section == "all":
        model_started = time.time()
        document["depth_model"] = model_section(args.sweeps, args.seed, args.cap, args.jobs)
        document["depth_model_settings"] = {"sweeps_per_scenario": args.sweeps, "cap": args.cap,
                                            "seed": args.seed,
                                            "seconds": round(time.time() - model_started, 1)}
    elif "depth_model" in previous:
        document["depth_model"] = previous["depth_model"]
        document["depth_model_settings"] = previous.get("depth_model_settings")
    args.out.parent.mkdir(parents=True, exist_ok=True)
    args.out.write_text(json.dumps(document, indent=2) + "\n")
    for kind, o in over.items():
        right = (f"{per_right[kind]:.1f} launches per right decision" if per_right[kind]
                 else "no right decision")
        print(f"over the scenarios, {kind}: {o['launches_mean']:.1f} launches, right "
              f"{o['right_rate']:.1%}, wrong {o['error_rate']:.2%} {_pct(o['error_rate_ci95'])}, "
              f"none {o['insufficient_rate']:.1%}, {right}")
    print(f"wrote {args.out}: adaptive/grid-3 launches {goal['launch_ratio']:.2f}, adaptive/grid-rounds "
          f"{document['launch_ratio_to_grid_rounds_over_scenarios']:.2f}; launches per right "
          f"decision adaptive/grid-3 {document['launches_per_right_ratio_to_grid_over_scenarios']:.2f},"
          f" adaptive/grid-rounds "
          f"{document['launches_per_right_ratio_to_grid_rounds_over_scenarios']:.2f}; any rule "
          f"wrong in at most 5% of sweeps needs >= {goal['any_95pct_rule_launches_at_least_mean']:.1f}"
          f" launches on average ({goal['any_95pct_rule_ratio_to_grid_at_least']:.2f}x the grid); "
          f"goal met: {goal['met']}")


if __name__ == "__main__":
    main()
