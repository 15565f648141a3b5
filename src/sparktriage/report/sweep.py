"""The speculative-depth sweep section (`sweep.json`, shape in docs/formats.md).

The sweep stage decides; the report restates its decision next to the evidence, as sweep.json
gives it (sweep.assess computed it once): per depth the launches, the mean of their delivered
tok/s with its t-interval over launches (the launch is the unit of replication) and the mean
acceptance length, and the sweep's Welch t-tests of the chosen depth against depth 0 and against
the runner-up (`comparisons`), so that a difference that is not significant is said to be so.
Nothing is re-tested here. A sweep.json without per-depth statistics (another producer's: the
synthetic run's) has its means summarised from its launches and no comparison. Per-launch
figures are cross-checked with the launch's own bench document.
"""

from __future__ import annotations

from sparktriage.report.inputs import RunInputs
from sparktriage.report.readable import fitted, p_value, plain, signed_rate
from sparktriage.report.sections import missing
from sparktriage.report.values import as_dict, as_list, integer, num, text
from sparktriage.stats.summary import summarize
from sparktriage.sweep.policy.words import decision_word
from sparktriage.sweep.model.entry import verify_cost


BASIS_TEXT = {"decode": "mean delivered decode tok/s",
              "e2e": "mean end-to-end tok/s (responses arrived in bursts, with no decode interval)"}


def _bench_mean(inputs: RunInputs, label: str, workload: str | None,
                metric: str = "decode_tok_s") -> float | None:
    bench = inputs.launch_doc(label, "bench.json")
    for w in as_list(as_dict(bench).get("workloads")):
        if isinstance(w, dict) and (workload is None or w.get("name") == workload):
            return num(as_dict(as_dict(w.get("summary")).get(metric)).get("mean"))
    return None


def depth_of_launch(inputs: RunInputs) -> dict[str, int | None]:
    """Which sweep depth each launch belongs to (empty without a sweep)."""
    doc = inputs.doc("sweep.json") or {}
    out: dict[str, int | None] = {}
    for entry in as_list(doc.get("depths")):
        if isinstance(entry, dict):
            for launch in as_list(entry.get("launches")):
                if isinstance(launch, dict) and isinstance(launch.get("label"), str):
                    out[inputs.sweep_launch(launch["label"])] = integer(entry.get("depth"))
    return out


def sweep_section(inputs: RunInputs) -> dict:
    doc = inputs.doc("sweep.json")
    if doc is None:
        return missing("no speculative-depth sweep was run", ["sweep.json"], "sweep.json")
    # sweep.json was checked against its typed model when it was read (report.inputs): its
    # depths are a list of objects, each with an integer depth
    workload = text(doc.get("workload"))
    # basis "e2e": the sweep compared end-to-end rates (no decode interval in bursty delivery)
    basis = "e2e" if as_dict(doc.get("decision")).get("basis") == "e2e" else "decode"
    field, metric = ("e2e_tok_s", "e2e_tok_s") if basis == "e2e" else ("delivered_tok_s", "decode_tok_s")
    points, warnings = [], []
    for entry in doc["depths"]:
        launches = []
        for launch in as_list(entry.get("launches")):
            if not isinstance(launch, dict):
                continue
            label = inputs.sweep_launch(text(launch.get("label")) or "?")
            rate = num(launch.get(field))
            check = _bench_mean(inputs, label, workload, metric)
            if rate is not None and check is not None and abs(check - rate) > 0.005 * abs(rate):
                warnings.append(f"sweep.json gives {label} {rate:.2f} tok/s but its bench.json "
                                f"gives {check:.2f}")
            launches.append({"label": label, "delivered_tok_s": rate,
                             "acceptance_length": num(launch.get("acceptance_length"))})
        rates = [l["delivered_tok_s"] for l in launches if l["delivered_tok_s"] is not None]
        accept = [l["acceptance_length"] for l in launches if l["acceptance_length"] is not None]
        n, mean, low, high = _stats(entry, rates)
        gate = as_dict(entry.get("gate"))
        points.append({"depth": entry["depth"], "launches": launches, "n": n, "mean": mean,
                       "ci95_low": low, "ci95_high": high, "rates": rates,
                       "acceptance_length": (num(entry.get("acceptance_length"))
                                             if "acceptance_length" in entry
                                             else sum(accept) / len(accept) if accept else None),
                       "per_position": [v for v in (num(x) for x in as_list(entry.get("per_position")))
                                        if v is not None],
                       "gate": text(gate.get("state")) or "unchecked",
                       "gate_reason": text(gate.get("reason")),
                       "roofline_pct": num(entry.get("roofline_pct")),
                       "status": text(entry.get("status")),
                       "stability": [r for r in as_list(entry.get("stability_reasons")) if isinstance(r, str)]})
    points.sort(key=lambda p: p["depth"])
    decision = as_dict(doc.get("decision"))
    chosen = integer(decision.get("depth"))
    ranked = sorted((p for p in points if p["mean"] is not None), key=lambda p: -p["mean"])
    by_depth = {p["depth"]: p for p in points}
    comparisons = _comparisons(doc, chosen)
    if chosen is not None and chosen not in by_depth:
        warnings.append(f"the decision names depth {chosen}, which the sweep did not measure")
    left_out = sorted(str(k) for k in as_dict(as_dict(doc.get("speculative")).get("left_out")))
    if left_out:
        warnings.append(f"the deployment's speculative config sets the depth by batch size "
                        f"({', '.join(left_out)}); every launch of the sweep ran its own depth at "
                        "every batch size instead, so the recommendation is the depth for one "
                        "stream, not a schedule")
    return {"status": "present", "source": "sweep.json", "method": text(doc.get("method")),
            "workload": workload, "points": points,
            "decision": {"depth": chosen, "reason": text(decision.get("reason")),
                         "state": text(decision.get("state")),
                         "word": decision_word(text(decision.get("state")), chosen),
                         "provisional": decision.get("provisional") is True,
                         # the depths the data cannot separate from the chosen one: itself aside
                         "candidates": [c for c in (integer(x) for x in as_list(decision.get("candidates")))
                                        if c is not None and c != chosen]},
            "launches_used": integer(doc.get("launches_used")), "basis": basis,
            "rates": BASIS_TEXT[basis],
            "best_measured_depth": ranked[0]["depth"] if ranked else None,
            "comparisons": comparisons, "warnings": warnings,
            "rule": text(decision.get("rule")) or "black-box",
            "gate_note": text(decision.get("gate_note")),
            "model": model_part(doc.get("model"), by_depth)}


