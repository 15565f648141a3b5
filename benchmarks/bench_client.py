"""Client accuracy and ingest capacity: sparktriage's streaming client vs `vllm bench serve`.

Usage (from the repository root, after `bash provision/setup.sh`):

    .venv/bin/python benchmarks/bench_client.py [--out benchmarks/results/bench_client.json]
        [--rates 50,200,...] [--duration 1.0] [--reps 3] [--skip-vllm]

Both clients measure the same simulated server (its own process) in the same run; the
server's send-time trace is the ground truth. For every chunking mode (1 token per chunk, and
4 tokens per chunk as under speculative decoding) and every per-stream rate, each client's
per-request decode rate is compared with the truth: ours is `derive()`'s decode rate; vLLM's is
1 / TPOT = (output_tokens - 1) / (latency - TTFT), its own per-token figure. The capacity of a
client is the highest achieved rate whose median absolute error is within 0.3%. The JSON also
reports vLLM's chunk-based numbers (ITL entries + 1 = chunks, "peak output token throughput")
against the real token counts. See docs/benchmarks.md.
"""

from __future__ import annotations

import argparse
import asyncio
import datetime as dt
import json
import os
import statistics
import subprocess
import sys
import tempfile
import time
from pathlib import Path

from sparktriage.bench.client import ClientSettings, make_stream_client, stream_request
from sparktriage.bench.records import derive
from sparktriage.sim.process import SimProcess
from sparktriage.testbed.paths import locate

ROOT = Path(__file__).resolve().parents[1]
TOLERANCE = 0.003
DEFAULT_RATES = (50, 200, 1000, 2000, 5000, 10000, 20000, 50000, 100000, 200000, 400000, 800000,
                 1600000)
MAX_CHUNKS = 400_000  # per request: bounds memory (the client keeps every chunk's record)
MODES = {"k1": 1, "k4": 4}


def tokens_for(rate: float, duration: float, k: int) -> int:
    n = int(rate * duration)
    return max(64 * k, min(n - n % k, MAX_CHUNKS * k))


def scenario(rate: float, k: int) -> dict:
    return {"ttft_s": 0.02, "gap_s": 1.0 / rate, "gap_per": "token", "tokens_per_chunk": k}


# --- sparktriage's client ---------------------------------------------------------------------

async def _ours(sim: SimProcess, rates, duration, reps, k) -> list[dict]:
    settings = ClientSettings(sim.base_url, stall_timeout_s=60)
    rows = []
    async with make_stream_client(settings) as client:
        for rate in rates:
            n = tokens_for(rate, duration, k)
            for rep in range(reps):
                since = sim.reset()
                body = {"model": "bench", "prompt": "x", "max_tokens": n, "stream": True, "ignore_eos": True,
                        "return_token_ids": True, "stream_options": {"include_usage": True},
                        "sim": scenario(rate, k)}
                record = await stream_request(client, settings, "/v1/completions", body)
                metrics = derive(record)
                (truth,) = sim.truths(since).values()
                rows.append(_row("sparktriage", rate, k, rep, n, truth, metrics.output_tokens,
                                 metrics.decode_tok_s, metrics.chunks, record["status"]))
    return rows


def _row(client, rate, k, rep, n, truth, tokens, decode, chunks, status) -> dict:
    error = None if decode is None or not truth.decode_tok_s else decode / truth.decode_tok_s - 1
    return {"client": client, "nominal_tok_s": rate, "tokens_per_chunk": k, "rep": rep, "asked_tokens": n,
            "status": status, "true_tokens": truth.tokens, "true_chunks": truth.chunks,
            "true_decode_tok_s": truth.decode_tok_s, "measured_tokens": tokens, "measured_chunks": chunks,
            "measured_decode_tok_s": decode, "decode_error": error}


# --- vllm bench serve -------------------------------------------------------------------------

