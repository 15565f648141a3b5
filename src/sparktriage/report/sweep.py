"""The speculative-depth sweep section, rendered from the sweep record (`inputs.sweep`,
documents/sweep.py; the file's shape in docs/formats.md).

The sweep stage decides; the report restates its decision next to the evidence, as the record
gives it (sweep.assess computed it once): per depth the launches, the mean of their delivered
tok/s with its t-interval over launches (the launch is the unit of replication) and the mean
acceptance length, and the sweep's Welch t-tests of the chosen depth against depth 0 and against
the runner-up (`comparisons`), so that a difference that is not significant is said to be so.
Nothing is re-tested or re-derived here: a sweep.json without per-depth statistics (another
producer's: the synthetic run's) was upgraded when it was read (documents.sweep.read). Per-launch
figures are cross-checked with the launch's own bench document.
"""

from __future__ import annotations

from sparktriage.documents.sweep import SweepComparison, SweepDepth, SweepDocument, SweepModel
from sparktriage.report.inputs import RunInputs
from sparktriage.report.format import number
from sparktriage.report.readable import fitted, p_value, signed_rate
from sparktriage.report.sections import missing
from sparktriage.report.values import as_dict, as_list, num, text
from sparktriage.sweep.policy.words import decision_word
from sparktriage.sweep.model.entry import verify_cost


BASIS_TEXT = {"decode": "mean delivered decode tok/s",
              "e2e": "mean end-to-end tok/s (responses arrived in bursts, with no decode interval)"}
BENCH_METRIC = {"decode": "decode_tok_s", "e2e": "e2e_tok_s"}  # the bench.json summary of a basis


def _bench_mean(inputs: RunInputs, label: str, workload: str | None,
                metric: str = "decode_tok_s") -> float | None:
    bench = inputs.launch_doc(label, "bench.json")
    for w in as_list(as_dict(bench).get("workloads")):
        if isinstance(w, dict) and (workload is None or w.get("name") == workload):
            return num(as_dict(as_dict(w.get("summary")).get(metric)).get("mean"))
    return None


def depth_of_launch(inputs: RunInputs) -> dict[str, int | None]:
    """Which sweep depth each launch belongs to (empty without a sweep)."""
    sweep = inputs.sweep
    if sweep is None:
        return {}
    return {inputs.sweep_launch(launch.label): depth.depth
            for depth in sweep.depths for launch in depth.launches}


def _point(inputs: RunInputs, sweep: SweepDocument, depth: SweepDepth, warnings: list[str]) -> dict:
    """One depth as the section states it: its launches (cross-checked with their bench.json),
    the record's statistics, gate, roofline share and stability."""
    launches = []
    for launch in depth.launches:
        label = inputs.sweep_launch(launch.label)
        rate = sweep.rate(launch)
        check = _bench_mean(inputs, label, sweep.workload, BENCH_METRIC[sweep.basis])
        if rate is not None and check is not None and abs(check - rate) > 0.005 * abs(rate):
            warnings.append(f"sweep.json gives {label} {rate:.2f} tok/s but its bench.json "
                            f"gives {check:.2f}")
        launches.append({"label": label, "delivered_tok_s": rate,
                         "acceptance_length": launch.acceptance_length})
    gate = depth.gate
    return {"depth": depth.depth, "launches": launches, "n": depth.n, "mean": depth.mean_tok_s,
            "ci95_low": depth.ci95_low, "ci95_high": depth.ci95_high,
            "rates": [l["delivered_tok_s"] for l in launches if l["delivered_tok_s"] is not None],
            "acceptance_length": depth.acceptance_length,
            "per_position": list(depth.per_position),
            "gate": gate.state if gate is not None else "unchecked",
            "gate_reason": gate.reason if gate is not None else None,
            "roofline_pct": depth.roofline_pct, "status": depth.status,
            "stability": list(depth.stability_reasons)}


