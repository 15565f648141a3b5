"""Benchmark: memory and time of every hostile input of issue 16, each in a fresh process.

    .venv/bin/python benchmarks/bench_hostile.py [--out benchmarks/results/hostile.json]

Each case (made by `sparktriage.testbed.hostile`, untimed) runs in its own subprocess: the
command as a user runs it (`cli.app.main`) or, for the servers, the client against a hostile
server on 127.0.0.1 in the same process. The child reports its exit code and peak RSS
(`VmHWM` of /proc/self/status, the server thread included) and CPU seconds; the parent
measures wall time (on a shared machine wall time carries the load: read it with the CPU
seconds and the load average recorded beside it). Goal
(docs/benchmarks.md, issue 16): every case under 300 MB and under 10 s, with a documented exit
code. Writes a JSON result and prints a table.
"""

from __future__ import annotations

import argparse
import json
import os
import subprocess
import sys
import tempfile
import time
from pathlib import Path

REPO = Path(__file__).resolve().parents[1]
GOAL_MB, GOAL_S = 300.0, 10.0

CHILD = r"""
import asyncio, json, sys
from pathlib import Path
kind, args = sys.argv[1], sys.argv[2:]
code = None
if kind == "cli":
    from sparktriage.cli.app import main
    try:
        main(args)
    except SystemExit as exc:
        code = exc.code if isinstance(exc.code, int) else 0
elif kind == "workload":
    from sparktriage.bench.workload import load_workload
    from sparktriage.errors import SparktriageError
    try:
        load_workload(args[0]); code = 0
    except SparktriageError as exc:
        code = exc.exit_code
elif kind in ("sse", "metrics"):
    from sparktriage.testbed import hostile
    from sparktriage.store.documents import RecordWriter
    respond = {"endless": hostile.endless_sse, "long-line": hostile.long_line_sse(64 << 20),
               "surrogate": hostile.odd_sse(hostile.ODD_PAYLOADS["lone-surrogate-escape"]),
               "metrics": hostile.endless_metrics}[args[0]]
    with hostile.Server(respond) as server:
        if kind == "metrics":
            from sparktriage.metrics.prometheus import scrape
            from sparktriage.errors import SparktriageError
            try:
                scrape(server.url + "/metrics", timeout_s=30); code = 0
            except SparktriageError as exc:
                code = exc.exit_code
        else:
            from sparktriage.bench.client import ClientSettings, make_stream_client, stream_request
            settings = ClientSettings(base_url=server.url, stall_timeout_s=10, request_timeout_s=60)
            body = {"model": "m", "messages": [{"role": "user", "content": "hi"}],
                    "max_tokens": 256, "stream": True}
            async def go():
                async with make_stream_client(settings) as client:
                    return await stream_request(client, settings, "/v1/chat/completions", body)
            record = asyncio.run(go())
            with RecordWriter(Path(args[1])) as writer:
                writer.append(record)
            code = 0 if record["status"] in ("ok", "error") else 1
            print(json.dumps({"status": record["status"], "reason": record["reason"]}),
                  file=sys.stderr)
# VmHWM: this program's own peak (ru_maxrss would carry the forking parent's size over exec)
peak = next(int(l.split()[1]) for l in open("/proc/self/status") if l.startswith("VmHWM")) / 1024
import resource
usage = resource.getrusage(resource.RUSAGE_SELF)
print(json.dumps({"exit": code, "peak_mb": round(peak, 1),
                  "cpu_s": round(usage.ru_utime + usage.ru_stime, 2)}))
"""


