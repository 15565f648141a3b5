"""The sections about what was measured, in blocks: the delivered-token protocol, delivered vs
logged, the speculative-depth sweep and the roofline.

Each builder takes the report document and its section (report.json `sections.<name>`) and
returns the section's blocks. A new table or sentence in a section is one more block in its
builder here; the renderers need no change.
"""

from __future__ import annotations

from sparktriage.report.format import (delivered_label, interval, number, percent, pool_notes,
                                       stability_words)
from sparktriage.report.outline.blocks import (Block, Bullets, Heading, Paragraph, data, figure,
                                               missing, strong, table, words)
from sparktriage.report.sweep import (HEADERS as SWEEP_HEADERS, MODEL_HEADERS, model_lines, model_rows,
                                     sweep_lines, sweep_rows)
from sparktriage.report.summary import verdict_words
from sparktriage.report.values import fixed


def protocol(doc: dict, section: dict) -> list[Block]:
    out: list[Block] = [Heading(2, words("Delivered-token protocol"))]
    if section["status"] == "missing":
        return out + [missing(section)]
    rows = []
    for launch in section["launches"]:
        for w in launch["workloads"]:
            d, c = w["decode_tok_s"], w["counts"]
            rows.append([launch["label"], w["name"], d["n"], number(d["mean"]),
                         interval(d["ci95_low"], d["ci95_high"]), number(d["median"]), number(d["mad"]),
                         number(w["ttft_s"]["mean"], 3), number(w["e2e_tok_s"]["mean"]),
                         c.get("error", 0) + c.get("incomplete", 0), w["max_tokens_per_chunk"]])
    out += [Heading(3, words("Per launch")),
            table(["launch", "workload", "n", "decode tok/s", "95% CI", "median", "MAD", "TTFT s",
                   "e2e tok/s", "failed", "max tok/chunk"], rows),
            *figure(doc, "delivered_per_launch.png"),
            Heading(3, words("Across launches (the launch is the unit of replication)")),
            table(["workload", "depth", "launches", "mean of means", "95% CI over launches",
                   "between-launch var", "within-launch var", "stability"],
                  [[p["workload"], "–" if p["depth"] is None else p["depth"], ", ".join(p["launches"]),
                    number(p["decode_tok_s"]["mean"]),
                    interval(p["decode_tok_s"]["ci95_low"], p["decode_tok_s"]["ci95_high"]),
                    number(p["between_variance"], 3), number(p["within_variance"], 3),
                    stability_words(p)] for p in section["across"]])]
    notes = pool_notes(section["across"])
    return out + ([Bullets(tuple(words(data(n)) for n in notes), note=True)] if notes else [])


def reconciliation(doc: dict, section: dict) -> list[Block]:
    out: list[Block] = [Heading(2, words("Delivered vs logged"))]
    if section["status"] == "missing":
        out.append(missing(section))
    else:
        out.append(table(["launch", "delivered mean (workload)", "log mean", "log mean (active)", "log peak",
                          "peak / delivered", "acceptance length", "verdict"],
                         [[r["label"], delivered_label(r), number(r["logged_mean"]),
                           number(r["logged_mean_active"]), number(r["logged_peak"]),
                           number(r["peak_over_delivered"], 2), number(r["acceptance_length"], 2),
                           verdict_words(r["verdict"]) if r["verdict"] else "–"]
                          for r in section["launches"]]))
        reasons = [words(data(r["label"]), ": ", data(reason))
                   for r in section["launches"] for reason in r["reasons"]]
        if reasons:
            out.append(Bullets(tuple(reasons), note=True))
    return out + figure(doc, "delivered_vs_logged.png")


def sweep(doc: dict, section: dict) -> list[Block]:
    out: list[Block] = [Heading(2, words("Speculative-depth sweep"))]
    if section["status"] == "missing":
        return out + [missing(section)]
    first, *rest = sweep_lines(section)
    out += [Paragraph(words("Method ", data(section["method"] or "?"), ", decided on workload ",
                            data(section["workload"] or "?"), f"; rates are {section['rates']} per launch.")),
            table(SWEEP_HEADERS, sweep_rows(section)),
            Paragraph(words(strong(first, False)))]
    if rest:
        out.append(Bullets(tuple(words(data(line)) for line in rest), note=True))
    said = model_lines(section)
    if said:
        out.append(Paragraph(words(data(said[0]))))
        if model_rows(section):
            out.append(table(MODEL_HEADERS, model_rows(section)))
        out += [Paragraph(words(data(line))) for line in said[1:]]
    return out + figure(doc, "sweep.png")


def roofline(doc: dict, section: dict) -> list[Block]:
    out: list[Block] = [Heading(2, words("Roofline"))]
    if section["status"] == "missing":
        return out + [missing(section)]
    r = section
    out += [table(["quantity", "value"], [
                ["active parameter bytes per token per node",
                 f"{fixed(r['active_param_bytes_per_token_per_node'], 4)} B ({r['bytes_derivation']})"],
                ["memory bandwidth", f"{fixed(r['memory_bandwidth_bytes_s'] / 1e9, 4)} GB/s"],
                ["interconnect floor per token",
                 f"{fixed(r['interconnect_floor_s'] * 1e3, 4)} ms ({r['floor_derivation']})"],
                ["time per token (floor)", f"{fixed(r['t_token_s'] * 1e3, 4)} ms"],
                ["ceiling", f"{fixed(r['ceiling_tok_s'], 4)} tok/s"]], (0.45, 0.55)),
            table(["depth", "verify step bytes (× a plain step's)", "experts read (× a plain step's)",
                   "acceptance length", "ceiling tok/s"],
                  [[str(d["depth"]), f"{d['bytes_ratio']:.2f}", f"{d['expert_ratio']:.2f}",
                    f"{d['tokens_per_step']:.2f}", number(d["ceiling_tok_s"])]
                   for d in r.get("per_depth") or []]),
            table(["configuration", "delivered tok/s", "ceiling tok/s", "share of ceiling"],
                  [[f["what"], number(f["delivered_tok_s"]), number(f.get("ceiling_tok_s")),
                    percent(f["fraction"])] for f in r.get("fractions", [])])]
    if section.get("note"):
        out.append(Paragraph(words(data(section["note"])), note=True))
    return out


__all__ = ["protocol", "reconciliation", "roofline", "sweep"]
