"""Put together the no-match benchmark of bench_sweep.py (docs/benchmarks.md "ngram's no-match
steps, counts from the log"): the scenarios with counts from the log under this code and the
code before, and every other scenario's decisions under both, compared sweep by sweep.

    .venv/bin/python benchmarks/compare_sweep_rows.py OUT.json --after A.json --before B.json \\
        --existing-after C.json --existing-before D.json

Each input is a `--section model` result with rows (`--arms` given): per scenario and arm, one
(verdict, launches, model state) per sweep, in sweep order under the same seeds, so two runs of
code that decides alike hold the same rows.
"""

from __future__ import annotations

import argparse
import json
from pathlib import Path


def _entries(path: Path) -> dict[str, dict]:
    doc = json.loads(path.read_text())
    return {e["scenario"]: e for e in doc["depth_model"]["scenarios"]}


def _summary(entry: dict, cap: int) -> dict:
    m = entry["model"]
    rows = entry["rows"]["model"]
    return {"scenario": entry["scenario"], "drafted_share": entry["drafted_share"],
            "at_cap_rate": sum(1 for r in rows if r[1] >= cap) / len(rows),
            "at_cap_undecided_rate": sum(1 for r in rows if r[1] >= cap
                                         and r[0] == "insufficient") / len(rows),
            "true_tok_s": entry["true_tok_s"], "sweeps": m["sweeps"],
            "launches_mean": m["launches_mean"], "launches_median": m["launches_median"],
            "right_rate": m["right_rate"], "error_rate": m["error_rate"],
            "error_rate_ci95": m["error_rate_ci95"], "insufficient_rate": m["insufficient_rate"],
            "model_states": entry["model_states"]}


def _goal(rows: list[dict]) -> dict:
    mean = sum(r["launches_mean"] for r in rows) / len(rows)
    worst = max(r["error_rate"] for r in rows)
    return {"scenarios": len(rows), "launches_mean": mean,
            "launches_max": max(r["launches_mean"] for r in rows), "max_error_rate": worst,
            "met": mean <= 9.0 and all(r["launches_mean"] <= 9.0 for r in rows) and worst <= 0.05}


def identical(after: dict[str, dict], before: dict[str, dict]) -> dict:
    """Per scenario and arm: sweeps compared and how many differ (verdict, launches or state)."""
    out, differing = [], 0
    for name, a in after.items():
        b = before.get(name)
        if b is None:
            continue
        for arm, rows in a["rows"].items():
            old = [tuple(r) for r in b["rows"].get(arm, [])]
            new = [tuple(r) for r in rows]
            diff = sum(1 for x, y in zip(new, old) if x != y) + abs(len(new) - len(old))
            differing += diff
            out.append({"scenario": name, "arm": arm, "sweeps": len(new), "differing": diff})
    return {"compared": out, "sweeps_compared": sum(r["sweeps"] for r in out),
            "differing": differing, "identical": differing == 0 and bool(out)}


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("out", type=Path)
    parser.add_argument("--after", type=Path, required=True)
    parser.add_argument("--before", type=Path, required=True)
    parser.add_argument("--existing-after", type=Path, nargs="+", required=True)
    parser.add_argument("--existing-before", type=Path, nargs="+", required=True,
                        help="one per --existing-after, in the same order (the same sweeps)")
    parser.add_argument("--note", default="")
    args = parser.parse_args()
    after, before = _entries(args.after), _entries(args.before)
    cap = json.loads(args.after.read_text())["depth_model_settings"]["cap"]
    rows = {"after": [_summary(e, cap) for e in after.values()],
            "before": [_summary(e, cap) for e in before.values()]}
    runs = [identical(_entries(a), _entries(b))
            for a, b in zip(args.existing_after, args.existing_before, strict=True)]
    same = {"compared": [r for run in runs for r in run["compared"]],
            "sweeps_compared": sum(run["sweeps_compared"] for run in runs),
            "differing": sum(run["differing"] for run in runs),
            "identical": all(run["identical"] for run in runs)}
    doc = {"benchmark": "sweep depth model: ngram's no-match steps, counts from the log",
           "note": args.note,
           "settings": json.loads(args.after.read_text())["depth_model_settings"],
           "no_match_from_log": {**rows, "goal_after": _goal(rows["after"]),
                                 "goal_before": _goal(rows["before"])},
           "existing_scenarios": {
               "settings": [json.loads(a.read_text())["depth_model_settings"]
                            for a in args.existing_after], **same}}
    for side in ("before", "after"):
        for r in rows[side]:
            print(f"{side:6s} {r['scenario']}: {r['launches_mean']:.2f} launches (median "
                  f"{r['launches_median']}), right {r['right_rate']:.1%}, wrong "
                  f"{r['error_rate']:.1%} [{r['error_rate_ci95'][0]:.1%}, "
                  f"{r['error_rate_ci95'][1]:.1%}], none {r['insufficient_rate']:.1%}"
                  f", rejected {r['model_states']['rejected']:.1%}, at the cap "
                  f"{r['at_cap_rate']:.1%} (undecided there {r['at_cap_undecided_rate']:.1%})")
    print("goal before:", json.dumps(doc["no_match_from_log"]["goal_before"]))
    print("goal after:", json.dumps(doc["no_match_from_log"]["goal_after"]))
    print(f"existing scenarios: {same['sweeps_compared']} sweeps compared over "
          f"{len(same['compared'])} scenario-arm runs, {same['differing']} differ")
    args.out.parent.mkdir(parents=True, exist_ok=True)
    args.out.write_text(json.dumps(doc, indent=2) + "\n")


if __name__ == "__main__":
    main()
