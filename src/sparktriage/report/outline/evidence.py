"""The sections about what ran, in blocks: deployment, environment, startup and output quality.

Each builder takes the report document and its section (report.json `sections.<name>`) and
returns the section's blocks; a missing section is its heading and the one missing note.
"""

from __future__ import annotations

from sparktriage.report.environment import cross_node_rows
from sparktriage.report.format import cell, number, readable_key, seconds
from sparktriage.report.outline.blocks import (Abridged, Block, Bullets, Heading, Paragraph,
                                               code, data, figure, missing, strong, table, words)
from sparktriage.report.probe_text import NUMBER_HEADERS, group_title
from sparktriage.report.probe_text import groups as probe_groups

MAX_PHASES_PAGED = 9  # up to this many phase names, a paged rendering shows one table of durations


def deployment(doc: dict, section: dict) -> list[Block]:
    out: list[Block] = [Heading(2, words("Deployment"))]
    if section["status"] == "missing":
        return out + [missing(section)]
    out.append(table(["setting", "value"], [[readable_key(k), v] for k, v in section["rows"]], (0.4, 0.6)))
    if section.get("client_code"):
        out.append(Paragraph(words("Client code the consultant accepted by name before launching "
                                   "(it runs by the client's choice, docs/security.md):")))
        out.append(Bullets(tuple(words(code(i["name"], own_words=False), ": ", data(i["what"]))
                                 for i in section["client_code"])))
    return out


def environment(doc: dict, section: dict) -> list[Block]:
    out: list[Block] = [Heading(2, words("Environment"))]
    if section["status"] == "missing":
        return out + [missing(section)]
    out.append(Paragraph(words("What changes behaviour (versions, GPU, driver, NCCL, interconnect, env "
                               "vars); each node's full capture is in data/ (see the files list).")))
    for group in section.get("tables", []):
        out += [Heading(3, words("Launches ", data(", ".join(group["launches"])),
                                 f": {len(group['nodes'])} node(s)")),
                table(["setting", *group["nodes"]], group["rows"])]
    for launch in section["launches"]:
        if not launch["differs"]:
            continue
        rows, other = cross_node_rows(launch["differs"])
        if rows:
            out += [Paragraph(words("Launch ", data(launch["label"]), ": settings that differ between "
                                    "nodes and can change results:")),
                    table(["setting", *launch["nodes"]], rows)]
        if other:
            out.append(Paragraph(words(f"{other} other captured settings differ (addresses, times, "
                                       "counters; ", code("bundle/environment-diff.json"), " in data/)."),
                                 note=True))
    return out


def _phase_names(launches: list[dict]) -> list[str]:
    names: list[str] = []
    for launch in launches:
        for p in sorted(launch["phases"], key=lambda p: p["start"]):
            if p["name"] not in names:
                names.append(p["name"])
    return names


def _durations(launches: list[dict], names: list[str]) -> list[Block]:
    """One row per launch and node, one column per phase: the paged rendering's startup table."""
    rows = []
    for launch in launches:
        for node in sorted({p["node"] or "all" for p in launch["phases"]}):
            took = {p["name"]: p["duration_s"] for p in launch["phases"] if (p["node"] or "all") == node}
            rows.append([launch["label"], node, seconds(launch["ready_s"]), *[number(took.get(n)) for n in names]])
    return [Paragraph(words("Phase durations in seconds (report.md lists every start and end):"), note=True),
            table(["launch", "node", "ready", *names], rows)]


def _stall(f: dict) -> list[Block]:
    head = Paragraph(words(strong(f["kind"], False), strong(" on "), strong(f["node"] or "all nodes", False),
                           " in ", data(f["phase"] or "?"),
                           f", {number(f['start'])}–{number(f['end'])} s ({seconds(f['duration_s'])}): ",
                           strong(f["id"], False), " (confidence ", data(cell(f["confidence"])), ")"))
    items = [words("evidence: ", data(e)) for e in f["evidence"]]
    items += [words("not ", data(a["id"]), ": ", data(a["why_not"])) for a in f["alternatives"]]
    items += [words("fix: ", data(f["fix"]))] if f["fix"] else []
    return [head] + ([Bullets(tuple(items), note=True)] if items else [])


def startup(doc: dict, section: dict) -> list[Block]:
    out: list[Block] = [Heading(2, words("Startup"))]
    if section["status"] == "missing":
        return out + [missing(section)]
    names = _phase_names(section["launches"])
    one_table = bool(names) and len(names) <= MAX_PHASES_PAGED
    if one_table:
        out.append(Abridged((), tuple(_durations(section["launches"], names))))
    for launch in section["launches"]:
        phases = table(["phase", "node", "start s", "end s", "duration s"],
                       [[p["name"], p["node"] or "all", number(p["start"]), number(p["end"]),
                         number(p["duration_s"])] for p in launch["phases"]])
        shown: list[Block] = [
            Heading(3, words("Launch ", data(launch["label"]))),
            Paragraph(words("Source: ", code(launch["source"]), f"; ready after {seconds(launch['ready_s'])}"
                            + ("" if launch["classified"] else " (timeline only: stalls not classified)") + ".")),
            Abridged((phases,), ()) if one_table else phases]
        if launch["reported"]:
            shown.append(Paragraph(words("vLLM's own durations: ",
                                         data(", ".join(f"{k} {v:g}" for k, v in launch["reported"].items())))))
        if launch["classified"] and not launch["findings"]:
            shown.append(Paragraph(words("No stall found.")))
        for f in launch["findings"]:
            shown += _stall(f)
        quiet = one_table and launch["classified"] and not launch["findings"]
        out += [Abridged(tuple(shown), ())] if quiet else shown
    classified = [l for l in section["launches"] if l["classified"]]
    if one_table and classified and not any(l["findings"] for l in classified):
        out.append(Abridged((), (Paragraph(words("No stall found in any classified launch.")),)))
    for plot in doc["plots"]:
        if plot["file"].startswith("plots/startup"):
            out += figure(doc, plot["file"][len("plots/"):])
    return out


def probe(doc: dict, section: dict) -> list[Block]:
    out: list[Block] = [Heading(2, words("Output quality (garbage probe)"))]
    if section["status"] == "missing":
        return out + [missing(section)]
    for labels, launch in probe_groups(section["launches"]):  # each distinct result once
        pattern = [" (pattern ", data(launch["pattern"]), ")"] if launch["pattern"] else []
        out += [Heading(3, words(data(group_title(labels)), ": ", strong(launch["verdict"], False), *pattern)),
                Paragraph(words("Baseline: ", data(launch["baseline"] or "none"),
                                f"; tokens spent {number(launch['tokens_spent'], 0)}; wall time "
                                f"{seconds(launch['wall_s'])}.")),
                table(["family", "status", "what it checked and found"],
                      [[f["name"], f["status"], f["sentence"]] for f in launch["families"]], (0.16, 0.1, 0.74))]
        numbers = [row for f in launch["families"] for row in f["numbers"]]
        if numbers:
            out.append(table(NUMBER_HEADERS, numbers, (0.2, 0.5, 0.3)))
    return out


__all__ = ["deployment", "environment", "probe", "startup"]
