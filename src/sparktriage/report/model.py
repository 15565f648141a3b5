"""The report document: a versioned JSON model, a pure function of a (redacted) run directory.

`build_document` assembles every section (sections.py, results.py, sweep.py, roofline.py), the
summary (headline numbers and verdicts), the warnings and the methodology in words. The section
model (report/outline/) words this document once; markdown.py, pdf.py and html.py only lay that
out, and none of them computes anything. The one field that depends on when the report was
built is `generated_at`; everything else depends on the run directory alone (docs/report.md,
Determinism).
"""

from __future__ import annotations

from dataclasses import dataclass, field

from sparktriage import __version__
from sparktriage.report import methodology, page_one, roofline
from sparktriage.report.inputs import RunInputs
from sparktriage.report.results import (across_launches, delivered_series, launch_results,
                                        request_spans)
from sparktriage.report.sections import (PRODUCERS, deployment_section, environment_section,
                                         logged_windows, missing, probe_section,
                                         reconciliation_section, startup_section, status_of)
from sparktriage.report.summary import headline, verdicts
from sparktriage.report.sweep import depth_of_launch, sweep_section
from sparktriage.report.values import as_list, text
from sparktriage.signing.signing import Signing

SCHEMA_VERSION = 1  # bump on any breaking change of report.json
KIND = "sparktriage-report"
SECTION_ORDER = ("deployment", "environment", "startup", "probe", "protocol", "reconciliation",
                 "sweep", "roofline")


@dataclass(frozen=True)
class Context:
    """What the report needs besides the run directory."""

    generated_at: str
    anonymized: bool = False
    redaction: dict = field(default_factory=dict)
    signing: Signing | None = None


def _protocol(inputs: RunInputs, launches: list[dict]) -> dict:
    if not launches:
        return missing("no launch has protocol results", ["launches/<label>/bench.json"],
                       "bench.json")
    pools = across_launches(launches, depth_of_launch(inputs))
    return {"status": status_of(len(launches), len(inputs.launches)), "launches": launches,
            "across": pools}


def _series(inputs: RunInputs) -> list[dict]:
    out = []
    for label in inputs.launches:
        delivered = delivered_series(inputs, label)
        logged = logged_windows(inputs.launch_doc(label, "logs.json"))
        if not delivered and not logged:
            continue
        start = delivered[0]["start_unix"] if delivered else None
        if start is not None and start > 1e9 and all(w["t_unix"] > 1e9 for w in logged):
            # each log window with its own start, on the delivered time axis (the plot draws it
            # as a bar over the span it covers, not as a point)
            logged = [{"t": round(w["t_unix"] - start, 3), "tok_s": w["tok_s"],
                       "start": None if w["start_unix"] is None else round(w["start_unix"] - start, 3),
                       "start_estimated": w["start_estimated"]} for w in logged]
        else:
            logged = []
        spans = request_spans(inputs, label, start) if start is not None else []
        out.append({"label": label, "delivered": [{"t": w["t"], "tok_s": w["tok_s"]} for w in delivered],
                    "logged": logged, "requests": spans})
    return out


def _warnings(sections: dict) -> list[str]:
    out: list[str] = []
    for name in SECTION_ORDER:
        section = sections[name]
        if section["status"] == "missing":
            out.append(f"{name}: missing ({section['reason']}); produce it with: "
                       f"{section['produce_with']}")
        elif section["status"] == "partial":
            out.append(f"{name}: only some launches have it")
    protocol = sections["protocol"]
    for launch in protocol.get("launches", []):
        for w in launch["workloads"]:
            out += [f"{launch['label']} {w['name']}: {warning}" for warning in w["warnings"]]
    for pool in protocol.get("across", []):
        depth = "" if pool["depth"] is None else f", depth {pool['depth']}"
        out += [f"{pool['workload']}{depth} across {len(pool['launches'])} launches: {reason}"
                for reason in pool["reasons"]]
    for launch in sections["probe"].get("launches", []):
        if launch["verdict"] not in ("healthy", "healthy-uncalibrated"):
            out.append(f"{launch['label']}: the garbage probe says {launch['verdict']}"
                       + (f" (pattern {launch['pattern']})" if launch["pattern"] else ""))
    for launch in sections["startup"].get("launches", []):
        for finding in launch["findings"]:
            out.append(f"{launch['label']}: startup {finding['kind']} on {finding['node'] or 'all nodes'}"
                       f" classified {finding['id']}")
    out += [f"sweep: {w}" for w in sections["sweep"].get("warnings", [])]
    return out


def build_document(inputs: RunInputs, context: Context) -> dict:
    """The report document for a redacted run directory."""
    run = inputs.doc("run.json") or {}
    launches = launch_results(inputs)
    sections = {
        "deployment": deployment_section(inputs),
        "environment": environment_section(inputs),
        "startup": startup_section(inputs),
        "probe": probe_section(inputs),
        "protocol": _protocol(inputs, launches),
        "reconciliation": reconciliation_section(inputs, launches),
        "sweep": sweep_section(inputs),
    }
    sections["roofline"] = roofline.compute(inputs.doc("deployment.yaml"), sections["protocol"],
                                            sections["sweep"])
    series = _series(inputs)
    if sections["reconciliation"]["status"] != "missing" or series:
        sections["reconciliation"]["series"] = series
    command = run.get("command")
    document = {
        "schema_version": SCHEMA_VERSION,
        "kind": KIND,
        "tool_version": __version__,
        "generated_at": context.generated_at,
        "run": {"created": text(run.get("created")), "tool_version": text(run.get("tool_version")),
                "command": [str(c) for c in as_list(command)] if isinstance(command, list)
                else text(command), "launches": inputs.launches},
        "redaction": {"anonymized": context.anonymized, **context.redaction},
        "page_one": page_one.build(inputs, sections),
        "summary": {},
        "sections": sections,
        "warnings": _warnings(sections),
        "methodology": methodology.paragraphs(inputs, sections, context.anonymized),
        "verification": methodology.verification(context.signing),
        "producers": PRODUCERS,
        "plots": [],
        "data_files": [],
    }
    document["summary"] = {"headline": headline(sections), "verdicts": verdicts(sections, context.signing)}
    return document