def _vllm(sim: SimProcess, rates, duration, reps, k, workdir: Path) -> tuple[list[dict], dict]:
    bed = locate().check()
    order = [(rate, rep) for rate in rates for rep in range(reps)]
    sequence = [{**scenario(rate, k), "fixed_tokens": tokens_for(rate, duration, k)} for rate, _ in order]
    since = sim.reset()
    model = f"vllm-{k}"
    result = workdir / f"vllm-k{k}.json"
    argv = [str(bed.vllm), "bench", "serve", "--backend", "openai", "--base-url", sim.base_url,
            "--endpoint", "/v1/completions", "--model", model, "--tokenizer", str(bed.model()),
            "--dataset-name", "random", "--random-input-len", "16", "--random-output-len", "64",
            "--num-prompts", str(len(order)), "--max-concurrency", "1", "--ignore-eos",
            "--percentile-metrics", "ttft,tpot,itl,e2el", "--disable-tqdm", "--save-result",
            "--save-detailed", "--result-dir", str(workdir), "--result-filename", result.name,
            "--extra-body", json.dumps({"sim": {"sequence": sequence}})]
    started = time.monotonic()
    proc = subprocess.run(argv, capture_output=True, text=True, timeout=3600,
                          env={**os.environ, "HF_HUB_OFFLINE": "1"})
    wall = time.monotonic() - started
    if proc.returncode != 0 or not result.exists():
        raise SystemExit(f"vllm bench serve failed ({proc.returncode}): {proc.stderr[-2000:]}")
    doc = json.loads(result.read_text())
    truths = sorted(sim.truths(since).values(), key=lambda t: int(t.id.rsplit("-", 1)[1]))
    if len(truths) != len(order):
        raise SystemExit(f"expected {len(order)} requests at the simulator, saw {len(truths)}")
    rows = []
    for i, ((rate, rep), truth) in enumerate(zip(order, truths)):
        ttft, latency, tokens = doc["ttfts"][i], doc["latencies"][i], doc["output_lens"][i]
        itl = doc["itls"][i]
        decode = (tokens - 1) / (latency - ttft) if tokens and tokens > 1 and latency > ttft else None
        ok = "ok" if (doc["errors"][i] or "") == "" and ttft else "error"
        row = _row("vllm bench serve", rate, k, rep, tokens_for(rate, duration, k), truth, tokens,
                   decode, len(itl) + 1 if ok == "ok" else 0, ok)
        row["vllm_chunk_count_error"] = (len(itl) + 1) / truth.tokens - 1 if ok == "ok" else None
        row["vllm_mean_itl_s"] = statistics.fmean(itl) if itl else None
        error_lines = (doc["errors"][i] or "").strip().splitlines()
        row["vllm_error"] = error_lines[-1][:300] if error_lines else None
        rows.append(row)
    summary = {"wall_s": wall, "max_output_tokens_per_s": doc.get("max_output_tokens_per_s"),
               "total_output_tokens": doc.get("total_output_tokens"), "completed": doc.get("completed"),
               "failed": doc.get("failed")}
    return rows, summary


# --- analysis ----------------------------------------------------------------------------------

def summarize(rows: list[dict]) -> list[dict]:
    out = []
    keys = sorted({(r["client"], r["tokens_per_chunk"], r["nominal_tok_s"]) for r in rows})
    for client, k, rate in keys:
        group = [r for r in rows if (r["client"], r["tokens_per_chunk"], r["nominal_tok_s"]) == (client, k, rate)]
        errors = [abs(r["decode_error"]) for r in group if r["decode_error"] is not None]
        exact = all(r["measured_tokens"] == r["true_tokens"] for r in group)
        complete = len(errors) == len(group) and all(r["status"] == "ok" for r in group)
        out.append({"client": client, "tokens_per_chunk": k, "nominal_tok_s": rate,
                    "achieved_tok_s": statistics.median(r["true_decode_tok_s"] for r in group),
                    "median_abs_decode_error": statistics.median(errors) if errors else None,
                    "max_abs_decode_error": max(errors) if errors else None,
                    "tokens_exact": exact, "all_ok": complete,
                    "within_tolerance": complete and exact and statistics.median(errors) <= TOLERANCE})
    return out


