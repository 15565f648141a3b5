"""Report sections read from other stages' documents: deployment, environment, startup, probe
and the delivered-vs-logged reconciliation.

Each builder returns a plain dict with a `status` (`present`, `partial` when only some
launches have the document, `missing`) and, for what is missing, the file that would hold it
and the command that produces it. Contract fields are read by their documented names (issues
3, 4, 5, 6); anything else in those documents is ignored.
"""

from __future__ import annotations

from typing import Any

from sparktriage.logs.startup_time import span as startup_span
from sparktriage.report.environment import run_table, summary_rows
from sparktriage.report.inputs import RunInputs
from sparktriage.report.probe_text import family_entry
from sparktriage.report.values import (as_dict, as_list, first_num, flatten, num, require,
                                       scalar, seconds, text)

PRODUCERS = {
    "deployment.yaml": "sparktriage launch DEPLOY.yaml (or session run) records the deployment",
    "bundle": "sparktriage launch, or sparktriage collect --pid PID around a running server",
    "stalls.json": "sparktriage stalls LAUNCH/bundle",
    "logs.json": "sparktriage logs LAUNCH/server.log",
    "probe.json": "sparktriage probe --endpoint URL",
    "bench.json": "sparktriage bench --endpoint URL --out RUN_DIR",
    "reconcile.json": "sparktriage bench --log FILE --metrics URL",
    "sweep.json": "sparktriage sweep DEPLOY.yaml --depths 0,1,2,3,4",
}


def missing(reason: str, files: list[str], producer: str) -> dict:
    return {"status": "missing", "reason": reason, "files": files,
            "produce_with": PRODUCERS.get(producer, producer)}


def status_of(present: int, total: int) -> str:
    return "missing" if present == 0 else "present" if present == total else "partial"


def _lines(value: Any, limit: int = 8) -> list[str]:
    """Evidence of any shape as short lines of text."""
    out: list[str] = []
    for item in value if isinstance(value, list) else [value] if value is not None else []:
        if isinstance(item, str):
            out.append(item)
        elif isinstance(item, dict):
            head = text(item.get("text")) or text(item.get("description")) or text(item.get("what"))
            rest = [f"{k}={scalar(v)}" for k, v in item.items()
                    if k not in ("text", "description", "what") and not isinstance(v, (dict, list))]
            out.append("; ".join(([head] if head else []) + rest))
        else:
            out.append(scalar(item))
        if len(out) >= limit:
            break
    return [line[:300] for line in out]


def deployment_section(inputs: RunInputs) -> dict:
    doc = inputs.doc("deployment.yaml")
    if doc is None:
        return missing("no deployment.yaml: this run did not launch the server itself",
                       ["deployment.yaml"], "deployment.yaml")
    rows = [(k, v) for k, v in flatten(doc) if k != "schema_version"]
    section = {"status": "present", "source": "deployment.yaml", "rows": rows}
    accepted = inputs.doc("client-code.json")
    if isinstance(accepted, dict) and isinstance(accepted.get("items"), list):
        # what the launch ran by the client's choice, as the consultant accepted it by name
        section["client_code"] = [{"name": str(i.get("name")), "what": str(i.get("what"))}
                                  for i in accepted["items"] if isinstance(i, dict)][:50]
    return section


def environment_section(inputs: RunInputs) -> dict:
    launches = []
    for label in inputs.launches:
        nodes = inputs.bundle_nodes(label)
        if not nodes:
            continue
        captures, summary, files = {}, {}, []
        for node in nodes:
            rel = f"launches/{label}/bundle/nodes/{node}/environment.json"
            env = inputs.doc(rel)
            if env is not None:
                captures[node] = dict(flatten({k: v for k, v in env.items() if k != "schema_version"}))
                summary[node] = summary_rows(env)
                files.append(f"data/{rel}")
        keys = sorted({k for rows in captures.values() for k in rows})
        differs = [{"key": k, "values": {n: captures[n].get(k, "(absent)") for n in captures}}
                   for k in keys if len({captures[n].get(k, "(absent)") for n in captures}) > 1]
        diff_doc = inputs.doc(f"launches/{label}/bundle/environment-diff.json")
        launches.append({
            "label": label, "nodes": nodes, "summary": summary, "full_capture": files,
            "settings_captured": {n: len(rows) for n, rows in captures.items()},
            "differs": differs if len(captures) > 1 else [],
            "collector_diff": [(k, v) for k, v in flatten(diff_doc or {}) if k != "schema_version"],
        })
    total = len(inputs.launches)
    if not launches:
        return missing("no evidence bundle with environment captures",
                       [f"launches/{l}/bundle/nodes/<node>/environment.json" for l in inputs.launches[:1]]
                       or ["launches/<label>/bundle/"], "bundle")
    return {"status": status_of(len(launches), total), "launches": launches,
            "tables": run_table(launches)}


