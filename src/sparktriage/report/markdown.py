"""Render the report document as Markdown (a pure function: document in, text out).

Plots are linked as PNG files under `plots/` in the report folder. Text that came from the run
directory is escaped so that it cannot break a table or inject HTML into a Markdown viewer.
"""

from __future__ import annotations

from sparktriage.report.sweep import HEADERS as SWEEP_HEADERS, sweep_lines, sweep_rows
from sparktriage.report.format import (TIME_ZONE_NOTE, when, cell, delivered_label, interval, number,
                                       percent, pool_notes, readable_key, seconds,
                                       stability_words, with_provisional)
from sparktriage.report.values import fixed
from sparktriage.report.probe_text import NUMBER_HEADERS, group_title
from sparktriage.report.probe_text import groups as probe_groups
from sparktriage.report.environment import cross_node_rows

_ESCAPES = str.maketrans({"|": "\\|", "<": "&lt;", ">": "&gt;", "\n": " ", "\r": " ", "`": "'"})


def esc(value) -> str:
    return cell(value).translate(_ESCAPES)


def table(header: list[str], rows: list[list]) -> list[str]:
    lines = ["| " + " | ".join(header) + " |", "|" + "|".join("---" for _ in header) + "|"]
    lines += ["| " + " | ".join(esc(c) for c in row) + " |" for row in rows]
    return lines + [""]


def _missing(section: dict) -> list[str]:
    return [f"**Missing.** {esc(section['reason'])}. It would be in "
            f"{', '.join('`' + f + '`' for f in section['files'])}; produce it with: "
            f"{esc(section['produce_with'])}.", ""]


def _plot(document: dict, name: str) -> list[str]:
    for plot in document["plots"]:
        if plot["file"] == f"plots/{name}":
            return [f"![{esc(plot['title'])}]({plot['file']})", "", f"*{esc(plot['caption'])}*", ""]
    return []


def page_one_lines(doc: dict) -> list[str]:
    """Page one (the diagnosis) as Markdown: deployment, protocol, results, ranked findings,
    healthy areas, what was not measured. Also the text golden tests pin."""
    p = doc.get("page_one")
    if not p:
        return []
    out = ["## Diagnosis", "", f"**Deployment.** {esc(p['deployment']['line'])}", "",
           f"**Protocol.** {esc(p['protocol'])}", ""]
    out += table(["metric", "result", "notes"], [[r["metric"], r["result"], r["notes"]] for r in p["results"]])
    out += ["### Findings, ranked by impact", ""]
    if not p["findings"]:
        out += ["No finding in what this run measured (see Not measured for what it did not).", ""]
    for f in p["findings"]:
        out += [f"#### {f['rank']}. {esc(f['title'])}", "",
                f"- observed: {esc(f['observed'])}"]
        out += [f"- evidence: {esc(e)}" for e in f["evidence"]]
        out += [f"- cause: `{esc(f['cause'])}`", f"- fix: {esc(f['fix'])}",
                f"- expected gain ({esc(f['gain']['basis'])}): {esc(f['gain']['text'])}",
                f"- confidence: {esc(f['confidence'])}", ""]
    out += ["### Healthy", ""]
    out += [f"- {esc(line)}" for line in p["healthy"]] or ["- nothing measured here is known healthy"]
    out += ["", "### Not measured", ""]
    out += [f"- {esc(m['what'])}: {esc(m['why'])}; measure with: `{esc(m['command'])}`"
            for m in p["not_measured"]] or ["- everything page one reports on was measured"]
    return out + [""]


def _summary(doc: dict) -> list[str]:
    s = doc["summary"]
    out = ["## Summary", "", "### Headline numbers", ""]
    out += table(["", "value", "what it is"], [[h["label"], h["value"], h["detail"]] for h in s["headline"]]) \
        if s["headline"] else ["No protocol results in this run.", ""]
    out += ["### Verdicts", ""]
    out += table(["topic", "verdict", "detail"], [[v["topic"], v["verdict"], v["detail"]] for v in s["verdicts"]])
    out += ["### Warnings", ""]
    out += [f"- {esc(w)}" for w in doc["warnings"]] or ["- none"]
    return out + [""]


def _deployment(doc: dict, section: dict) -> list[str]:
    out = ["## Deployment", ""]
    if section["status"] == "missing":
        return out + _missing(section)
    return out + table(["setting", "value"], [[readable_key(k), v] for k, v in section["rows"]])


