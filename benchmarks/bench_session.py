"""Lab wall time of a whole default session, simulated at the seed's numbers, against doing the
same steps by hand one after another with a fixed grid (docs/benchmarks.md).

The session side prices the real declared plan (`sparktriage.session.plan.build_steps` with the
default options: 3 launches, depths 0-4, 15 requests x 256 tokens x 2 workloads, probe, sweep
on the code workload with one launch per depth other than 0, the protocol launches standing for
depth 0) on a lab clock: every launch a cold start, every request streamed at the depth's rate,
teardown and the node-state checks between launches. The by-hand side is the same work as a
consultant does it without the session: a fixed grid of 3 launches at each of the 5 depths, each
running the whole protocol (both workloads, as `bench` does by default), the probe on its own
launch, and the minute of reading and typing between one command and the next.

Writes benchmarks/results/session.json.
"""

from __future__ import annotations

import argparse
import json
import os
from pathlib import Path

from sparktriage.session.plan import SessionOptions, build_steps

SEED = {"cold_start_s": 165.0, "tok_s": 28.0, "requests": 15, "max_tokens": 256, "workloads": 2,
        "launches": 3, "depths": [0, 1, 2, 3, 4]}
# delivered-rate factor per ngram depth on the code workload (acceptance-limited; a depth past
# the knee costs more in verification than it gains): a plausible curve, the same for both sides
SPEEDUP = {0: 1.0, 1: 1.25, 2: 1.4, 3: 1.45, 4: 1.42}
TTFT_S = 0.6
TEARDOWN_S = 20.0
NODE_CHECK_S = 5.0
PROBE_S = 60.0  # the probe's token budget at 28 tok/s, about 1 700 tokens
REPORT_S = 30.0  # stalls, envdiff, report and signature together
HUMAN_GAP_S = 60.0  # by hand: reading one command's output and typing the next


def protocol_s(requests: int, max_tokens: int, workloads: int, depth: int, tok_s: float) -> float:
    per_request = TTFT_S + max_tokens / (tok_s * SPEEDUP[depth])
    return (requests + 1) * per_request * workloads  # +1: the warm-up request


def session_s(seed: dict) -> tuple[float, dict]:
    options = SessionOptions(deployment="deploy.yaml", launches=seed["launches"],
                             depths=tuple(seed["depths"]), requests=seed["requests"],
                             max_tokens=seed["max_tokens"], sign="key")
    steps = build_steps(options)
    parts: dict[str, float] = {}
    for step in steps:
        kind = step["kind"]
        if kind == "launch":
            cost = seed["cold_start_s"] + TEARDOWN_S + NODE_CHECK_S
        elif kind == "protocol":
            cost = protocol_s(seed["requests"], seed["max_tokens"], seed["workloads"], 0, seed["tok_s"])
        elif kind == "probe":
            cost = PROBE_S
        elif kind == "sweep":
            cost = sum(seed["cold_start_s"] + TEARDOWN_S + NODE_CHECK_S
                       + protocol_s(seed["requests"], seed["max_tokens"], 1, d, seed["tok_s"])
                       for d in step["inputs"]["depths"] if d != 0)
        else:
            cost = REPORT_S / 4
        parts[kind] = parts.get(kind, 0.0) + cost
    return sum(parts.values()), {"steps": len(steps), "by_kind_s": {k: round(v, 1) for k, v in parts.items()},
                                 "launches": seed["launches"] + len(seed["depths"]) - 1}


def by_hand_s(seed: dict) -> tuple[float, dict]:
    launches = seed["launches"] * len(seed["depths"]) + 1  # the grid, and one for the probe
    total = 0.0
    for depth in seed["depths"]:
        for _ in range(seed["launches"]):
            total += (seed["cold_start_s"] + TEARDOWN_S + HUMAN_GAP_S
                      + protocol_s(seed["requests"], seed["max_tokens"], seed["workloads"], depth,
                                   seed["tok_s"]) + HUMAN_GAP_S)
    total += seed["cold_start_s"] + TEARDOWN_S + PROBE_S + 2 * HUMAN_GAP_S  # the probe's launch
    total += REPORT_S + 4 * HUMAN_GAP_S  # stalls per launch by hand, diff, report, sign
    return total, {"launches": launches, "commands": launches * 2 + 5}


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--out", type=Path, default=Path(__file__).parent / "results" / "session.json")
    args = parser.parse_args()
    session, session_detail = session_s(SEED)
    hand, hand_detail = by_hand_s(SEED)
    document = {
        "schema_version": 1, "kind": "benchmark", "name": "session",
        "seed": SEED, "assumptions": {"speedup_by_depth": SPEEDUP, "ttft_s": TTFT_S,
                                      "teardown_s": TEARDOWN_S, "node_check_s": NODE_CHECK_S,
                                      "probe_s": PROBE_S, "report_s": REPORT_S,
                                      "human_gap_s": HUMAN_GAP_S},
        "session": {"lab_s": round(session, 1), "lab_h": round(session / 3600, 2), **session_detail},
        "by_hand": {"lab_s": round(hand, 1), "lab_h": round(hand / 3600, 2), **hand_detail},
        "ratio": round(session / hand, 3), "goal_h": 2.0, "meets_goal": session < 7200,
        "load_average": os.getloadavg()[0],
    }
    args.out.parent.mkdir(parents=True, exist_ok=True)
    args.out.write_text(json.dumps(document, indent=2) + "\n", encoding="utf-8")
    print(json.dumps({k: document[k] for k in ("session", "by_hand", "ratio", "meets_goal")}, indent=2))


if __name__ == "__main__":
    main()