def _stats(entry: dict, rates: list[float]) -> tuple[int, float | None, float | None, float | None]:
    """A depth's launches, mean and 95% interval as sweep.json gives them (over its pooled launch
    means); summarised from the launch rates only when the document has none."""
    if "mean_tok_s" in entry:
        n = integer(entry.get("n"))
        return (len(rates) if n is None else n, num(entry.get("mean_tok_s")),
                num(entry.get("ci95_low")), num(entry.get("ci95_high")))
    s = summarize(rates)
    return s.n, s.mean, s.ci95_low, s.ci95_high


def _comparisons(doc: dict, chosen: int | None) -> list[dict]:
    """The sweep's own tests of the chosen depth (sweep.json `comparisons`), with a sentence."""
    out = []
    for c in as_list(doc.get("comparisons")):
        c = as_dict(c)
        depth, other, test = integer(c.get("depth")), integer(c.get("versus")), as_dict(c.get("test"))
        if depth is None or other is None or depth != chosen:
            continue
        out.append({"depth": depth, "versus": other, "test": test,
                    "statement": _statement(depth, other, test)})
    return out


def model_part(model, by_depth: dict[int, dict]) -> dict | None:
    """The depth model as the report states it: state, why, one sentence, and per depth its
    prediction beside the launches' mean (None with --no-model or an older sweep.json)."""
    model = as_dict(model)
    if not model.get("state"):
        return None
    rows = []
    for p in as_list(model.get("predicted")):
        if not isinstance(p, dict) or integer(p.get("depth")) is None:
            continue
        measured = by_depth.get(p["depth"], {})
        rows.append({"depth": p["depth"], "predicted": num(p.get("tok_s")),
                     "ci95_low": num(p.get("ci95_low")), "ci95_high": num(p.get("ci95_high")),
                     "acceptance_length": num(p.get("acceptance_length")),
                     "tokens_per_step": num(p.get("tokens_per_step")),
                     "step_ratio": num(verify_cost(p)),
                     "measured": measured.get("mean"), "measured_low": measured.get("ci95_low"),
                     "measured_high": measured.get("ci95_high"), "n": measured.get("n") or 0})
    ratios = as_list(as_dict(model.get("step_ratios")).get("ratios"))
    return {"state": text(model.get("state")), "reason": text(model.get("reason")),
            "summary": text(model.get("summary")), "decided": bool(model.get("decided")),
            "rejection": text(model.get("rejection")),
            "rows": rows, "inside_launches": len([r for r in ratios if isinstance(r, dict)]),
            "inside_kind": next((text(r.get("kind")) for r in ratios if isinstance(r, dict)), None)}