def _cases(work: Path) -> list[tuple[str, str, list[str]]]:
    from sparktriage.bundle.writer import export_bundle
    from sparktriage.stalls import fixtures
    from sparktriage.testbed import hostile

    def put(name: str, text: str) -> str:
        (work / name).write_text(text)
        return str(work / name)

    rules = work / "rules"
    rules.mkdir()
    (rules / "_vocabulary.yaml").write_text((REPO / "rules/_vocabulary.yaml").read_text())
    (rules / "bomb.yaml").write_text("id: bomb\n" + hostile.laughs())
    segs = fixtures.segments(REPO / "tests/fixtures/stalls")
    case = sorted((REPO / "tests/fixtures/stalls/mmap-fault-crawl/positive").iterdir())[0]
    stall = export_bundle(fixtures.build(case, work / "case", segs), work / "stall.tar.gz")
    return [
        ("YAML alias bomb: launch --dry-run", "cli",
         ["launch", put("bomb.yaml", hostile.deployment_bomb()), "--dry-run"]),
        ("YAML alias bomb: rules check", "cli", ["rules", "check", "--rules", str(rules), "--no-fixtures"]),
        ("YAML alias bomb in a workload's extra_body", "workload",
         [put("workload.yaml", hostile.workload_bomb())]),
        ("YAML 5,000 deep: launch --dry-run", "cli",
         ["launch", put("deep.yaml", hostile.DEPLOYMENT_HEAD + hostile.deep_yaml(5000)),
          "--dry-run"]),
        ("YAML 18 MB: launch --dry-run", "cli",
         ["launch", put("big.yaml", hostile.big_yaml(18)), "--dry-run"]),
        ("SSE endless stream (max_tokens 256)", "sse", ["endless", str(work / "r1.jsonl")]),
        ("SSE one 64 MiB line", "sse", ["long-line", str(work / "r2.jsonl")]),
        ("SSE lone surrogate escape", "sse", ["surrogate", str(work / "r3.jsonl")]),
        ("/metrics endless page", "metrics", ["metrics"]),
        ("logs ARCHIVE, 2,000 members", "cli",
         ["logs", str(hostile.many_members(work / "many.tar.gz"))]),
        ("stalls BUNDLE.tar.gz with a stall", "cli", ["stalls", str(stall)]),
        ("stalls: file then member under it", "cli",
         ["stalls", str(hostile.file_then_member(work / "ftm.tar.gz"))]),
        ("stalls: folder over bundle.json", "cli",
         ["stalls", str(hostile.dir_over_bundle_json(work / "dir.tar.gz"))]),
        ("stalls: bundle.json 100k deep", "cli",
         ["stalls", str(hostile.deep_bundle_json(work / "deep.tar.gz"))]),
        ("stalls: truncated .tar.gz", "cli",
         ["stalls", str(hostile.truncated(stall, work / "cut.tar.gz", 0.6))]),
    ]


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--out", type=Path, default=REPO / "benchmarks/results/hostile.json")
    args = parser.parse_args()
    rows = []
    with tempfile.TemporaryDirectory(prefix="bench-hostile-") as tmp:
        work = Path(tmp)
        for name, kind, argv in _cases(work):
            started = time.monotonic()
            done = subprocess.run([sys.executable, "-c", CHILD, kind, *argv], capture_output=True,
                                  text=True, timeout=120, env={**os.environ, "COLUMNS": "100"})
            wall = time.monotonic() - started
            try:
                result = json.loads(done.stdout.strip().splitlines()[-1])
            except (ValueError, IndexError):
                result = {"exit": done.returncode, "peak_mb": None, "cpu_s": None}
            message = next((line for line in done.stderr.splitlines()
                            if line.startswith(("error:", "{", "internal error"))), "")
            rows.append({"case": name, "exit": result["exit"], "peak_mb": result["peak_mb"],
                         "wall_s": round(wall, 2), "cpu_s": result["cpu_s"], "message": message[:200],
                         "ok": (result["exit"] in (0, 1, 2, 3) and result["peak_mb"] is not None
                                and result["peak_mb"] < GOAL_MB and wall < GOAL_S)})
            rows[-1]["cpu_ok"] = result["cpu_s"] is not None and result["cpu_s"] < GOAL_S
            print(f"{name:45s} exit {result['exit']!s:>4}  {result['peak_mb']!s:>7} MB  "
                  f"{wall:6.2f} s wall  {result['cpu_s']!s:>6} s CPU  "
                  f"{'ok' if rows[-1]['ok'] else 'OVER GOAL (wall)'}", flush=True)
    document = {"schema_version": 1, "kind": "bench-hostile", "goal_mb": GOAL_MB,
                "goal_s": GOAL_S, "load_average": os.getloadavg(), "cpus": os.cpu_count(),
                "python": sys.version.split()[0], "cases": rows,
                "all_ok": all(r["ok"] for r in rows)}
    args.out.parent.mkdir(parents=True, exist_ok=True)
    args.out.write_text(json.dumps(document, indent=2) + "\n")
    print(f"{sum(r['ok'] for r in rows)}/{len(rows)} cases within {GOAL_MB:g} MB and "
          f"{GOAL_S:g} s (load {os.getloadavg()[0]:.1f}); wrote {args.out}")


if __name__ == "__main__":
    main()
