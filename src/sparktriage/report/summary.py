"""The summary page: headline numbers and verdicts, chosen from the report's sections.

Every headline number carries what it is a mean of and over what its interval runs (requests
within one launch, or launches), in the spirit of pyperf: the reader should never have to guess
the unit of replication. A verdict whose evidence is missing says "not measured".
"""

from __future__ import annotations

from statistics import median

from sparktriage.logs.startup_time import SHORT as STARTUP_SHORT
from sparktriage.report.format import delivered_label, interval, number
from sparktriage.report.sweep import decision_text
from sparktriage.report.readable import duration, percent


def _pools_to_show(sections: dict) -> list[dict]:
    pools = sections["protocol"].get("across", [])
    chosen = sections["sweep"].get("decision", {}).get("depth") if sections["sweep"]["status"] == "present" else None
    if chosen is not None and any(p["depth"] == chosen for p in pools):
        return [p for p in pools if p["depth"] == chosen]
    return pools


def headline(sections: dict) -> list[dict]:
    """[{label, value, detail}] for the summary page."""
    rows: list[dict] = []
    protocol = sections["protocol"]
    for pool in _pools_to_show(sections):
        d = pool["decode_tok_s"]
        name = f"Delivered decode rate, {pool['workload']}"
        if pool["depth"] is not None:
            name += f" (depth {pool['depth']})"
        if pool["n_launches"] >= 2:
            detail = (f"mean of {pool['n_launches']} launch means; 95% t-interval over launches"
                      + ("" if pool["stable"] else "; UNSTABLE across launches"))
            value = f"{number(d['mean'])} tok/s {interval(d['ci95_low'], d['ci95_high'])}"
        else:
            members = [(l["label"], w) for l in protocol["launches"] if l["label"] in pool["launches"]
                       for w in l["workloads"] if w["name"] == pool["workload"]]
            label, w = next(((lb, w) for lb, w in members if w["decode_tok_s"]["n"]), members[0])
            s = w["decode_tok_s"]
            value = f"{number(s['mean'])} tok/s {interval(s['ci95_low'], s['ci95_high'])}"
            detail = (f"launch {label}: mean of {s['n']} requests, 95% t-interval over requests; "
                      "one launch, so launch-to-launch variation is unknown")
        rows.append({"label": name, "value": value, "detail": detail})
    shown = {label for pool in _pools_to_show(sections) for label in pool["launches"]}
    ttft: dict[str, list[float]] = {}
    for launch in protocol.get("launches", []):
        for w in launch["workloads"]:
            if launch["label"] in shown and w["ttft_s"]["mean"] is not None:
                ttft.setdefault(w["name"], []).append(w["ttft_s"]["mean"])
    for name, means in sorted(ttft.items()):
        rows.append({"label": f"Time to first token, {name}",
                     "value": f"{number(sum(means) / len(means), 3)} s",
                     "detail": f"mean of {len(means)} launch means" if len(means) > 1
                               else "mean over the requests of one launch"})
    rec = [r for r in sections["reconciliation"].get("launches", []) if r["peak_over_delivered"]]
    if rec:
        worst = max(rec, key=lambda r: r["peak_over_delivered"])
        rows.append({"label": "Server log peak vs delivered",
                     "value": f"{number(worst['peak_over_delivered'], 2)}x",
                     "detail": f"launch {worst['label']}: log peak {number(worst['logged_peak'])} "
                               f"tok/s vs delivered mean {delivered_label(worst)}"})
    roof = sections["roofline"]
    if roof["status"] == "present" and roof.get("fractions"):
        best = max(roof["fractions"], key=lambda f: f["fraction"])
        rows.append({"label": "Share of the bandwidth roofline",
                     "value": percent(best["fraction"]),
                     "detail": f"{best['what']}: {number(best['delivered_tok_s'])} of "
                               f"{number(best['ceiling_tok_s'])} tok/s ceiling"})
    sweep = sections["sweep"]
    if sweep["status"] == "present" and sweep["decision"]["depth"] is not None:
        point = next((p for p in sweep["points"] if p["depth"] == sweep["decision"]["depth"]), None)
        detail = "; ".join(c["statement"] for c in sweep["comparisons"]) or "no comparison possible"
        value = decision_text(sweep["decision"])
        if point and point["mean"] is not None:
            value += f": {number(point['mean'])} tok/s"
        rows.append({"label": "Speculative depth chosen", "value": value, "detail": detail})
    timed = [(l["label"], l["ready_s"]) for l in sections["startup"].get("launches", [])
             if l["ready_s"] is not None]
    if timed:
        each = ", ".join(f"{label} {duration(s)}" for label, s in timed)
        took = median(s for _, s in timed)  # with the seconds that stdout and `logs` print
        rows.append({"label": "Startup time",
                     "value": duration(took) + (f" ({number(took)} s)" if took >= 60 else ""),
                     "detail": (f"median of {len(timed)} launches ({each}); " if len(timed) > 1
                                else f"launch {timed[0][0]}, one launch; ") + STARTUP_SHORT})
    return rows