def sweep_section(inputs: RunInputs) -> dict:
    sweep = inputs.sweep
    if sweep is None:
        return missing("no speculative-depth sweep was run", ["sweep.json"], "sweep.json")
    warnings: list[str] = []
    points = sorted((_point(inputs, sweep, d, warnings) for d in sweep.depths),
                    key=lambda p: p["depth"])
    decision = sweep.decision
    chosen = decision.depth
    ranked = sorted((p for p in points if p["mean"] is not None), key=lambda p: -p["mean"])
    by_depth = {p["depth"]: p for p in points}
    if chosen is not None and chosen not in by_depth:
        warnings.append(f"the decision names depth {chosen}, which the sweep did not measure")
    left_out = sorted(sweep.speculative.left_out) if sweep.speculative is not None else []
    if left_out:
        warnings.append(f"the deployment's speculative config sets the depth by batch size "
                        f"({', '.join(left_out)}); every launch of the sweep ran its own depth at "
                        "every batch size instead, so the recommendation is the depth for one "
                        "stream, not a schedule")
    return {"status": "present", "source": "sweep.json", "method": sweep.method,
            "workload": sweep.workload, "points": points,
            "decision": {"depth": chosen, "reason": decision.reason, "state": decision.state,
                         "word": decision_word(decision.state, chosen),
                         "provisional": decision.provisional is True,
                         # the depths the data cannot separate from the chosen one: itself aside
                         "candidates": [c for c in decision.candidates or [] if c != chosen]},
            "launches_used": sweep.launches_used, "basis": sweep.basis,
            "rates": BASIS_TEXT[sweep.basis],
            "best_measured_depth": ranked[0]["depth"] if ranked else None,
            "comparisons": [_comparison(c) for c in sweep.comparisons or [] if c.depth == chosen],
            "warnings": warnings,
            "rule": decision.rule or "black-box",
            "gate_note": decision.gate_note,
            "model": model_part(sweep.model, by_depth)}


def _comparison(c: SweepComparison) -> dict:
    """One of the sweep's own tests of the chosen depth (sweep.json `comparisons`), with a
    sentence."""
    return {"depth": c.depth, "versus": c.versus, "test": c.test.to_dict(),
            "statement": _statement(c)}


def model_part(model: SweepModel | None, by_depth: dict[int, dict]) -> dict | None:
    """The depth model as the report states it: state, why, one sentence, and per depth its
    prediction beside the launches' mean (None with --no-model or an older sweep.json)."""
    if model is None:
        return None
    rows = []
    for p in model.predicted:
        measured = by_depth.get(p.depth, {})
        rows.append({"depth": p.depth, "predicted": p.tok_s,
                     "ci95_low": p.ci95_low, "ci95_high": p.ci95_high,
                     "acceptance_length": p.acceptance_length,
                     "tokens_per_step": p.tokens_per_step,
                     "step_ratio": verify_cost(p.to_dict()),
                     "measured": measured.get("mean"), "measured_low": measured.get("ci95_low"),
                     "measured_high": measured.get("ci95_high"), "n": measured.get("n") or 0})
    # the step ratios measured inside launches are the model's open input (docs/sweep.md)
    ratios = [r for r in as_list(as_dict(model.step_ratios).get("ratios")) if isinstance(r, dict)]
    return {"state": model.state, "reason": model.reason, "summary": model.summary,
            "decided": model.decided, "rejection": model.rejection, "rows": rows,
            "inside_launches": len(ratios),
            "inside_kind": text(ratios[0].get("kind")) if ratios else None}


def _statement(c: SweepComparison) -> str:
    depth, other, test = c.depth, c.versus, c.test
    if test.difference is None:
        return f"depth {depth} vs depth {other}: {test.verdict}"
    if test.p_value is None:
        return (f"depth {depth} vs depth {other}: {signed_rate(test.difference)}; {test.verdict} "
                "(run more launches)")
    return (f"depth {depth} vs depth {other}: {signed_rate(test.difference)}, Welch "
            f"{p_value(test.p_value)}: " + ("significant at the 5% level" if test.significant
                                            else "not significant at the 5% level"))