def _phase(item: dict, t0: float) -> dict | None:
    start, end = seconds(item.get("start")), seconds(item.get("end"))
    duration = num(item.get("duration_s"))
    if start is None:
        return None
    if end is None and duration is not None:
        end = start + duration
    return {"name": text(item.get("name")) or "?", "node": text(item.get("node")),
            "start": start - t0, "end": None if end is None else end - t0,
            "duration_s": duration if duration is not None else (None if end is None else end - start)}


def _finding(item: dict, t0: float) -> dict:
    verdict = as_dict(item.get("verdict"))
    start, end = seconds(item.get("start")), seconds(item.get("end"))
    fix = verdict.get("fix")
    return {
        "kind": text(item.get("kind")) or "stall", "node": text(item.get("node")),
        "phase": text(item.get("phase")),
        "start": None if start is None else start - t0, "end": None if end is None else end - t0,
        "duration_s": num(item.get("duration_s")),
        "id": text(verdict.get("id")) or "unknown", "confidence": verdict.get("confidence"),
        "evidence": _lines(verdict.get("evidence")),
        "alternatives": [{"id": text(a.get("id")) or "?", "why_not": text(a.get("why_not")) or ""}
                         for a in as_list(verdict.get("alternatives")) if isinstance(a, dict)],
        "fix": "; ".join(_lines(fix, 4)) if not isinstance(fix, str) else fix,
    }


def startup_section(inputs: RunInputs) -> dict:
    launches = []
    for label in inputs.launches:
        rel = f"launches/{label}/stalls.json"
        doc = inputs.doc(rel)
        source = rel
        if doc is None:
            rel = f"launches/{label}/logs.json"
            doc, source = inputs.doc(rel), rel
            if doc is None:
                continue
        phases_raw = [p for p in as_list(require(doc, "phases", list, rel)) if isinstance(p, dict)]
        findings_raw = [f for f in as_list(doc.get("findings")) if isinstance(f, dict)]
        if source.endswith("stalls.json"):
            require(doc, "findings", list, rel)
        starts = [s for s in (seconds(x.get("start")) for x in phases_raw + findings_raw) if s is not None]
        t0 = min(starts) if starts else 0.0
        phases = [p for p in (_phase(x, t0) for x in phases_raw) if p is not None]
        logs = inputs.launch_doc(label, "logs.json") or {}
        launches.append({
            "label": label, "source": source, "classified": source.endswith("stalls.json"),
            "t0_unix": t0 if starts and t0 > 1e9 else None, "phases": phases,
            "findings": [_finding(f, t0) for f in findings_raw],
            # the one startup-time definition (logs/startup_time.py), over the phases shown
            "ready_s": startup_span((p["start"], p["end"]) for p in phases),
            "origin": "the server's first startup log line (earliest node)",
            "reported": {k: num(v) for k, v in as_dict(logs.get("reported")).items() if num(v) is not None},
            "version": text(logs.get("version")),
        })
    if not launches:
        return missing("no startup timeline (neither stalls.json nor logs.json)",
                       ["launches/<label>/stalls.json"], "stalls.json")
    status = status_of(sum(1 for l in launches if l["classified"]), len(inputs.launches))
    return {"status": "partial" if status == "missing" else status, "launches": launches}


def probe_section(inputs: RunInputs) -> dict:
    launches = []
    for label in inputs.launches:
        rel = f"launches/{label}/probe.json"
        doc = inputs.doc(rel)
        if doc is None:
            continue
        families = [family_entry(fam) for fam in as_list(require(doc, "families", list, rel))
                    if isinstance(fam, dict)]
        baseline = doc.get("baseline")
        launches.append({
            "label": label, "verdict": text(require(doc, "verdict", str, rel)) or "unknown",
            "pattern": text(doc.get("pattern")), "families": families,
            "baseline": None if baseline is None else (baseline if isinstance(baseline, str)
                                                       else "; ".join(_lines(baseline, 3))),
            "tokens_spent": num(doc.get("tokens_spent")), "wall_s": num(doc.get("wall_s")),
        })
    if not launches:
        return missing("no garbage probe was run", ["launches/<label>/probe.json"], "probe.json")
    return {"status": status_of(len(launches), len(inputs.launches)), "launches": launches}


_TIME_KEYS = ("t", "time", "end", "start", "timestamp", "at")
_VALUE_KEYS = ("value", "tok_s", "generation_tok_s", "throughput", "avg_generation_throughput",
               "generation", "rate")


