"""Page one of the report: the diagnosis (issue 14, item 1), as data; renderers only print it.

`build(inputs, sections)` returns the `page_one` record of report.json:

- `deployment`: the deployment in one line (model, nodes, engine build, quantization,
  speculative config), with the parts it was made of;
- `protocol`: how the numbers were measured, in one sentence;
- `results`: rows of metric | result | notes (delivered decode per workload with its interval
  and n, launches and their spread, cold start to serving, context), every number with its
  unit, digits that match its interval, and its share of the roofline ceiling where the
  roofline section has one;
- `findings`: ranked by impact (findings.py);
- `healthy`: one line per area that was measured and is fine;
- `not_measured`: what the run has no evidence for, each with the command that would measure it.

No verdict without evidence: an area with nothing behind it is never "healthy", it is listed
under `not_measured`.
"""

from __future__ import annotations

from statistics import median

from sparktriage.config import speculative_flag
from sparktriage.logs.startup_time import DEFINITION as STARTUP_DEFINITION
from sparktriage.report import findings as F
from sparktriage.report.inputs import RunInputs
from sparktriage.report.readable import count, duration, percent, significant, with_interval
from sparktriage.report.values import as_dict, as_list, integer, text

NOT_RECORDED = "not recorded"


def _chosen_pools(sections: dict) -> list[dict]:
    pools = sections["protocol"].get("across", [])
    sweep = sections["sweep"]
    chosen = sweep["decision"]["depth"] if sweep["status"] == "present" else None
    if chosen is not None and any(p["depth"] == chosen for p in pools):
        return [p for p in pools if p["depth"] == chosen]
    depths = sorted({p["depth"] for p in pools}, key=lambda d: (d is not None, d or 0))
    return [p for p in pools if p["depth"] == depths[0]] if depths else []


def deployment(inputs: RunInputs, sections: dict) -> dict:
    """The deployment in one line, each part `not recorded` when the run does not hold it."""
    doc = inputs.doc("deployment.yaml") or {}
    model_doc = as_dict(doc.get("model"))
    launches = sections["protocol"].get("launches", [])
    path = text(model_doc.get("path"))
    model = (text(model_doc.get("name")) or (path.rstrip("/").rsplit("/", 1)[-1] if path else None)
             or next((l["model"] for l in launches if l["model"]), None) or NOT_RECORDED)
    nodes_list = doc.get("nodes")
    nodes = len(nodes_list) if isinstance(nodes_list, list) and nodes_list else None
    if nodes is None:
        counts = [len(inputs.bundle_nodes(label)) for label in inputs.launches]
        nodes = max(counts) if counts and max(counts) else None
    par = as_dict(doc.get("parallelism"))
    stated = _stated(inputs)
    tp = (integer(par.get("tp")) or integer(par.get("tensor_parallel_size"))
          or integer(stated["config"].get("tensor_parallel_size")))
    version = next((l["server_version"] for l in launches if l["server_version"]), None) or stated["version"]
    image = text(as_dict(doc.get("engine")).get("image"))
    engine = (f"vLLM {version}" if version else "vLLM version not recorded") + (f" ({image})" if image else "")
    quant = (text(model_doc.get("quantization")) or text(stated["config"].get("quantization"))
             or ("none (the log's engine config)" if "quantization" in stated["config"] else NOT_RECORDED))
    spec = speculative_flag.in_document(doc)
    if isinstance(spec, dict):
        speculative = f"{text(spec.get('method')) or '?'}, {spec.get('num_speculative_tokens')} tokens"
        if speculative_flag.SCHEDULE in spec:
            speculative = (f"{text(spec.get('method')) or '?'}, depth set by batch size "
                           f"({speculative_flag.one_stream_depth(spec)} tokens at one stream)")
    elif inputs.doc("deployment.yaml") is not None:
        speculative = "none configured"
    else:
        speculative = NOT_RECORDED
    if sections["sweep"]["status"] == "present":
        depths = [p["depth"] for p in sections["sweep"]["points"]]
        speculative += f"; swept depths {', '.join(map(str, depths))}"
    if nodes is None and stated["world_size"]:
        nodes_text = f"{count(stated['world_size'], 'GPU')} by the log (one per GB10 node)"
    else:
        nodes_text = count(nodes, "node") if nodes else "node count not recorded"
    nodes_text += f" (TP {tp})" if tp else ""
    line = f"{model} on {nodes_text}; {engine}; quantization {quant}; speculative {speculative}"
    return {"line": line, "model": model, "nodes": nodes, "engine": engine, "quantization": quant,
            "speculative": speculative}


