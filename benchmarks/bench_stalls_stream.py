"""Benchmark: `sparktriage stalls` against `sparktriage logs` on the same plain log, whole processes.

    .venv/bin/python benchmarks/bench_stalls_stream.py [--lines 1000000] [--runs 3]
        [--warmup 1] [--mixed-mb 16] [--distinct 0] [--out benchmarks/results/stalls_stream.json]

Builds (untimed) two plain logs in a temporary folder:

- `identical`: `--lines` copies of one NCCL warning line as vLLM prints it (one stamp, 166
  bytes a line: 1,000,000 lines are 166 MB), the hostile input of a retry loop gone wild;
- `mixed`: a real-looking log of `--mixed-mb` MiB (bench_logparse.build_log: a real CPU
  startup, serving windows with access, stats and SpecDecoding lines, warnings, shutdown);
- `distinct` (with `--distinct N`): N NCCL warnings that differ by a counter, 50 a second:
  quiet lines, which `stalls` folds into a stretch's first and latest line (docs/stalls.md).

Then runs the two commands on each, `sparktriage stalls LOG --json FILE` and `sparktriage
logs LOG --json FILE`, as whole processes (start-up included), in turn (stalls, logs, stalls,
logs, ...: a busy moment of the shared machine hits both alike), and takes per run the wall
seconds (a monotonic clock around the child), CPU seconds and peak RSS (the reaped child's
`wait4` accounting, read by a small wrapper process: a peak cannot read below the wrapper's
size, about 10 MB). Reports the median of each, the stalls/logs ratios pair by pair and their
median, and checks both exit codes and that the stalls document names the log's node and line
count. Goal (docs/benchmarks.md, docs/limits.md): on `identical`, stalls' peak RSS at most
256 MiB and its time at most twice that of logs. Writes a JSON result and prints a summary.
"""

from __future__ import annotations

import argparse
import json
import os
import statistics
import subprocess
import sys
import tempfile
import time
from pathlib import Path

HERE = Path(__file__).resolve().parent
ROOT = HERE.parent
sys.path.insert(0, str(HERE))

from bench_logparse import build_log  # noqa: E402  (a sibling script, not a package)

LINE = ("(EngineCore_DP0 pid=2345) WARNING 12-06 10:00:00 [pynccl.py:153] NCCL WARN NET/IB : "
        "No device found. Falling back to socket transport; collectives will be slower now\n")
GOAL_PEAK_MB, GOAL_RATIO = 256.0, 2.0
CHUNK = 10_000


def build_identical(path: Path, lines: int) -> dict:
    """`lines` copies of LINE, written in chunks (this process stays small)."""
    with open(path, "w") as fh:
        for done in range(0, lines, CHUNK):
            fh.write(LINE * min(CHUNK, lines - done))
    return {"lines": lines, "bytes": path.stat().st_size, "line_bytes": len(LINE)}


def build_distinct(path: Path, lines: int) -> dict:
    """`lines` warnings that differ by a counter (no two alike), 50 per stamped second."""
    with open(path, "w") as fh:
        for done in range(0, lines, CHUNK):
            fh.write("".join(
                f"(EngineCore_DP0 pid=2345) WARNING 12-{6 + n // 4_320_000:02d} "
                f"{n // 180_000 % 24:02d}:{n // 3000 % 60:02d}:{n // 50 % 60:02d} [pynccl.py:153] "
                f"NCCL WARN NET/IB : No device found (attempt {n}). Falling back to socket "
                f"transport\n" for n in range(done, min(done + CHUNK, lines))))
    return {"lines": lines, "bytes": path.stat().st_size}


def _sparktriage() -> str:
    found = Path(sys.executable).parent / "sparktriage"
    return str(found) if found.exists() else "sparktriage"


def run_pair(cmd: str, log: Path, json_out: Path) -> dict:
    """One whole process, `sparktriage CMD LOG --json FILE`, started by a tiny Python wrapper
    that reaps it with wait4 and prints its own accounting: peak RSS (which cannot read below
    the wrapper's size at the fork, about 10 MB) and CPU seconds; wall seconds around it all."""
    wrapper = ("import os, sys\n"
               "pid = os.fork()\n"
               "if pid == 0:\n"
               "    os.dup2(os.open(os.devnull, os.O_WRONLY), 1)\n"
               "    os.execv(sys.argv[1], sys.argv[1:])\n"
               "_, status, usage = os.wait4(pid, 0)\n"
               "print(usage.ru_maxrss, usage.ru_utime + usage.ru_stime, "
               "os.waitstatus_to_exitcode(status))\n")
    argv = [sys.executable, "-c", wrapper, _sparktriage(), cmd, str(log), "--json",
            str(json_out)]
    start = time.monotonic()
    done = subprocess.run(argv, stdin=subprocess.DEVNULL, capture_output=True, text=True)
    wall = time.monotonic() - start
    fields = done.stdout.split()
    if done.returncode != 0 or len(fields) != 3:
        raise SystemExit(f"{cmd} on {log.name}: the wrapper failed: {done.stderr[-2000:]}")
    return {"wall_s": wall, "peak_mb": int(fields[0]) / 1024, "cpu_s": float(fields[1]),
            "rc": int(fields[2])}