# ---- the section as rows and lines, shared by the Markdown and PDF renderers -----------------
HEADERS = ["depth", "launches", "mean tok/s", "95% CI over launches", "acceptance length",
           "per position", "gate", "% of ceiling"]


def decision_text(decision: dict) -> str:
    """A sweep decision as 'depth 2 (settled)': its depth and the one word of its state
    (sweep.policy.words.WORDS; none for a state this sweep does not write)."""
    word = decision["word"]
    return f"depth {decision['depth']}" + (f" ({word})" if word else "")


def sweep_rows(section: dict) -> list[list[str]]:
    """One row per depth: rate with its interval over launches, acceptance, gate, roofline %."""
    rows = []
    for p in section["points"]:
        mean, ci = fitted(p["mean"], p["ci95_low"], p["ci95_high"])
        rows.append([str(p["depth"]), ", ".join(l["label"] for l in p["launches"]) or (p["status"] or "–"),
                     mean, ci, number(p["acceptance_length"], 2),
                     " / ".join(number(v, 2) for v in p["per_position"]) or "–",
                     p["gate"], number(p["roofline_pct"], 1)])
    return rows


MODEL_HEADERS = ["depth", "predicted tok/s", "95% interval", "launches' mean tok/s",
                 "95% CI over launches", "launches", "tokens per step", "verify step cost"]


def model_rows(section: dict) -> list[list[str]]:
    """The depth model's prediction per depth beside what its launches measured."""
    out = []
    for r in section["model"]["rows"] if section["model"] else []:
        predicted, interval = fitted(r["predicted"], r["ci95_low"], r["ci95_high"])
        mean, measured = fitted(r["measured"], r["measured_low"], r["measured_high"])
        out.append([str(r["depth"]), predicted, interval, mean, measured,
                    str(r["n"]), number(r["tokens_per_step"], 2),
                    "–" if r["step_ratio"] is None else f"{r['step_ratio']:.2f}×"])
    return out


def model_lines(section: dict) -> list[str]:
    """The depth model in sentences: what it made of the launches and whether it decided."""
    model = section["model"]
    if not model:
        return []
    how = (f"it made the decision: {decision_text(section['decision'])}" if model["decided"] else
           "the black-box rule decided, over every launch" if model["state"] == "rejected" else
           "it did not decide")
    lines = [f"Depth model: {model['state']} ({how}): {model['reason']}", model["summary"]]
    if model["inside_launches"] and model["inside_kind"] == "pair":
        lines.append(f"The step cost was measured inside {model['inside_launches']} launch(es): the "
                     "time of a step serving two requests at once against a step serving one, in "
                     "the same launch (this drafter drafts at every step, so no launch has plain "
                     "steps to compare with), so the launch-to-launch spread cancels out of it.")
    elif model["inside_launches"]:
        lines.append(f"The step cost was measured inside {model['inside_launches']} launch(es): each "
                     "verify step's time against the plain steps of the same launch (steps where "
                     "the drafter found nothing to propose), so the launch-to-launch spread "
                     "cancels out of it.")
    return lines


def sweep_lines(section: dict) -> list[str]:
    """The decision and why, gate failures, stability warnings, comparisons, as sentences."""
    d = section["decision"]
    cands = d["candidates"]
    head = "Decision: no depth" if d["depth"] is None else f"Decision: {decision_text(d)}"
    lines = [f"{head}. {d['reason'] or ''}".rstrip()]
    if section["gate_note"]:
        lines.append(f"Note: {section['gate_note']}.")
    if cands:
        lines.append("Depths the data cannot separate from it: " + ", ".join(map(str, cands)) + ".")
    for p in section["points"]:
        if p["gate"] == "fail":
            lines.append(f"Gate failed at depth {p['depth']} (never recommended): {p['gate_reason']}")
        for reason in p["stability"]:
            lines.append(f"Depth {p['depth']} is unstable across launches: {reason}")
    lines += [c["statement"] for c in section["comparisons"]]
    lines += [f"warning: {w}" for w in section["warnings"]]
    return lines
