"""Protocol results: per launch, across launches (the launch is the unit of replication).

Per launch the bench document is used as the bench stage wrote it (`bench.json`); when only the
raw `requests.jsonl` is there it is derived from it with the same code. Across launches, the
launches of one workload are pooled only when their checked metadata agree (model, server
version, the workload's request shape, and the sweep depth when a sweep assigned one); each
pool gets the mean of launch means with a t-interval over launches, the within- and
between-launch variances and a stability verdict with reasons (stats.summary). Launches that
differ are reported side by side, never pooled, and the report says why.
"""

from __future__ import annotations

import hashlib
import json
import math

from sparktriage.bench.records import token_account
from sparktriage.bench.summary import build_bench_document
from sparktriage.report.inputs import RunInputs
from sparktriage.report.values import as_dict, as_list, integer, num, require, text
from sparktriage.stats.compare import check_poolable
from sparktriage.stats.summary import aggregate_launches

WINDOW_S = 10.0  # delivered-token windows, the length of vLLM's periodic stats interval
_SHAPE_KEYS = ("api", "prompt", "messages", "max_tokens", "temperature", "ignore_eos", "extra_body")


def _stat(doc: dict) -> dict:
    return {k: num(doc.get(k)) for k in ("mean", "ci95_low", "ci95_high", "median", "mad",
                                         "stdev")} | {"n": integer(doc.get("n")) or 0}


def _bench(inputs: RunInputs, label: str) -> tuple[dict | None, str | None]:
    rel = f"{inputs.folder(label)}/bench.json"
    doc = inputs.doc(rel)
    if doc is not None:
        require(doc, "workloads", list, rel)
        return doc, rel
    records = inputs.launch_records(label)
    if records is None:
        return None, None
    meta = inputs.launch_doc(label, "launch.json") or {}
    caps = dict(inputs.launch_doc(label, "capabilities.json") or {})
    caps.pop("schema_version", None)
    return build_bench_document(meta, records, caps), f"{inputs.folder(label)}/requests.jsonl"


def _workload_shape(meta: dict, name: str) -> str:
    for workload in as_list(meta.get("workloads")):
        if isinstance(workload, dict) and workload.get("name") == name:
            shape = {k: workload.get(k) for k in _SHAPE_KEYS}
            return hashlib.sha256(json.dumps(shape, sort_keys=True, default=str).encode()).hexdigest()[:12]
    return "unknown"


def launch_results(inputs: RunInputs) -> list[dict]:
    """One entry per launch that has protocol results, in label order."""
    results = []
    for label in inputs.launches:
        bench, source = _bench(inputs, label)
        if bench is None:
            continue
        meta = inputs.launch_doc(label, "launch.json") or {}
        workloads = []
        for w in as_list(bench.get("workloads")):
            if not isinstance(w, dict):
                continue
            summary = as_dict(w.get("summary"))
            samples = [num(r.get("decode_tok_s")) for r in as_list(w.get("requests"))
                       if isinstance(r, dict) and not r.get("warmup") and r.get("status") == "ok"]
            workloads.append({
                "name": text(w.get("name")) or "?",
                "decode_tok_s": _stat(as_dict(summary.get("decode_tok_s"))),
                "ttft_s": _stat(as_dict(summary.get("ttft_s"))),
                "e2e_tok_s": _stat(as_dict(summary.get("e2e_tok_s"))),
                "counts": {k: integer(v) or 0 for k, v in as_dict(summary.get("counts")).items()},
                "output_tokens": integer(summary.get("output_tokens")),
                "max_tokens_per_chunk": integer(summary.get("max_tokens_per_chunk")),
                "token_sources": [s for s in as_list(summary.get("token_sources")) if isinstance(s, str)],
                "warnings": [s for s in as_list(w.get("warnings")) if isinstance(s, str)],
                "samples": [s for s in samples if s is not None],
                "shape": _workload_shape(meta, text(w.get("name")) or ""),
            })
        results.append({
            "label": label,
            "source": source,
            "model": text(bench.get("model")) or text(meta.get("model")),
            "server_version": text(bench.get("server_version")) or text(meta.get("server_version")),
            "endpoint": text(bench.get("endpoint")) or text(meta.get("endpoint")),
            "workloads": workloads,
        })
    return results


