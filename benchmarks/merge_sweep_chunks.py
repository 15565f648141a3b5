"""Merge depth-model runs of bench_sweep.py over consecutive sweep ranges (`--first`, `--arms`)
into one result per scenario, and compare two such runs (the same seeds under two versions of
the code). Used for issue 38's figures (docs/benchmarks.md "Routing reuse and a batched step"):

    .venv/bin/python benchmarks/merge_sweep_chunks.py OUT.json --reuse 'CHUNK*.json' \\
        --before 'BEFORE*.json' --new 'NEW*.json' --old 'OLD*.json'

Each chunk's entries keep their rows (verdict, launches, model state); the merge concatenates
them in sweep order and summarises them as bench_sweep does (Wilson intervals).
"""

from __future__ import annotations

import argparse
import glob
import json
import statistics
import sys
from pathlib import Path

sys.path.insert(0, str(Path(__file__).resolve().parent))

from bench_sweep import _arm_summary, _reuse_goal  # noqa: E402


def merged(pattern: str) -> dict:
    """Per scenario: the chunks' rows in sweep order, summarised."""
    chunks = []
    for path in sorted(glob.glob(pattern)):
        doc = json.loads(Path(path).read_text())
        chunks.append((doc["depth_model_settings"]["first_sweep"], doc["depth_model"]["scenarios"]))
    chunks.sort(key=lambda c: c[0])
    rows: dict[str, list] = {}
    first: dict[str, dict] = {}
    for _, entries in chunks:
        for e in entries:
            rows.setdefault(e["scenario"], []).extend(tuple(r) for r in e["rows"]["model"])
            first.setdefault(e["scenario"], e)
    out = {}
    for name, found in rows.items():
        e = first[name]
        states = {s: sum(1 for r in found if r[2] == s) / len(found)
                  for s in ("used", "rejected", "not-enough-data")}
        out[name] = {"scenario": name, "model_holds": e["model_holds"], "drafter": e["drafter"],
                     "drafted_share": e["drafted_share"], "true_tok_s": e["true_tok_s"],
                     "model": _arm_summary(found), "model_states": states, "bound": e["bound"],
                     "chunks": len(chunks)}
    return out


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("out", type=Path)
    parser.add_argument("--reuse", help="glob of the reuse scenarios' chunks")
    parser.add_argument("--before", help="glob of the reuse scenarios' chunks, the code before")
    parser.add_argument("--new", help="glob of the existing scenarios' chunks, this code")
    parser.add_argument("--old", help="glob of the same chunks under the code before")
    args = parser.parse_args()
    doc: dict = {"benchmark": "sweep depth model, issue 38 (routing reuse, batched step)"}
    if args.reuse:
        reuse = merged(args.reuse)
        doc["reuse"] = {"scenarios": list(reuse.values()),
                        "goal_reuse": _reuse_goal(list(reuse.values()))}
        for e in reuse.values():
            m = e["model"]
            print(f"{e['scenario']}: {m['sweeps']} sweeps, {m['launches_mean']:.2f} launches, "
                  f"wrong {m['error_rate']:.1%} {m['error_rate_ci95']}, none "
                  f"{m['insufficient_rate']:.1%}, rejected {e['model_states']['rejected']:.1%}")
        print("goal:", json.dumps(doc["reuse"]["goal_reuse"]))
    if args.before:
        before = merged(args.before)
        doc["reuse_before"] = {"scenarios": list(before.values()),
                               "goal_reuse": _reuse_goal(list(before.values()))}
        print("before:", json.dumps(doc["reuse_before"]["goal_reuse"]))
    if args.new and args.old:
        new, old = merged(args.new), merged(args.old)
        rows = []
        for name in new:
            if name not in old:
                continue
            a, b = new[name], old[name]
            rows.append({"scenario": name, "model_holds": a["model_holds"],
                         "sweeps": a["model"]["sweeps"],
                         "new": {"launches_mean": a["model"]["launches_mean"],
                                 "error_rate": a["model"]["error_rate"],
                                 "error_rate_ci95": a["model"]["error_rate_ci95"],
                                 "insufficient_rate": a["model"]["insufficient_rate"],
                                 "rejected": a["model_states"]["rejected"]},
                         "old": {"launches_mean": b["model"]["launches_mean"],
                                 "error_rate": b["model"]["error_rate"],
                                 "error_rate_ci95": b["model"]["error_rate_ci95"],
                                 "insufficient_rate": b["model"]["insufficient_rate"],
                                 "rejected": b["model_states"]["rejected"]}})
            r = rows[-1]
            print(f"{name}: {r['sweeps']} sweeps | launches {r['old']['launches_mean']:.2f} -> "
                  f"{r['new']['launches_mean']:.2f} | wrong {r['old']['error_rate']:.1%} -> "
                  f"{r['new']['error_rate']:.1%} | rejected {r['old']['rejected']:.1%} -> "
                  f"{r['new']['rejected']:.1%}")
        holds = [r for r in rows if r["model_holds"]]
        doc["existing"] = {"scenarios": rows, "holds_launches_mean": {
            side: statistics.fmean(r[side]["launches_mean"] for r in holds) for side in ("old", "new")}
            if holds else None}
        print("holds launches mean:", json.dumps(doc["existing"]["holds_launches_mean"]))
    args.out.parent.mkdir(parents=True, exist_ok=True)
    args.out.write_text(json.dumps(doc, indent=2) + "\n")


if __name__ == "__main__":
    main()