def _environment(doc: dict, section: dict) -> list[str]:
    out = ["## Environment", ""]
    if section["status"] == "missing":
        return out + _missing(section)
    out += ["What changes behaviour (versions, GPU, driver, NCCL, interconnect, env vars); each "
            "node's full capture is in data/ (see the files list).", ""]
    for group in section.get("tables", []):
        out += [f"### Launches {esc(', '.join(group['launches']))}: {len(group['nodes'])} node(s)", ""]
        out += table(["setting", *group["nodes"]], group["rows"])
    for launch in section["launches"]:
        if launch["differs"]:
            rows, other = cross_node_rows(launch["differs"])
            if rows:
                out += [f"Launch {esc(launch['label'])}: settings that differ between nodes and can "
                        "change results:", ""]
                out += table(["setting", *launch["nodes"]], rows)
            if other:
                out += [f"{other} other captured settings differ (addresses, times, counters; "
                        "`bundle/environment-diff.json` in data/).", ""]
    return out + [""]


def _startup(doc: dict, section: dict) -> list[str]:
    out = ["## Startup", ""]
    if section["status"] == "missing":
        return out + _missing(section)
    for launch in section["launches"]:
        out += [f"### Launch {esc(launch['label'])}", "",
                f"Source: `{launch['source']}`; ready after {seconds(launch['ready_s'])}"
                + ("" if launch["classified"] else " (timeline only: stalls not classified)") + ".", ""]
        out += table(["phase", "node", "start s", "end s", "duration s"],
                     [[p["name"], p["node"] or "all", number(p["start"]), number(p["end"]),
                       number(p["duration_s"])] for p in launch["phases"]])
        if launch["reported"]:
            out += ["vLLM's own durations: " + esc(", ".join(f"{k} {v:g}" for k, v in launch["reported"].items())), ""]
        if launch["classified"] and not launch["findings"]:
            out += ["No stall found.", ""]
        for f in launch["findings"]:
            out += [f"**{esc(f['kind'])} on {esc(f['node'] or 'all nodes')}** in {esc(f['phase'] or '?')}, "
                    f"{number(f['start'])}–{number(f['end'])} s ({seconds(f['duration_s'])}): "
                    f"**{esc(f['id'])}** (confidence {esc(f['confidence'])})", ""]
            out += [f"- evidence: {esc(e)}" for e in f["evidence"]]
            out += [f"- not {esc(a['id'])}: {esc(a['why_not'])}" for a in f["alternatives"]]
            out += [f"- fix: {esc(f['fix'])}", ""] if f["fix"] else [""]
    for plot in doc["plots"]:
        if plot["file"].startswith("plots/startup"):
            out += _plot(doc, plot["file"][len("plots/"):])
    return out


def _probe(doc: dict, section: dict) -> list[str]:
    out = ["## Output quality (garbage probe)", ""]
    if section["status"] == "missing":
        return out + _missing(section)
    for labels, launch in probe_groups(section["launches"]):  # each distinct result once
        out += [f"### {esc(group_title(labels))}: **{esc(launch['verdict'])}**"
                + (f" (pattern {esc(launch['pattern'])})" if launch["pattern"] else ""), "",
                f"Baseline: {esc(launch['baseline'] or 'none')}; tokens spent "
                f"{number(launch['tokens_spent'], 0)}; wall time {seconds(launch['wall_s'])}.", ""]
        out += table(["family", "status", "what it checked and found"],
                     [[f["name"], f["status"], f["sentence"]] for f in launch["families"]])
        numbers = [row for f in launch["families"] for row in f["numbers"]]
        if numbers:
            out += table(NUMBER_HEADERS, numbers)
    return out


def _protocol(doc: dict, section: dict) -> list[str]:
    out = ["## Delivered-token protocol", ""]
    if section["status"] == "missing":
        return out + _missing(section)
    out += ["### Per launch", ""]
    rows = []
    for launch in section["launches"]:
        for w in launch["workloads"]:
            d, c = w["decode_tok_s"], w["counts"]
            rows.append([launch["label"], w["name"], d["n"], number(d["mean"]),
                         interval(d["ci95_low"], d["ci95_high"]), number(d["median"]), number(d["mad"]),
                         number(w["ttft_s"]["mean"], 3), number(w["e2e_tok_s"]["mean"]),
                         c.get("error", 0) + c.get("incomplete", 0), w["max_tokens_per_chunk"]])
    out += table(["launch", "workload", "n", "decode tok/s", "95% CI", "median", "MAD", "TTFT s",
                  "e2e tok/s", "failed", "max tok/chunk"], rows)
    out += _plot(doc, "delivered_per_launch.png")
    out += ["### Across launches (the launch is the unit of replication)", ""]
    out += table(["workload", "depth", "launches", "mean of means", "95% CI over launches",
                  "between-launch var", "within-launch var", "stability"],
                 [[p["workload"], "–" if p["depth"] is None else p["depth"], ", ".join(p["launches"]),
                   number(p["decode_tok_s"]["mean"]), interval(p["decode_tok_s"]["ci95_low"], p["decode_tok_s"]["ci95_high"]),
                   number(p["between_variance"], 3), number(p["within_variance"], 3),
                   stability_words(p)] for p in section["across"]])
    notes = pool_notes(section["across"])
    return out + [f"- {esc(n)}" for n in notes] + ([""] if notes else [])