def logged_windows(doc: dict | None) -> list[dict]:
    """The log's generation-throughput windows as [{t_unix, tok_s}], when the document lists them.

    The logs document lists them under `throughput.windows` ({end, start, generation, ...});
    `throughput.generation.windows` is only their count. Older documents kept the list there."""
    throughput = as_dict(as_dict(doc).get("throughput"))
    series = throughput.get("windows")
    if not isinstance(series, list):
        series = as_list(as_dict(throughput.get("generation")).get("windows"))
    out = []
    for item in series:
        if isinstance(item, dict):
            t = next((seconds(item.get(k)) for k in _TIME_KEYS if seconds(item.get(k)) is not None), None)
            v = first_num(item, *_VALUE_KEYS)
            start = seconds(item.get("start")) if "end" in item else None
            if t is not None and v is not None:
                out.append({"t_unix": t, "tok_s": v,
                            "start_unix": start if start is not None and start < t else None,
                            "start_estimated": item.get("start_estimated") is True})
    return sorted(out, key=lambda w: w["t_unix"])


def _sentences(rec: dict | None) -> list[dict]:
    """The reconciliation's explanation sentences as typed data ({code, text, cites}), never
    `key=value` strings; a sentence of an older document without cites keeps an empty one."""
    out = []
    for item in as_list(as_dict(rec).get("reasons")):
        if isinstance(item, dict) and text(item.get("text")):
            cites = {k: v for k, v in as_dict(item.get("cites")).items()
                     if isinstance(v, (int, float, str, bool)) or v is None}
            out.append({"code": text(item.get("code")) or "?", "text": text(item.get("text"))[:400],
                        "cites": cites})
    return out[:12]


def reconciliation_section(inputs: RunInputs, launches: list[dict]) -> dict:
    """Delivered (client) against logged (server log, metrics) per launch."""
    delivered = {l["label"]: l for l in launches}
    rows = []
    for label in inputs.launches:
        logs = inputs.launch_doc(label, "logs.json")
        rec = inputs.launch_doc(label, "reconcile.json")
        if logs is None and rec is None:
            continue
        gen = as_dict(as_dict(as_dict(logs).get("throughput")).get("generation"))
        spec = as_dict(as_dict(logs).get("spec_decode"))
        # Never an average over workloads: the delivered mean is one workload's, and says which
        # (the fastest, so the log's peak is compared with the most it could be a mean of).
        means = {w["name"]: w["decode_tok_s"]["mean"]
                 for w in delivered.get(label, {}).get("workloads", [])
                 if w["decode_tok_s"]["mean"] is not None}
        workload = max(means, key=means.get) if means else None
        delivered_mean = means[workload] if workload else None
        peak, mean_active = num(gen.get("peak")), num(gen.get("mean_active"))
        peak_source = "logs.json (the whole log)"
        # one ratio in the report: when the reconciliation has one, the table shows the same
        # peak (windows overlapping the protocol), delivered mean and workload its sentences cite
        rec_d, rec_log = as_dict(as_dict(rec).get("delivered")), as_dict(as_dict(rec).get("log"))
        rec_ratio = num(as_dict(rec).get("ratio_log_peak_to_delivered_mean"))
        if rec_ratio is not None and num(rec_log.get("peak_tok_s")) is not None \
                and num(rec_d.get("decode_tok_s_mean")) is not None and text(rec_d.get("decode_workload")):
            peak = num(rec_log.get("peak_tok_s"))
            workload = text(rec_d.get("decode_workload"))
            delivered_mean = num(rec_d.get("decode_tok_s_mean"))
            peak_source = "reconcile.json (log windows overlapping the protocol)"
        rows.append({
            "label": label,
            "delivered_mean": delivered_mean, "delivered_workload": workload,
            "delivered_by_workload": means,
            "logged_mean": num(gen.get("mean")), "logged_mean_active": mean_active,
            "logged_peak": peak, "peak_source": peak_source,
            "peak_over_delivered": peak / delivered_mean if peak and delivered_mean else None,
            "active_over_delivered": (mean_active / delivered_mean
                                      if mean_active and delivered_mean else None),
            "acceptance_length": num(spec.get("mean_acceptance_length")),
            "verdict": text(as_dict(rec).get("verdict")),
            "reasons": [s["text"] for s in _sentences(rec)],
            "explanation": _sentences(rec),
            "sources": [s for s, d in ((f"launches/{label}/logs.json", logs),
                                       (f"launches/{label}/reconcile.json", rec)) if d is not None],
        })
    if not rows:
        return missing("no server log summary or reconciliation for any launch",
                       ["launches/<label>/logs.json", "launches/<label>/reconcile.json"],
                       "logs.json")
    return {"status": status_of(len(rows), len(inputs.launches)), "launches": rows}
