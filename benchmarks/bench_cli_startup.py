"""Benchmark: CPU and wall time of `sparktriage --help` and of every `sparktriage X --help`.

Goal (issue 10): under 0.3 s of CPU each. Measured in the same run against the baseline, the
package as it was before lazy command loading (git commit BASELINE, checked out into a
temporary worktree and run from its source with the same interpreter), so the ratio shows what
the change bought on this machine at this load. Each invocation runs in a fresh process; CPU
is the child's user + system time (`resource.getrusage(RUSAGE_CHILDREN)` deltas); the median of
--repeat runs is reported, with the load average beside it.

    .venv/bin/python benchmarks/bench_cli_startup.py [--repeat 5] [--json benchmarks/results/cli_startup.json]
"""

from __future__ import annotations

import argparse
import json
import os
import platform
import resource
import statistics
import subprocess
import sys
import tempfile
import time
from pathlib import Path

ROOT = Path(__file__).resolve().parents[1]
BASELINE = "43d8dda"  # main before the CLI was made lazy (eager registration, top-level imports)
GOAL_CPU_S = 0.3
sys.path.insert(0, str(ROOT / "src"))
from sparktriage.cli.registry import COMMANDS as REGISTERED  # noqa: E402  (names only, no typer)

# The root, every registered command, and one subcommand of each group (a group's `X --help`
# builds only the group; `X Y --help` builds its subcommand too).
_SUBCOMMAND = {"session": "run", "rules": "check", "testbed": "lab up"}
COMMANDS = [""] + [c.name for c in REGISTERED] + [
    f"{c.name} {_SUBCOMMAND[c.name]}" for c in REGISTERED if c.group and c.name in _SUBCOMMAND]


def _one(src: Path, command: str) -> tuple[float, float, int]:
    code = ("import sys\nsys.path.insert(0, %r)\nfrom sparktriage.cli.app import main\n"
            "main(sys.argv[1:])" % str(src))
    argv = [sys.executable, "-c", code, *command.split(), "--help"]
    before = resource.getrusage(resource.RUSAGE_CHILDREN)
    start = time.perf_counter()
    done = subprocess.run(argv, stdout=subprocess.DEVNULL, stderr=subprocess.DEVNULL, check=False,
                          env={**os.environ, "PYTHONDONTWRITEBYTECODE": "1"})
    wall = time.perf_counter() - start
    after = resource.getrusage(resource.RUSAGE_CHILDREN)
    cpu = (after.ru_utime - before.ru_utime) + (after.ru_stime - before.ru_stime)
    return cpu, wall, done.returncode


def _measure(src: Path, repeat: int) -> dict[str, dict]:
    out = {}
    for command in COMMANDS:
        _one(src, command)  # warm the byte-code cache and the page cache
        runs = [_one(src, command) for _ in range(repeat)]
        out[command or "(root)"] = {"cpu_s": statistics.median(r[0] for r in runs),
                                    "wall_s": statistics.median(r[1] for r in runs),
                                    "exists": all(r[2] == 0 for r in runs)}
    return out


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--repeat", type=int, default=5)
    parser.add_argument("--json", default=str(ROOT / "benchmarks/results/cli_startup.json"))
    args = parser.parse_args()
    with tempfile.TemporaryDirectory() as tmp:
        base = Path(tmp) / "baseline"
        subprocess.run(["git", "-C", str(ROOT), "worktree", "add", "--detach", str(base),
                        BASELINE], check=True, capture_output=True)
        try:
            baseline = _measure(base / "src", args.repeat)
        finally:
            subprocess.run(["git", "-C", str(ROOT), "worktree", "remove", "--force", str(base)],
                           check=False, capture_output=True)
    current = _measure(ROOT / "src", args.repeat)
    rows = {}
    for name, now in current.items():
        then = baseline[name] if baseline[name]["exists"] else None  # a command added since
        rows[name] = {"cpu_s": now["cpu_s"], "wall_s": now["wall_s"], "ok": now["exists"],
                      "baseline_cpu_s": then and then["cpu_s"],
                      "baseline_wall_s": then and then["wall_s"],
                      "cpu_ratio": then and then["cpu_s"] / max(now["cpu_s"], 1e-9)}
    result = {
        "benchmark": "cli_startup", "goal_cpu_s": GOAL_CPU_S, "repeat": args.repeat,
        "baseline_commit": BASELINE, "python": platform.python_version(),
        "load_average": os.getloadavg(), "cpus": os.cpu_count(), "commands": rows,
        "max_cpu_s": max(r["cpu_s"] for r in rows.values()),
        "all_under_goal": all(r["ok"] and r["cpu_s"] < GOAL_CPU_S for r in rows.values()),
    }
    Path(args.json).parent.mkdir(parents=True, exist_ok=True)
    Path(args.json).write_text(json.dumps(result, indent=2) + "\n")
    for name, r in rows.items():
        then = ("no such command in the baseline" if r["baseline_cpu_s"] is None else
                f"baseline {r['baseline_cpu_s']:.3f} s CPU: {r['cpu_ratio']:.1f}x")
        print(f"{name:>14}: {r['cpu_s']:.3f} s CPU ({r['wall_s']:.2f} s wall), {then}"
              f"{'' if r['ok'] else ' (EXIT NOT 0)'}")
    print(f"max {result['max_cpu_s']:.3f} s CPU, goal < {GOAL_CPU_S} s: "
          f"{'met' if result['all_under_goal'] else 'NOT met'} (load {result['load_average'][0]:.1f})")


if __name__ == "__main__":
    main()