UNMEASURED = ("not_measured", "insufficient_data", "no_overlap")  # no evidence, no verdict


def verdict_words(code: str) -> str:
    """A reconcile verdict code as words ("not_measured" -> "not measured")."""
    return code.replace("_", " ")


_PROBE_RANK = {"garbage": 3, "suspect": 2, "healthy-uncalibrated": 1, "healthy": 0}


def verdicts(sections: dict, signing) -> list[dict]:
    """[{topic, verdict, detail}] for the summary page."""
    out = []
    probe = sections["probe"]
    if probe["status"] == "missing":
        out.append({"topic": "Output quality (probe)", "verdict": "not measured", "detail": probe["reason"]})
    else:
        worst = max(probe["launches"], key=lambda l: _PROBE_RANK.get(l["verdict"], 4))
        counts: dict[str, int] = {}
        for launch in probe["launches"]:
            counts[launch["verdict"]] = counts.get(launch["verdict"], 0) + 1
        out.append({"topic": "Output quality (probe)", "verdict": worst["verdict"],
                    "detail": ", ".join(f"{n} {v}" for v, n in sorted(counts.items()))
                              + (f"; pattern {worst['pattern']}" if worst["pattern"] else "")})
    startup = sections["startup"]
    classified = [l for l in startup.get("launches", []) if l["classified"]]
    if not classified:
        out.append({"topic": "Startup stalls", "verdict": "not classified",
                    "detail": startup.get("reason") or "no stalls.json: run sparktriage stalls"})
    else:
        findings = [f for l in classified for f in l["findings"]]
        ids = sorted({f["id"] for f in findings})
        out.append({"topic": "Startup stalls",
                    "verdict": "none found" if not findings else ", ".join(ids),
                    "detail": f"{len(findings)} findings in {len(classified)} classified launches"})
    pools = sections["protocol"].get("across", [])
    multi = [p for p in pools if p["n_launches"] >= 2]
    if not multi:
        out.append({"topic": "Stability across launches", "verdict": "not measured",
                    "detail": "fewer than two launches per configuration"})
    else:
        unstable = [p for p in multi if not p["stable"]]
        out.append({"topic": "Stability across launches",
                    "verdict": "stable" if not unstable else "UNSTABLE",
                    "detail": (f"{len(unstable)} of {len(multi)} configurations: "
                               f"{unstable[0]['reasons'][0]}" if unstable else
                               f"{len(multi)} configurations within their within-launch noise")})
    rec = sections["reconciliation"]
    if rec["status"] == "missing":
        out.append({"topic": "Delivered vs logged", "verdict": "not measured", "detail": rec["reason"]})
    else:
        given = sorted({r["verdict"] for r in rec["launches"] if r["verdict"]})
        measured = [v for v in given if v not in UNMEASURED]
        if given and not measured:
            why = next((r["reasons"][-1] for r in rec["launches"] if r["reasons"]),
                       "nothing on the server's side to compare with")
            out.append({"topic": "Delivered vs logged", "verdict": "not measured", "detail": why})
        else:
            shown = [verdict_words(v) for v in given]
            out.append({"topic": "Delivered vs logged", "verdict": ", ".join(shown) or "see section",
                        "detail": "reconcile.json verdicts" if given else "log summary only, no reconcile.json"})
    sweep = sections["sweep"]
    if sweep["status"] == "present":
        out.append({"topic": "Speculative depth", "verdict": decision_text(sweep["decision"]),
                    "detail": sweep["decision"]["reason"] or ""})
    out.append({"topic": "Signature",
                "verdict": "signed" if signing else "not signed",
                "detail": f"{signing.identity}, key {signing.fingerprint}" if signing else
                          "MANIFEST lists digests but nobody vouches for them"})
    return out
