"""The human-readable view of a `logs` document (a terminal-free `View`; cli/ draws it)."""

from __future__ import annotations

from sparktriage.logs import startup_time
from sparktriage.view import Table, View, clock, num


def _phase_table(doc: dict) -> Table:
    rows = tuple((p["name"] + (" (open)" if p["open"] else ""), clock(p["start"]), clock(p["end"]),
                  num(p["duration_s"]), (p["anchor"] or "")[:70]) for p in doc["phases"])
    return Table("Startup phases (wall clock)", ("phase", "start", "end", "seconds", "first line"),
                 rows, right=frozenset({"seconds"}), fold=True)


def _gap_table(doc: dict) -> Table:
    rows = tuple((g["name"], num(g["reported_s"], 2), num(g["wall_s"]), num(g["gap_s"]),
                  "unaccounted time" if g["significant"] else "") for g in doc["gaps"])
    return Table("Reported by vLLM vs wall clock", ("what", "reported s", "wall s", "gap s", ""),
                 rows, right=frozenset({"reported s", "wall s", "gap s"}))


def render(doc: dict) -> View:
    """The human-readable view of a `logs` document."""
    view = View()
    st = doc["startup"]
    state = ("complete" if st["complete"] else "FAILED" if st["failed"] else
             f"incomplete (in {st['current_phase']})")
    if not st["seen"]:
        state = "not in this log (it starts while serving)" if st["complete"] else "not found"
    head = (f"vLLM {doc['version'] or 'version unknown'}, model {doc['model'] or 'unknown'}: "
            f"startup {state}")
    if st["startup_s"] is not None:
        head += f": {startup_time.words(st['startup_s'])}"
    if st["attempts"] > 1:
        head += f" (attempt {st['attempts']})"
    view.line(head, "bold")
    if doc["phases"]:
        view.table(_phase_table(doc))
    if doc["gaps"]:
        view.table(_gap_table(doc))
    gaps = [g for g in sorted(doc["silences"], key=lambda x: -x["duration_s"])[:3]
            if g["duration_s"] >= 10]
    for gap in gaps:
        view.line(f"no log line for {gap['duration_s']:.0f} s during {gap['phase']} after: "
                  f"{gap['before'][:120]}")
    if gaps:
        view.line("(gaps between lines are not verdicts: `sparktriage stalls` tells a stall "
                  "from quiet progress)")
    reported = ", ".join(f"{k} {v:g}" for k, v in doc["reported"].items())
    if reported:
        view.line(f"reported: {reported}")
    thr = doc["throughput"]
    gen, prompt = thr["generation"], thr["prompt"]
    if gen["windows"]:
        view.line(
            f"generation throughput over {gen['windows']} windows of ~{thr['interval_s']:g} s: "
            f"mean {num(gen['mean'])}, active mean {num(gen['mean_active'])}, peak "
            f"{num(gen['peak'])} tok/s; prompt: mean {num(prompt['mean'])}, peak {num(prompt['peak'])}")
    spec = doc["spec_decode"]
    if spec:
        per_pos = ", ".join(f"{v:.3f}" for v in spec["per_position"])
        view.line(
            f"speculative decoding over {spec['windows']} windows: mean acceptance length "
            f"{num(spec['mean_acceptance_length'], 2)}, accepted {spec['accepted']} of "
            f"{spec['drafted']} drafted, per position [{per_pos}]")
    if doc["kernels"]:
        view.line("kernels: " + "; ".join(doc["kernels"]))
    if doc["warnings_total"]:
        view.line(f"{doc['warnings_total']} warnings ({len(doc['warnings'])} distinct; "
                  "see --json)")
    for e in doc["errors"][:10]:
        view.line(f"error {clock(e['time'])}: {e['text'][:300]}", "error")
    if doc["errors_total"] > 10:
        view.line(f"... {doc['errors_total'] - 10} more errors (see --json)")
    for f in doc["findings"]:
        style = f["severity"] if f["severity"] in ("error", "warning") else ""
        view.line(f"{f['severity']}: {f['text']}", style)
    return view


__all__ = ["render"]