def across_launches(launches: list[dict], depth_of: dict[str, int | None]) -> list[dict]:
    """Pools of compatible launches per workload, each with its launch-level aggregate."""
    pools: dict[tuple, list[tuple[str, dict]]] = {}
    for launch in launches:
        for w in launch["workloads"]:
            key = (w["name"], launch["model"], launch["server_version"], w["shape"],
                   depth_of.get(launch["label"]))
            pools.setdefault(key, []).append((launch["label"], w))
    out = []
    by_workload: dict[str, int] = {}
    for key in sorted(pools, key=lambda k: (k[0], str(k[4]), str(k[1]), str(k[2]), k[3])):
        members = pools[key]
        agg = aggregate_launches([w["samples"] for _, w in members])
        by_workload[key[0]] = by_workload.get(key[0], 0) + 1
        out.append({
            "workload": key[0], "model": key[1], "server_version": key[2], "shape": key[3],
            "depth": key[4], "launches": [label for label, _ in members],
            "launch_means": [w["decode_tok_s"]["mean"] for _, w in members],
            "n_launches": agg.launches,
            "decode_tok_s": {"mean": agg.across.mean, "ci95_low": agg.across.ci95_low,
                             "ci95_high": agg.across.ci95_high, "median": agg.across.median,
                             "stdev": agg.across.stdev, "n": agg.across.n},
            "within_variance": agg.within_variance, "between_variance": agg.between_variance,
            "stable": agg.stable, "reasons": list(agg.reasons), "notes": list(agg.notes),
        })
    for name, count in by_workload.items():
        if count < 2:
            continue
        metadata = [{"model": p["model"], "server_version": p["server_version"],
                     "request_shape": p["shape"], "sweep_depth": p["depth"]}
                    for p in out if p["workload"] == name]
        reasons = check_poolable(metadata, ("model", "server_version", "request_shape", "sweep_depth"))
        for pool in out:
            if pool["workload"] == name:
                pool["notes"].append(f"{name}: {count} groups of launches are not pooled ("
                                     + "; ".join(reasons) + ")")
    return out


def delivered_series(inputs: RunInputs, label: str) -> list[dict]:
    """Tokens delivered to the client per 10 s window, from the raw chunk arrival times.

    Window boundaries are counted from the first request's send time; a window's rate is the
    tokens whose chunk arrived in it ÷ 10 s (the last, partial window ÷ its actual length).
    Warm-up requests are included: the server did serve them, and the log's windows count them.
    """
    records = inputs.launch_records(label)
    if not records:
        return []
    arrivals: list[tuple[float, int]] = []
    for record in records:
        sent = num(record.get("sent_unix"))
        if sent is None or record.get("type", "request") != "request":
            continue
        account = token_account(record)
        for chunk, count in zip(as_list(record.get("chunks")), account.per_chunk):
            t = num(chunk.get("t")) if isinstance(chunk, dict) else None
            if count and t is not None:
                arrivals.append((sent + t, count))
    if not arrivals:
        return []
    start = min(num(r.get("sent_unix")) for r in records if num(r.get("sent_unix")) is not None)
    end = max(t for t, _ in arrivals)
    windows = [0] * (int(math.floor((end - start) / WINDOW_S)) + 1)
    for t, count in arrivals:
        windows[int((t - start) // WINDOW_S)] += count
    out = []
    for i, n in enumerate(windows):
        length = min(WINDOW_S, max(end - (start + i * WINDOW_S), 1.0))  # the last one is partial
        out.append({"t": round(i * WINDOW_S, 3), "tok_s": n / length, "start_unix": start + i * WINDOW_S})
    return out


def request_spans(inputs: RunInputs, label: str, origin: float) -> list[list[float]]:
    """Each request's [sent, last byte] in seconds from `origin` (warm-ups included, as in
    `delivered_series`): when a request was in flight, for the delivered-vs-logged plot."""
    out = []
    for record in inputs.launch_records(label) or []:
        sent, end = num(record.get("sent_unix")), num(record.get("t_end"))
        if record.get("type", "request") == "request" and sent is not None and end is not None:
            out.append([round(sent - origin, 3), round(sent + end - origin, 3)])
    return sorted(out)

