"""The bench document of one launch, derived from raw request records (the bench JSON contract).

Top level: schema_version, endpoint, model, workloads. Per workload: name, requests (each with
warmup, status, output_tokens, ttft_s, decode_tok_s, e2e_tok_s, chunks and more), summary with
decode_tok_s {mean, ci95_low, ci95_high, median, n} over the non-warm-up ok requests, plus the
same for TTFT and end-to-end rate, the error/incomplete bucket with reasons, and warnings.
"""

from __future__ import annotations

from collections import Counter

from sparktriage.bench.records import derive
from sparktriage.stats.summary import summarize


def _stat(values: list[float]) -> dict:
    s = summarize(values)
    return {"mean": s.mean, "ci95_low": s.ci95_low, "ci95_high": s.ci95_high,
            "median": s.median, "mad": s.mad, "stdev": s.stdev, "n": s.n}


def _workload_document(name: str, records: list[dict], caps: dict | None) -> dict:
    requests = []
    for record in records:
        metrics = derive(record).as_dict()
        requests.append({"index": record.get("index"), "warmup": bool(record.get("warmup")),
                         "sent_at": record.get("sent_at"), **metrics})
    measured = [r for r in requests if not r["warmup"]]
    ok = [r for r in measured if r["status"] == "ok"]
    failed = [r for r in requests if r["status"] != "ok"]
    warnings: list[str] = []
    if caps:
        warnings.extend(caps.get("notes", []))
    short = [r for r in ok if r["short"]]
    if short:
        warnings.append(
            f"{len(short)} of {len(ok)} requests stopped early although ignore_eos was asked: "
            "the server does not honour ignore_eos, so output lengths differ"
        )
    disagreeing = [r for r in requests if r["disagreements"]]
    if disagreeing:
        first = disagreeing[0]["disagreements"][0]
        warnings.append(
            f"token-count sources disagree in {len(disagreeing)} requests (e.g. {first})"
        )
    burst = [r for r in ok if r["decode_tok_s"] is None and r["chunks"] > 1]
    if burst:
        warnings.append(
            f"{len(burst)} of {len(ok)} requests delivered every token in one burst (one read): "
            "no decode interval, so no decode rate; the server or a proxy buffered the stream"
        )
    held = [r for r in ok if r["decode_tok_s"] is not None
            and 2 * r["first_read_tokens"] > r["output_tokens"]]
    if held:
        warnings.append(
            f"{len(held)} of {len(ok)} requests delivered more than half their tokens in one burst "
            "with the first (one read): they count with it (produced before anything arrived), "
            "and the decode rate rests on the tokens after that read"
        )
    inexact = [r for r in ok if not r["exact"]]
    if inexact:
        sources = ", ".join(sorted({r["token_source"] for r in inexact}))
        warnings.append(f"{len(inexact)} requests have inexact per-chunk token counts ({sources})")
    if failed:
        reasons = Counter(r["status"] + ": " + (r["reason"] or "?") for r in failed)
        top = "; ".join(f"{n}x {reason}" for reason, n in reasons.most_common(3))
        warnings.append(f"{len(failed)} requests failed ({top})")
    multi = max((r["max_tokens_per_chunk"] for r in ok), default=0)
    return {
        "name": name,
        "requests": requests,
        "summary": {
            "decode_tok_s": _stat([r["decode_tok_s"] for r in ok if r["decode_tok_s"] is not None]),
            "ttft_s": _stat([r["ttft_s"] for r in ok if r["ttft_s"] is not None]),
            "e2e_tok_s": _stat([r["e2e_tok_s"] for r in ok if r["e2e_tok_s"] is not None]),
            "output_tokens": sum(r["output_tokens"] for r in ok),
            "counts": {
                "measured": len(measured),
                "warmup": len(requests) - len(measured),
                "ok": len(ok),
                "error": sum(1 for r in measured if r["status"] == "error"),
                "incomplete": sum(1 for r in measured if r["status"] == "incomplete"),
            },
            "max_tokens_per_chunk": multi,
            "token_sources": sorted({r["token_source"] for r in ok}),
        },
        "failed": [
            {"index": r["index"], "warmup": r["warmup"], "status": r["status"],
             "reason": r["reason"], "output_tokens": r["output_tokens"]}
            for r in failed
        ],
        "capabilities": caps,
        "warnings": warnings,
    }


def build_bench_document(launch: dict, records: list[dict], capabilities: dict) -> dict:
    """bench.json content (without schema_version, which the writer adds)."""
    order: list[str] = []
    by_name: dict[str, list[dict]] = {}
    for record in records:
        if record.get("type") != "request" or record.get("purpose") == "negotiate":
            continue
        name = str(record.get("workload"))
        if name not in by_name:
            order.append(name)
            by_name[name] = []
        by_name[name].append(record)
    for workload in launch.get("workloads", []):  # workloads that produced no record yet
        if workload.get("name") not in by_name:
            order.append(workload["name"])
            by_name[workload["name"]] = []
    return {
        "kind": "bench",
        "endpoint": launch.get("endpoint"),
        "model": launch.get("model"),
        "server_version": launch.get("server_version"),
        "workloads": [_workload_document(n, by_name[n], capabilities.get(n)) for n in order],
    }