def _stated(inputs: RunInputs) -> dict:
    """What the server's own log states (logs.json: the `non-default args` line and the engine
    config), for a run without a deployment file (selfcheck on a customer's server)."""
    for label in inputs.launches:
        logs = as_dict(inputs.launch_doc(label, "logs.json"))
        if logs:
            config = as_dict(logs.get("config"))
            size = integer(as_dict(logs.get("distributed")).get("world_size"))
            if size is None and (integer(config.get("tensor_parallel_size")) or
                                 integer(config.get("pipeline_parallel_size"))):
                size = ((integer(config.get("tensor_parallel_size")) or 1)
                        * (integer(config.get("pipeline_parallel_size")) or 1))
            return {"config": config, "version": text(logs.get("version")), "world_size": size}
    return {"config": {}, "version": None, "world_size": None}


def _launch_meta(inputs: RunInputs) -> dict:
    for label in inputs.launches:
        meta = inputs.launch_doc(label, "launch.json")
        if isinstance(meta, dict) and as_list(meta.get("workloads")):
            return meta
    return {}


def protocol_sentence(inputs: RunInputs, sections: dict) -> str:
    if sections["protocol"]["status"] == "missing":
        return "No delivered-token protocol ran in this run (sparktriage bench --endpoint URL measures it)."
    workloads = [w for w in as_list(_launch_meta(inputs).get("workloads")) if isinstance(w, dict)]
    shape = ""
    if workloads:
        w = workloads[0]
        shape = (f"{integer(w.get('warmup')) or 0} warm-up then {integer(w.get('requests')) or '?'} measured "
                 f"streamed requests asking for {integer(w.get('max_tokens')) or '?'} output tokens, one at a time, ")
    names = sorted({w["name"] for l in sections["protocol"]["launches"] for w in l["workloads"]})
    return (f"Per launch and workload ({', '.join(names)}): {shape}decode rate per request = tokens "
            "after the first ÷ time from first to last token as delivered to the client; intervals are "
            "95% t-intervals over launches (the launch is the unit of replication), over requests "
            "where there is one launch only.")


def _fraction(sections: dict, workload: str, depth) -> dict | None:
    """The roofline row of a pooled rate: its share of the ceiling of its depth."""
    roof = sections["roofline"]
    if roof["status"] != "present":
        return None
    what = workload + ("" if depth is None else f", depth {depth}")
    return next((f for f in roof.get("fractions", []) if f["what"] == what), None)


def results(inputs: RunInputs, sections: dict) -> list[dict]:
    """metric | result | notes rows."""
    rows: list[dict] = []
    protocol = sections["protocol"]
    roof = sections["roofline"]
    shown = _chosen_pools(sections)
    for pool in shown:
        d = pool["decode_tok_s"]
        metric = f"Delivered decode, {pool['workload']}" + ("" if pool["depth"] is None else f" (depth {pool['depth']})")
        row = _fraction(sections, pool["workload"], pool["depth"])
        share = (f"; {percent(row['fraction'])} of the {significant(row['ceiling_tok_s'])} tok/s "
                 "roofline ceiling" + (f" of depth {pool['depth']}" if pool["depth"] else "")
                 + (" (above it: the profile or the acceptance length is off)" if row["fraction"] > 1 else "")
                 if row is not None else "")
        if pool["n_launches"] >= 2:
            result = with_interval(d["mean"], d["ci95_low"], d["ci95_high"], "tok/s") + share
            notes = (f"mean of {pool['n_launches']} launch means (n = {pool['n_launches']} launches)"
                     + ("" if pool["stable"] else "; not stable across launches"))
        else:
            member = next((w for l in protocol["launches"] if l["label"] in pool["launches"]
                           for w in l["workloads"] if w["name"] == pool["workload"]), None)
            s = member["decode_tok_s"] if member else {"mean": None, "ci95_low": None, "ci95_high": None, "n": 0}
            result = with_interval(s["mean"], s["ci95_low"], s["ci95_high"], "tok/s") + share
            notes = f"one launch only ({pool['launches'][0]}): mean of n = {s['n']} requests; launch-to-launch spread not measured"
        rows.append({"metric": metric, "result": result, "notes": notes})
    if protocol["status"] != "missing":
        labels = [l["label"] for l in protocol["launches"]]
        depths = sorted({p["depth"] for p in protocol.get("across", []) if p["depth"] is not None})
        per = f" over {count(len(depths), 'depth')}" if depths else ""
        if shown and shown[0]["n_launches"] >= 2:
            p = shown[0]
            means = [m for m in p["launch_means"] if m is not None]
            sd = p["decode_tok_s"]["stdev"]
            spread = (f"{p['workload']}" + ("" if p["depth"] is None else f" depth {p['depth']}")
                      + f": launch means {significant(min(means))}–{significant(max(means))} tok/s"
                      + (f", sd {significant(sd, 2)} tok/s ({percent(sd / p['decode_tok_s']['mean'])})"
                         if sd is not None and p["decode_tok_s"]["mean"] else ""))
        else:
            spread = "one launch only: launch-to-launch spread not measured"
        rows.append({"metric": "Launches", "result": f"{count(len(labels), 'launch', 'launches')}{per}",
                     "notes": spread})
    ready = [l["ready_s"] for l in sections["startup"].get("launches", []) if l["ready_s"] is not None]
    if ready:
        rows.append({"metric": "Cold start to serving",
                     "result": f"{duration(median(ready))}" + ("" if len(ready) == 1 else
                                                                f" (median; {duration(min(ready))} to {duration(max(ready))})"),
                     "notes": (f"{'one launch only' if len(ready) == 1 else f'over {len(ready)} launches'}; "
                               f"{STARTUP_DEFINITION} (docs/metrics.md)")})
    else:
        rows.append({"metric": "Cold start to serving", "result": "not measured",
                     "notes": "no startup timeline: sparktriage stalls LAUNCH/bundle"})
    rows.append(_context(inputs, sections))
    pause = _longest_pause(inputs)
    if pause is not None:
        rows.append(pause)
    rejected = (sections["sweep"].get("model") or {}).get("rejection")  # issue 38: why it failed
    if sections["sweep"]["status"] == "present" and rejected:
        rows.append({"metric": "Depth model", "result": "rejected: the black-box rule decided",
                     "notes": rejected})
    return rows


