"""The sweep document as a View of plain lines (the CLI prints them; the demo reuses them)."""

from __future__ import annotations

from sparktriage.view import View
from sparktriage.sweep.model.entry import verify_cost
from sparktriage.sweep.policy.words import decision_word


def _rate(value: float | None) -> str:
    return "-" if value is None else f"{value:.2f}"


def depth_line(entry: dict) -> str:
    """One depth: mean tok/s with its 95% interval over launches, acceptance, gate, roofline."""
    line = f"depth {entry['depth']}: "
    if entry["mean_tok_s"] is None:
        line += f"{entry['status']}"
    else:
        ci = ("" if entry["ci95_low"] is None else
              f" (95% CI over launches {entry['ci95_low']:.2f}-{entry['ci95_high']:.2f})")
        line += f"{entry['mean_tok_s']:.2f} tok/s{ci}, {entry['n']} launch(es)"
    if entry.get("acceptance_length") is not None:
        pos = ", ".join(f"{p:.2f}" for p in entry.get("per_position") or [])
        line += (f"; acceptance length {entry['acceptance_length']:.2f}"
                 + (f" (per position {pos})" if pos else "")
                 + f" from {entry.get('acceptance_source')}")
    line += f"; gate {entry['gate']['state']}"
    if entry.get("roofline_pct") is not None:
        line += f"; {entry['roofline_pct']:.1f}% of its ceiling"
    if entry.get("failures"):
        line += f"; {entry['failures']} failed launch(es)"
    if entry.get("stable") is False:
        line += "; UNSTABLE: " + "; ".join(entry.get("stability_reasons") or [])
    return line


def render_lines(doc: dict) -> View:
    """The sweep's outcome: every launch, every depth, the decision and why."""
    lines = [f"sweep of {doc['method']} depths {','.join(map(str, doc['depths_swept']))} on the "
             f"{doc['workload']} workload: {doc['launches_used']} launch(es), "
             f"{doc['wall_s'] / 60:.1f} min"]
    for launch in doc["launches"]:
        lines.append(f"  {launch['label']} depth {launch['depth']}: {launch['status']}"
                     + (f", {_rate(launch['delivered_tok_s'])} tok/s" if launch["status"] == "ok" else "")
                     + (f", acceptance {launch['acceptance_length']:.2f}"
                        if launch.get("acceptance_length") else "")
                     + (f" ({launch['reason']})" if launch.get("reason") else ""))
    for entry in doc["depths"]:
        lines.append(depth_line(entry))
        if entry["gate"]["state"] == "fail":
            lines.append(f"  gate failed: {entry['gate']['reason']}")
        versus = entry.get("versus_decision")
        if versus and versus.get("difference") is not None:
            lines.append(f"  vs depth {versus['depth']}: {versus['difference']:+.2f} tok/s, "
                         f"{versus['verdict']}")
    decision = doc["decision"]
    others = [d for d in decision["candidates"] if d != decision["depth"]]
    lines.append(f"decision: depth {decision['depth']} "
                 f"({decision_word(decision['state'], decision['depth'])})"
                 + (f", not separated from depth {', '.join(map(str, others))}" if others else "")
                 + f": {decision['reason']}")
    if decision.get("gate_note"):
        lines.append(f"  note: {decision['gate_note']}")
    left_out = sorted((doc.get("speculative") or {}).get("left_out") or {})
    if left_out:
        lines.append(f"  note: the deployment sets the depth by batch size ({', '.join(left_out)}); "
                     "every launch ran its own depth at every batch size instead: the "
                     "recommendation is the depth for one stream")
    lines += model_lines(doc.get("model"))
    roof = doc.get("roofline") or {}
    if roof.get("status") == "present":
        per_depth = ", ".join(f"depth {d['depth']} {d['ceiling_tok_s']:.1f}"
                              for d in roof.get("per_depth") or [])
        lines.append(f"roofline: {roof['ceiling_tok_s']:.1f} tok/s per stream at depth 0 "
                     f"({roof['hardware']} × {roof['nodes']}, {roof['model']}); with speculation "
                     "the verify step's bytes over its acceptance length"
                     + (f": {per_depth}" if per_depth else ""))
    return View.of_lines(lines)


def model_lines(model: dict | None) -> list[str]:
    """The depth model: its state and why, each depth's prediction beside its launches."""
    if not model:
        return []
    lines = [f"depth model: {model['state']}: {model['reason']}"]
    for p in model.get("predicted") or []:
        ci = ("" if p.get("ci95_low") is None else
              f" (95% CI {p['ci95_low']:.2f}-{p['ci95_high']:.2f})")
        measured = ("not launched" if not p["measured_launches"] else
                    f"measured {p['measured_mean_tok_s']:.2f} over {p['measured_launches']} launch(es)")
        lines.append(f"  depth {p['depth']}: predicted {p['tok_s']:.2f} tok/s{ci}, "
                     f"{p['tokens_per_step']:.2f} tokens per step at {verify_cost(p):.2f}x a plain "
                     f"step; {measured}")
    lines.append(f"  {model['summary']}")
    return lines