def _statement(depth: int, other: int, test: dict) -> str:
    difference, p, verdict = num(test.get("difference")), num(test.get("p_value")), text(test.get("verdict"))
    if difference is None:
        return f"depth {depth} vs depth {other}: {verdict}"
    if p is None:
        return (f"depth {depth} vs depth {other}: {signed_rate(difference)}; {verdict} "
                "(run more launches)")
    return f"depth {depth} vs depth {other}: {signed_rate(difference)}, Welch {p_value(p)}: " + (
        "significant at the 5% level" if test.get("significant") else "not significant at the 5% level")


# ---- the section as rows and lines, shared by the Markdown and PDF renderers -----------------
HEADERS = ["depth", "launches", "mean tok/s", "95% CI over launches", "acceptance length",
           "per position", "gate", "% of ceiling"]


def decision_text(decision: dict) -> str:
    """A sweep decision as 'depth 2 (settled)': its depth and the one word of its state
    (sweep.policy.words.WORDS; none for a state this sweep does not write)."""
    word = decision.get("word")
    return f"depth {decision.get('depth')}" + (f" ({word})" if word else "")


def _fmt(value: float | None, digits: int = 2) -> str:
    return "–" if value is None else plain(value, digits)


def sweep_rows(section: dict) -> list[list[str]]:
    """One row per depth: rate with its interval over launches, acceptance, gate, roofline %."""
    rows = []
    for p in section["points"]:
        mean, ci = fitted(p["mean"], p["ci95_low"], p["ci95_high"])
        rows.append([str(p["depth"]), ", ".join(l["label"] for l in p["launches"]) or (p.get("status") or "–"),
                     mean, ci, _fmt(p["acceptance_length"]),
                     " / ".join(f"{v:.2f}" for v in p.get("per_position") or []) or "–",
                     p.get("gate") or "unchecked", _fmt(p.get("roofline_pct"), 1)])
    return rows


MODEL_HEADERS = ["depth", "predicted tok/s", "95% interval", "launches' mean tok/s",
                 "95% CI over launches", "launches", "tokens per step", "verify step cost"]


def model_rows(section: dict) -> list[list[str]]:
    """The depth model's prediction per depth beside what its launches measured."""
    out = []
    for r in (section.get("model") or {}).get("rows") or []:
        predicted, interval = fitted(r["predicted"], r["ci95_low"], r["ci95_high"])
        mean, measured = fitted(r["measured"], r["measured_low"], r["measured_high"])
        out.append([str(r["depth"]), predicted, interval, mean, measured,
                    str(r["n"]), _fmt(r["tokens_per_step"]),
                    "–" if r["step_ratio"] is None else f"{r['step_ratio']:.2f}×"])
    return out


def model_lines(section: dict) -> list[str]:
    """The depth model in sentences: what it made of the launches and whether it decided."""
    model = section.get("model")
    if not model:
        return []
    how = (f"it made the decision: {decision_text(section['decision'])}" if model["decided"] else
           "the black-box rule decided, over every launch" if model["state"] == "rejected" else
           "it did not decide")
    lines = [f"Depth model: {model['state']} ({how}): {model['reason']}", model["summary"]]
    if model.get("inside_launches") and model.get("inside_kind") == "pair":
        lines.append(f"The step cost was measured inside {model['inside_launches']} launch(es): the "
                     "time of a step serving two requests at once against a step serving one, in "
                     "the same launch (this drafter drafts at every step, so no launch has plain "
                     "steps to compare with), so the launch-to-launch spread cancels out of it.")
    elif model.get("inside_launches"):
        lines.append(f"The step cost was measured inside {model['inside_launches']} launch(es): each "
                     "verify step's time against the plain steps of the same launch (steps where "
                     "the drafter found nothing to propose), so the launch-to-launch spread "
                     "cancels out of it.")
    return lines


def sweep_lines(section: dict) -> list[str]:
    """The decision and why, gate failures, stability warnings, comparisons, as sentences."""
    d = section["decision"]
    cands = d.get("candidates") or []
    head = "Decision: no depth" if d["depth"] is None else f"Decision: {decision_text(d)}"
    lines = [f"{head}. {d['reason'] or ''}".rstrip()]
    if section.get("gate_note"):
        lines.append(f"Note: {section['gate_note']}.")
    if cands:
        lines.append("Depths the data cannot separate from it: " + ", ".join(map(str, cands)) + ".")
    for p in section["points"]:
        if p.get("gate") == "fail":
            lines.append(f"Gate failed at depth {p['depth']} (never recommended): {p.get('gate_reason')}")
        for reason in p.get("stability") or []:
            lines.append(f"Depth {p['depth']} is unstable across launches: {reason}")
    lines += [c["statement"] for c in section["comparisons"]]
    lines += [f"warning: {w}" for w in section["warnings"]]
    return lines