def _context(inputs: RunInputs, sections: dict) -> dict:
    prompt = None
    for label in inputs.launches:
        for record in inputs.records(f"launches/{label}/requests.jsonl") or []:
            prompt = integer(as_dict(record.get("final_usage")).get("prompt_tokens"))
            if prompt is not None:
                break
        if prompt is not None:
            break
    meta = _launch_meta(inputs)
    w = next((w for w in as_list(meta.get("workloads")) if isinstance(w, dict)), {})
    serve = as_dict((inputs.doc("deployment.yaml") or {}).get("serve"))
    max_len = (integer(serve.get("max_model_len")) or integer(_stated(inputs)["config"].get("max_model_len"))
               or integer(meta.get("max_model_len")))
    parts = [f"prompt {prompt} tokens" if prompt is not None else "prompt length not recorded",
             _delivered(inputs, integer(w.get("max_tokens"))), "one request at a time"]
    notes = f"max model length {max_len} tokens" if max_len else "max model length not recorded"
    cache = as_dict(as_dict(as_dict(as_dict(inputs.doc("preflight.json")).get("metrics"))
                            .get("config_info")).get("vllm:cache_config_info"))
    label = text(cache.get("kv_cache_size_tokens")) or ""  # Prometheus labels are strings
    size = int(label) if label.isdigit() and len(label) <= 15 else None
    if size:
        notes += (f"; KV cache {size:,} tokens"
                  + (f", {text(cache.get('cache_dtype'))}" if text(cache.get("cache_dtype")) else "")
                  + " (the server's vllm:cache_config_info)")
    return {"metric": "Context", "result": ", ".join(parts), "notes": notes}


def _longest_pause(inputs: RunInputs) -> dict | None:
    """The longest silence between two chunks of one answer, once it began (bench.json
    `max_gap_s`): a client sees the answer freeze that long."""
    gaps = [(r["max_gap_s"], label, as_dict(w).get("name"), r.get("index"))
            for label in inputs.launches
            for w in as_list(as_dict(inputs.launch_doc(label, "bench.json")).get("workloads"))
            for r in as_list(as_dict(w).get("requests"))
            if isinstance(r, dict) and isinstance(r.get("max_gap_s"), (int, float))]
    if not gaps:
        return None
    gap, label, workload, index = max(gaps, key=lambda g: g[0])
    return {"metric": "Longest pause mid-stream", "result": f"{significant(gap, 2)} s",
            "notes": f"{label} {workload} request {index}; the longest wait between two chunks "
                     f"of one answer once it began, over {len(gaps)} requests"}


def _delivered(inputs: RunInputs, asked: int | None) -> str:
    """Output tokens that arrived per measured request (what the client got), beside what was
    asked when they differ: a server answering 1 token of 128 must not read as 128."""
    got = [integer(r.get("output_tokens")) for label in inputs.launches
           for w in as_list(as_dict(inputs.launch_doc(label, "bench.json")).get("workloads"))
           for r in as_list(as_dict(w).get("requests"))
           if isinstance(r, dict) and not r.get("warmup") and r.get("status") == "ok"]
    got = [g for g in got if g is not None]
    if not got:
        return "no output delivered" + (f" ({asked} tokens asked per request)" if asked else "")
    low, high = min(got), max(got)
    delivered = f"{count(low, 'output token')} delivered per request" if low == high else \
        f"{low} to {high} output tokens delivered per request"
    return delivered + (f" ({asked} asked)" if asked and (low, high) != (asked, asked) else "")