def _reconciliation(doc: dict, section: dict) -> list[str]:
    out = ["## Delivered vs logged", ""]
    if section["status"] == "missing":
        out += _missing(section)
    else:
        out += table(["launch", "delivered mean (workload)", "log mean", "log mean (active)", "log peak",
                      "peak / delivered", "acceptance length", "verdict"],
                     [[r["label"], delivered_label(r), number(r["logged_mean"]),
                       number(r["logged_mean_active"]), number(r["logged_peak"]),
                       number(r["peak_over_delivered"], 2), number(r["acceptance_length"], 2),
                       r["verdict"] or "–"] for r in section["launches"]])
        for r in section["launches"]:
            out += [f"- {esc(r['label'])}: {esc(reason)}" for reason in r["reasons"]]
        out += [""]
    return out + _plot(doc, "delivered_vs_logged.png")


def _sweep(doc: dict, section: dict) -> list[str]:
    out = ["## Speculative-depth sweep", ""]
    if section["status"] == "missing":
        return out + _missing(section)
    out += [f"Method {esc(section['method'] or '?')}, decided on workload {esc(section['workload'] or '?')}; "
            f"rates are {section['rates']} per launch.", ""]
    out += table(SWEEP_HEADERS, sweep_rows(section))
    first, *rest = sweep_lines(section)
    out += [f"**{esc(with_provisional(first, section['decision']))}**", ""]
    out += [f"- {esc(line)}" for line in rest]
    return out + [""] + _plot(doc, "sweep.png")


def _roofline(doc: dict, section: dict) -> list[str]:
    out = ["## Roofline", ""]
    if section["status"] == "missing":
        return out + _missing(section)
    r = section
    out += table(["quantity", "value"], [
        ["active parameter bytes per token per node",
         f"{fixed(r['active_param_bytes_per_token_per_node'], 4)} B ({r['bytes_derivation']})"],
        ["memory bandwidth", f"{fixed(r['memory_bandwidth_bytes_s'] / 1e9, 4)} GB/s"],
        ["interconnect floor per token",
         f"{fixed(r['interconnect_floor_s'] * 1e3, 4)} ms ({r['floor_derivation']})"],
        ["time per token (floor)", f"{fixed(r['t_token_s'] * 1e3, 4)} ms"],
        ["ceiling", f"{fixed(r['ceiling_tok_s'], 4)} tok/s"]])
    out += table(["configuration", "delivered tok/s", "share of ceiling"],
                 [[f["what"], number(f["delivered_tok_s"]), percent(f["fraction"])]
                  for f in r.get("fractions", [])])
    return out + [esc(section.get("note", "")), ""]


def _verification(doc: dict) -> list[str]:
    v = doc["verification"]
    out = ["## Verification", "", esc(v["text"]), "", "```"] + v["commands"] + ["```", ""]
    if v["signed"]:
        out += [f"Signer identity: `{v['identity']}`; key fingerprint `{v['fingerprint']}`.", "",
                "Allowed-signers line:", "", "```", v["allowed_signers_line"], "```", ""]
    return out


def render(doc: dict) -> str:
    """The whole report as Markdown text."""
    run = doc["run"]
    command = run["command"] if isinstance(run["command"], str) else " ".join(run["command"] or [])
    out = ["# sparktriage report", "",
           f"- generated_at: {when(doc['generated_at'])} (the only field that changes when the report is rebuilt; "
           f"{TIME_ZONE_NOTE})",
           f"- run created: {esc(when(run['created']))}; recorded by sparktriage {esc(run['tool_version'] or '?')}; "
           f"report by sparktriage {esc(doc['tool_version'])}",
           f"- launches: {esc(', '.join(run['launches']) or 'none')}",
           f"- command: `{' '.join(command.replace('`', chr(39)).split())}`" if command else "- command: unknown",
           f"- redaction: {doc['redaction'].get('secrets', 0)} secret occurrences replaced"
           + ("; host names, IPs and users anonymized" if doc["redaction"]["anonymized"] else ""), ""]
    out += page_one_lines(doc)
    out += _summary(doc)
    s = doc["sections"]
    out += _deployment(doc, s["deployment"]) + _environment(doc, s["environment"])
    out += _startup(doc, s["startup"]) + _probe(doc, s["probe"]) + _protocol(doc, s["protocol"])
    out += _reconciliation(doc, s["reconciliation"]) + _sweep(doc, s["sweep"]) + _roofline(doc, s["roofline"])
    out += ["## Methodology", ""]
    for paragraph in doc["methodology"]:
        out += [f"### {paragraph['title']}", "", paragraph["text"], ""]
    out += _verification(doc)
    out += ["## Files", "", "Every file of this folder is listed with its SHA-256 in `MANIFEST`. "
            "The data the report was built from (redacted):", ""]
    out += [f"- `{f}`" for f in doc["data_files"]] + [""]
    return "\n".join(out).rstrip("\n") + "\n"