def _median(runs: list[dict], key: str) -> float:
    return round(statistics.median(r[key] for r in runs), 3)


def compare(log: Path, runs: int, warmup: int, work: Path) -> dict:
    """stalls and logs in turn, `runs` pairs after `warmup` pairs that are not counted."""
    pairs = []
    for i in range(warmup + runs):
        stalls = run_pair("stalls", log, work / "stalls.json")
        logs = run_pair("logs", log, work / "logs.json")
        if i >= warmup:
            pairs.append((stalls, logs))
    document = json.loads((work / "stalls.json").read_text())
    logs_doc = json.loads((work / "logs.json").read_text())
    s_runs, l_runs = [p[0] for p in pairs], [p[1] for p in pairs]
    wall_ratios = [s["wall_s"] / l["wall_s"] for s, l in pairs]
    cpu_ratios = [s["cpu_s"] / l["cpu_s"] for s, l in pairs]
    return {
        "stalls": {"wall_s": _median(s_runs, "wall_s"), "cpu_s": _median(s_runs, "cpu_s"),
                   "peak_mb": round(max(r["peak_mb"] for r in s_runs), 1),
                   "exit_codes": sorted({r["rc"] for r in s_runs}),
                   "runs": [{k: round(v, 3) for k, v in r.items()} for r in s_runs]},
        "logs": {"wall_s": _median(l_runs, "wall_s"), "cpu_s": _median(l_runs, "cpu_s"),
                 "peak_mb": round(max(r["peak_mb"] for r in l_runs), 1),
                 "exit_codes": sorted({r["rc"] for r in l_runs}),
                 "runs": [{k: round(v, 3) for k, v in r.items()} for r in l_runs]},
        "ratio_wall": round(statistics.median(wall_ratios), 3),
        "ratio_cpu": round(statistics.median(cpu_ratios), 3),
        "ratios_wall": [round(r, 3) for r in wall_ratios],
        "stalls_document": {"nodes": {n: v["lines"] for n, v in document["nodes"].items()},
                            "findings": [[f["kind"], f["verdict"]["id"]]
                                         for f in document["findings"]]},
        "logs_events": logs_doc["counts"]["events"],
    }


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--lines", type=int, default=1_000_000)
    parser.add_argument("--mixed-mb", type=int, default=16, help="0: no mixed log")
    parser.add_argument("--distinct", type=int, default=0, help="lines; 0: no distinct log")
    parser.add_argument("--runs", type=int, default=3, help="counted pairs per log")
    parser.add_argument("--warmup", type=int, default=1, help="pairs run first, not counted")
    parser.add_argument("--out", type=Path, default=ROOT / "benchmarks/results/stalls_stream.json")
    args = parser.parse_args()
    load_before = os.getloadavg()
    result: dict = {"schema_version": 1, "kind": "sparktriage-benchmark",
                    "benchmark": "stalls-stream", "cores": os.cpu_count(),
                    "goal": {"stalls_peak_mb": GOAL_PEAK_MB, "ratio": GOAL_RATIO}, "logs": {}}
    with tempfile.TemporaryDirectory(prefix="bench-stalls-stream-") as tmp:
        work = Path(tmp)
        inputs = {"identical": (work / "identical.log", lambda p: build_identical(p, args.lines))}
        if args.mixed_mb:
            inputs["mixed"] = (work / "mixed.log", lambda p: build_log(p, args.mixed_mb))
        if args.distinct:
            inputs["distinct"] = (work / "distinct.log",
                                  lambda p: build_distinct(p, args.distinct))
        for name, (path, build) in inputs.items():
            info = build(path)
            info = {"bytes": path.stat().st_size, **(info if isinstance(info, dict) else {})}
            result["logs"][name] = {"input": info, **compare(path, args.runs, args.warmup, work)}
    result["load_average"] = {"before": load_before, "after": os.getloadavg()}
    ident = result["logs"]["identical"]
    result["met"] = (ident["stalls"]["peak_mb"] <= GOAL_PEAK_MB
                     and ident["ratio_wall"] <= GOAL_RATIO and ident["stalls"]["exit_codes"]
                     == ident["logs"]["exit_codes"] == [0])
    args.out.parent.mkdir(parents=True, exist_ok=True)
    args.out.write_text(json.dumps(result, indent=2) + "\n")
    for name, r in result["logs"].items():
        print(f"{name}: {r['input']['bytes'] / 1e6:.0f} MB; stalls {r['stalls']['wall_s']:.1f} s "
              f"wall, {r['stalls']['cpu_s']:.1f} s CPU, peak {r['stalls']['peak_mb']:.0f} MiB; "
              f"logs {r['logs']['wall_s']:.1f} s, {r['logs']['cpu_s']:.1f} s CPU, peak "
              f"{r['logs']['peak_mb']:.0f} MiB; ratio stalls/logs {r['ratio_wall']} wall, "
              f"{r['ratio_cpu']} CPU")
    print(f"goal (identical: peak <= {GOAL_PEAK_MB:.0f} MiB, ratio <= {GOAL_RATIO}): "
          f"{'met' if result['met'] else 'NOT met'}")


if __name__ == "__main__":
    main()
