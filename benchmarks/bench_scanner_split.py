"""Benchmark: what the compiled scanner's folding earns over the compiled gate alone.

    .venv/bin/python benchmarks/bench_scanner_split.py [--size-mb 512] [--runs 5] [--out FILE.json]

Same log as bench_logparse.py (real lines repeated, 512 MiB). Times, end to end (resolve the
input, stream it, build the `logs` document), in interleaved rounds on the same warm file:

* `gate+fold` - the default: the C gate finds the candidate lines, the C code also reads the
  stats and SpecDecoding lines and repeated warnings and folds them into the analysis state it
  is lent (hotlink.py); Python builds the document;
* `gate` - the C gate alone: it only hands candidates to Python (every hot line is parsed into
  an event and fed to LogAnalyzer in Python);
* `python` - no extension at all (pure-Python gate), on `--python-mb` only (it is slow).

(benchmarks/results/scanner-split-c-rows.json is the run made before the window rows moved back
to Python: it also timed the rows built in C, `fold-pyrows` against `gate+fold`, and a
`gate+rows` variant.) Checks that all give the same document, and writes the best and median wall and CPU seconds and
the ratios (docs/benchmarks.md, "Compiled scanner: gate alone against gate + folding").
"""

from __future__ import annotations

import argparse
import datetime as dt
import gc
import json
import os
import platform
import statistics
import sys
import tempfile
import time
from pathlib import Path

ROOT = Path(__file__).resolve().parent.parent
sys.path.insert(0, str(ROOT / "benchmarks"))
sys.path.insert(0, str(ROOT / "src"))

from bench_logparse import _cpu, build_log  # noqa: E402

from sparktriage.logs import compiled  # noqa: E402
from sparktriage.logs.document import LogAnalyzer  # noqa: E402
from sparktriage.logs.parser import ParseOptions, merge_events  # noqa: E402
from sparktriage.logs.scan import fast_events  # noqa: E402
from sparktriage.logs.sources import resolve_inputs  # noqa: E402

UTC = dt.timezone.utc


def analyze(path: Path, variant: str) -> dict:
    """The `logs` document of one file through one variant (see the module docstring)."""
    source = resolve_inputs([str(path)])[0]
    options = ParseOptions(tz=UTC, year=2026)
    analyzer = LogAnalyzer(UTC)
    folding = analyzer if variant == "gate+fold" else None
    events = fast_events(source, options, analyzer=folding, compiled_path=variant != "python")
    gc.disable()
    try:
        return analyzer.feed_all(merge_events([events])).document()
    finally:
        gc.enable()


def _timed(fn):
    gc.collect()
    start, cpu = time.perf_counter(), _cpu()
    result = fn()
    return time.perf_counter() - start, _cpu() - cpu, result


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("--size-mb", type=int, default=512)
    parser.add_argument("--python-mb", type=int, default=32)
    parser.add_argument("--runs", type=int, default=5)
    parser.add_argument("--out", type=Path,
                        default=ROOT / "benchmarks" / "results" / "scanner-split.json")
    args = parser.parse_args()
    if compiled.scanner() is None:
        sys.exit("the compiled scanner is not built")
    load_before = os.getloadavg()[0]
    variants = ("gate+fold", "gate")
    with tempfile.TemporaryDirectory() as tmp:
        path = Path(tmp) / "bench.log"
        built = build_log(path, args.size_mb)
        mb = built["bytes"] / 1e6
        docs = {v: json.dumps(analyze(path, v)) for v in variants}  # also warms the page cache
        same = len(set(docs.values())) == 1
        del docs
        runs = {v: ([], []) for v in variants}
        for _ in range(args.runs):
            for v in variants:
                wall, cpu, result = _timed(lambda: analyze(path, v))
                del result
                runs[v][0].append(wall)
                runs[v][1].append(cpu)
        small = Path(tmp) / "small.log"
        built_small = build_log(small, args.python_mb)
        small_mb = built_small["bytes"] / 1e6
        small_runs = {}
        for v in (*variants, "python"):
            wall, cpu, doc = _timed(lambda: analyze(small, v))
            small_runs[v] = {"seconds": round(wall, 3), "cpu_seconds": round(cpu, 3),
                             "doc": json.dumps(doc)}
        same_small = len({r.pop("doc") for r in small_runs.values()}) == 1

    def summary(v: str) -> dict:
        walls, cpus = runs[v]
        return {"seconds": round(min(walls), 3), "cpu_seconds": round(min(cpus), 3),
                "median_seconds": round(statistics.median(walls), 3),
                "median_cpu_seconds": round(statistics.median(cpus), 3),
                "mb_s": round(mb / min(walls), 1)}

    result = {
        "schema_version": 2,
        "kind": "benchmark-scanner-split",
        "created": dt.datetime.now(UTC).isoformat(timespec="seconds"),
        "machine": {"cpus": os.cpu_count(), "python": platform.python_version(),
                    "platform": platform.machine(), "load_1min_before": round(load_before, 2),
                    "load_1min_after": round(os.getloadavg()[0], 2)},
        "log": {**built, "mb": round(mb, 1)},
        "runs": args.runs,
        "kernel": compiled.scanner().kernel,
        "variants": {v: summary(v) for v in variants},
        "same_document": same,
        "small_copy": {"mb": round(small_mb, 1), **small_runs, "same_document": same_small},
    }
    s = result["variants"]
    result["fold_speedup_over_gate"] = {
        "wall": round(s["gate"]["seconds"] / s["gate+fold"]["seconds"], 2),
        "cpu": round(s["gate"]["cpu_seconds"] / s["gate+fold"]["cpu_seconds"], 2),
        "median_wall": round(s["gate"]["median_seconds"] / s["gate+fold"]["median_seconds"], 2)}
    result["threshold"] = 1.5
    assert same and same_small, "the variants disagree"
    args.out.parent.mkdir(parents=True, exist_ok=True)
    args.out.write_text(json.dumps(result, indent=2) + "\n")
    print(json.dumps(result, indent=2))


if __name__ == "__main__":
    main()