def capacity(summary: list[dict], client: str, k: int) -> dict:
    rows = sorted((s for s in summary if s["client"] == client and s["tokens_per_chunk"] == k),
                  key=lambda s: s["achieved_tok_s"])
    good = [s for s in rows if s["within_tolerance"]]
    best = max((s["achieved_tok_s"] for s in good), default=None)
    fastest = rows[-1]["achieved_tok_s"] if rows else None
    return {"capacity_tok_s": best, "bounded_by_simulator": bool(rows) and rows[-1]["within_tolerance"],
            "fastest_achieved_tok_s": fastest}


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--out", type=Path, default=ROOT / "benchmarks" / "results" / "bench_client.json")
    parser.add_argument("--rates", default=",".join(map(str, DEFAULT_RATES)))
    parser.add_argument("--duration", type=float, default=2.0, help="seconds per request")
    parser.add_argument("--reps", type=int, default=5)
    parser.add_argument("--skip-vllm", action="store_true")
    args = parser.parse_args()
    rates = [float(r) for r in args.rates.split(",")]
    rows: list[dict] = []
    vllm_runs = {}
    load_before = os.getloadavg()
    with tempfile.TemporaryDirectory() as tmp:
        workdir = Path(tmp)
        config = {"scenarios": {"bench": {}, **{f"vllm-{k}": {} for k in MODES.values()}}}
        with SimProcess(config, workdir / "sim") as sim:
            for name, k in MODES.items():
                print(f"sparktriage client, {k} token(s) per chunk ...", file=sys.stderr)
                rows += asyncio.run(_ours(sim, rates, args.duration, args.reps, k))
                if not args.skip_vllm:
                    print(f"vllm bench serve, {k} token(s) per chunk ...", file=sys.stderr)
                    vllm_rows, vllm_runs[name] = _vllm(sim, rates, args.duration, args.reps, k, workdir)
                    rows += vllm_rows
    summary = summarize(rows)
    clients = ["sparktriage"] + ([] if args.skip_vllm else ["vllm bench serve"])
    caps = {c: {name: capacity(summary, c, k) for name, k in MODES.items()} for c in clients}
    result = {"schema_version": 1, "kind": "bench-client", "created": dt.datetime.now(dt.timezone.utc).isoformat(),
              "tolerance": TOLERANCE, "duration_s": args.duration, "reps": args.reps,
              "machine": {"cpus": os.cpu_count(), "loadavg_before": load_before,
                          "loadavg_after": os.getloadavg()},
              "command": [sys.executable, *sys.argv], "capacity": caps, "summary": summary,
              "vllm_runs": vllm_runs, "requests": rows}
    if not args.skip_vllm:
        ratio = {}
        for name in MODES:
            ours, theirs = caps["sparktriage"][name]["capacity_tok_s"], caps["vllm bench serve"][name]["capacity_tok_s"]
            ratio[name] = (ours / theirs) if ours and theirs else None
        result["capacity_ratio"] = ratio
        k4 = [r for r in rows if r["client"] == "vllm bench serve" and r["tokens_per_chunk"] == 4
              and r["vllm_chunk_count_error"] is not None]
        result["vllm_multi_token_chunks"] = {
            "median_chunk_count_error": statistics.median(r["vllm_chunk_count_error"] for r in k4) if k4 else None,
            "reported_output_tokens_exact": all(r["measured_tokens"] == r["true_tokens"] for r in k4),
            "peak_output_tokens_per_s": vllm_runs.get("k4", {}).get("max_output_tokens_per_s"),
            "true_peak_tok_s": max((r["true_decode_tok_s"] for r in k4), default=None),
        }
        result["sparktriage_tokens_exact"] = all(r["measured_tokens"] == r["true_tokens"]
                                                 for r in rows if r["client"] == "sparktriage")
    args.out.parent.mkdir(parents=True, exist_ok=True)
    args.out.write_text(json.dumps(result, indent=1) + "\n")
    for s in summary:
        err = s["median_abs_decode_error"]
        print(f"{s['client']:>17} k={s['tokens_per_chunk']} {s['nominal_tok_s']:>9.0f} tok/s "
              f"(achieved {s['achieved_tok_s']:>9.0f}): median |error| "
              f"{'-' if err is None else f'{err * 100:.3f}%':>8}  exact={s['tokens_exact']}", file=sys.stderr)
    print(json.dumps({"capacity": caps, "capacity_ratio": result.get("capacity_ratio"),
                      "vllm_multi_token_chunks": result.get("vllm_multi_token_chunks")}, indent=1))
    print(f"written: {args.out}", file=sys.stderr)


if __name__ == "__main__":
    main()
