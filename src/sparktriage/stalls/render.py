"""Plain-text rendering of a `stalls` document (a terminal-free `View`; the CLI decides where it goes)."""

from __future__ import annotations

from sparktriage.view import View


def _rel(t: float | None, origin: float) -> str:
    return "-" if t is None else f"+{t - origin:.1f}s"


def _took(f: dict) -> str:
    if f["duration_s"] is None:  # an untimed excerpt
        return "(no time: untimed excerpt)"
    return f"for {f['duration_s']:.0f} s{' (until observation ended)' if f['open_ended'] else ''}"


def render(document: dict) -> View:
    """The startup timeline with stalls marked and, per stall, verdict, evidence and fix."""
    origin = min((n["start"] for n in document["nodes"].values() if n["start"] is not None),
                 default=0.0)
    out: list[str] = [f"Stalls in {document['input']['path']} ({document['input']['form']})"]
    if document["input"].get("timed") is False:
        out.append("untimed excerpt: no line has a time stamp, so stall durations cannot be "
                   "judged; only failures are reported")
    for name, node in document["nodes"].items():
        sources = ", ".join(node["sources"]) or "none"
        out.append(f"node {name}: {node['outcome']}, {node['lines']} log lines, "
                   f"evidence: {sources}")
        rows = node["phases"]
        for i, phase in enumerate(rows):
            # a finding is flagged on the last row of its phase that began before it
            marks = [f for f in document["findings"] if f["node"] == name
                     and f["phase"] == phase["name"] and phase["start"] <= f["start"] + 0.01
                     and not any(r["name"] == f["phase"] and r["start"] <= f["start"] + 0.01
                                 for r in rows[i + 1:])]
            flag = "  <- " + ", ".join(f"{f['kind']} {f['duration_s']:.0f} s" for f in marks) \
                if marks else ""
            out.append(f"  {_rel(phase['start'], origin):>10}  {phase['name']:<17}"
                       f"{phase['duration_s']:8.1f} s{flag}")
    for item in document.get("observations", []):
        out.append(f"observation on {item['node']} in {item['phase'] or 'an unknown phase'} at "
                   f"{_rel(item['start'], origin)}: {item['text']}")
    findings = document["findings"]
    if not findings and document["input"].get("timed") is False:
        out.append("No failure in the excerpt (stalls cannot be judged without times).")
        return View.of_lines(out)
    if not findings:
        out.append("No stall or failure: the start made steady progress.")
        return View.of_lines(out)
    out.append(f"{len(findings)} finding(s):")
    for i, f in enumerate(findings, 1):
        v = f["verdict"]
        out.append("")
        out.append(f"[{i}] {f['kind']} on {f['node']} in {f['phase'] or 'an unknown phase'}: {_rel(f['start'], origin)} "
                   f"{_took(f)} - {f['reason']}")
        if f.get("held_by"):
            out.append(f"    held by the slower node {f['held_by']}")
        if f.get("last_line"):
            out.append(f"    last line before: {f['last_line'][:140]}")
        out.append(f"    cause: {v['id']} (confidence {v['confidence']:.2f}, {v['state']}) "
                   f"- {v['title']}")
        for item in v["evidence"]:
            out.append(f"      + {item['condition']}: {item['observed'][:160]} "
                       f"[{item['node']} {_rel(item['t'], origin)}]")
        for alt in v["alternatives"]:
            out.append(f"      - {alt['id']}: {alt['why_not'][:220]}")
        if v["open"]:
            out.append(f"    still open (not separable with this evidence): {', '.join(v['open'])}")
        for advice in v["to_raise_confidence"]:
            out.append(f"    to raise confidence: {advice}")
        fix = v.get("fix")
        if fix:
            out.append(f"    fix: {fix['summary']}")
            out += [f"      * {step}" for step in fix["steps"]]
            out += [f"      measured: {item}" for item in fix["before_after"]]
    return View.of_lines(out)