def _healthy_probe(sections: dict) -> list[str]:
    probe = sections["probe"]
    if probe["status"] == "missing":
        return []
    every = probe["launches"]
    launches = [l for l in every if l["verdict"] in ("healthy", "healthy-uncalibrated")]
    if not launches:
        return []
    families = sorted({f["name"] for l in launches for f in l["families"] if f["status"] == "ok"})
    against = ("against the baseline" if all(l["baseline"] for l in launches)
               else "without a baseline (uncalibrated)")
    if len(launches) == len(every):
        return [f"no FP4 garbage: {count(len(families), 'probe family', 'probe families')} passed {against} "
                f"in {count(len(launches), 'launch', 'launches')}"]
    depth_of = F.depth_of_launches(sections)
    depths = sorted({depth_of[l["label"]] for l in launches if l["label"] in depth_of})
    where = f" (depths {', '.join(map(str, depths))})" if depths else ""
    return [f"output healthy in {len(launches)} of {count(len(every), 'probed launch', 'probed launches')}{where}: "
            f"{count(len(families), 'probe family', 'probe families')} passed {against}"]


def _healthy_reconcile(sections: dict) -> list[str]:
    rec = sections["reconciliation"]
    judged = [r for r in rec.get("launches", []) if r.get("verdict")]
    ok = [r for r in judged if r["verdict"] == "consistent"]
    if not ok:
        return []
    if len(ok) == len(judged):
        return [f"delivered vs logged: consistent in {count(len(ok), 'launch', 'launches')}"]
    return [f"delivered vs logged: consistent in {len(ok)} of {len(judged)} reconciled launches "
            f"({', '.join(r['label'] for r in ok)})"]


def not_measured(sections: dict) -> list[dict]:
    out = []
    names = {"probe": "Output quality (garbage probe)", "startup": "Startup timeline and stalls",
             "protocol": "Delivered decode rate", "reconciliation": "Delivered vs logged",
             "sweep": "Speculative depth", "roofline": "Roofline ceiling",
             "deployment": "Deployment", "environment": "Environment"}
    for key, what in names.items():
        section = sections[key]
        if section["status"] == "missing":
            out.append({"what": what, "why": section["reason"], "command": section["produce_with"]})
    rec = sections["reconciliation"]
    if rec["status"] != "missing":
        given = [r["verdict"] for r in rec["launches"] if r.get("verdict")]
        if given and all(v in ("not_measured", "insufficient_data", "no_overlap") for v in given):
            why = next((r["reasons"][-1] for r in rec["launches"] if r["reasons"]),
                       "nothing on the server's side to compare with")
            out.append({"what": "Delivered vs logged", "why": why,
                        "command": "sparktriage bench --log FILE --metrics URL"})
    pools = sections["protocol"].get("across", [])
    if pools and not any(p["n_launches"] >= 2 for p in pools):
        out.append({"what": "Launch-to-launch spread", "why": "one launch per configuration",
                    "command": "sparktriage sweep DEPLOY.yaml --depths D --min-launches-per-depth 3"})
    startup = sections["startup"]
    if startup["status"] != "missing" and not any(l["classified"] for l in startup["launches"]):
        out.append({"what": "Startup stalls", "why": "timeline only, stalls not classified",
                    "command": "sparktriage stalls LAUNCH/bundle"})
    return out


def build(inputs: RunInputs, sections: dict) -> dict:
    """The page-one record of report.json."""
    configured = F.configured_depth(inputs.doc("deployment.yaml"))
    sweep_findings, sweep_ok = F.sweep(sections, configured)
    stall_findings, stall_ok = F.stalls(sections)
    unstable, stable_ok = F.instability(sections)
    found = (F.garbage(sections) + F.unchecked_gate(sections) + sweep_findings + stall_findings
             + F.compile_cache(sections)
             + F.traps(inputs.doc("reproduce.json")) + unstable
             + F.client({l: inputs.launch_doc(l, "selfcheck-findings.json") for l in inputs.launches}))
    healthy = _healthy_probe(sections) + stall_ok + sweep_ok + stable_ok + _healthy_reconcile(sections)
    return {"deployment": deployment(inputs, sections), "protocol": protocol_sentence(inputs, sections),
            "results": results(inputs, sections), "findings": F.ranked(found), "healthy": healthy,
            "not_measured": not_measured(sections)}


__all__ = ["build"]
