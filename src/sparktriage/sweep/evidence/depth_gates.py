"""The gate of every depth of a sweep: each depth's greedy output against depth 0's.

Read from the launch folders: the gate's own greedy outputs (`gate.json`, sweep.evidence.gate),
else, when those gave none, the protocol's greedy streams (sweep.evidence.stream_gate); `source`
says which. A probe baseline's verdict joins the gate (`probe.json`).
"""

from __future__ import annotations

import json
from pathlib import Path

from sparktriage.sweep.evidence.gate import GreedyOutput, gate
from sparktriage.sweep.plan import SweepPlan
from sparktriage.sweep.evidence.stream_gate import protocol_outputs
from sparktriage.sweep.evidence.stream_gate import unit as stream_unit


def _outputs(run_path: Path, label: str) -> list[GreedyOutput] | None:
    try:
        doc = json.loads((run_path / "launches" / label / "gate.json").read_text(encoding="utf-8"))
        return [GreedyOutput.from_dict(o) for o in doc.get("outputs") or []]
    except (OSError, ValueError, KeyError, TypeError):
        return None


def _probe(run_path: Path, label: str) -> dict | None:
    try:
        return json.loads((run_path / "launches" / label / "probe.json").read_text(encoding="utf-8"))
    except (OSError, ValueError):
        return None


def _first_ok(records: list[dict], depth: int) -> str | None:
    return next((r["label"] for r in records if r.get("depth") == depth and r.get("status") == "ok"),
                None)


def _streamed(run_path: Path, records: list[dict], plan: SweepPlan, d: int, probe: dict | None) -> dict | None:
    """The gate of depth d from the protocol's greedy streams (sweep.evidence.stream_gate), or
    None."""
    zero, here = _first_ok(records, 0), _first_ok(records, d)
    if zero is None or here is None:
        return None
    workloads = plan.load_workloads()
    reference = protocol_outputs(run_path / "launches" / zero, workloads, plan.gate_tokens)
    outputs = protocol_outputs(run_path / "launches" / here, workloads, plan.gate_tokens)
    if not reference or not outputs:
        return None
    result = gate(reference, outputs, probe, near_ties=False)
    if result["state"] == "unchecked":
        return None
    what = stream_unit(run_path / "launches" / here, workloads)
    result["reason"] = (f"from the protocol's greedy streams ({what}, the first "
                        f"{plan.gate_tokens} tokens; the gate's own requests gave no output): "
                        + result["reason"])
    return {**result, "launch": here, "source": "protocol streams"}


def gate_by_depth(run_path: Path, records: list[dict], plan: SweepPlan) -> dict[int, dict]:
    """The gate of every depth: the greedy outputs kept in the launch folders, else (when the
    gate's requests gave none) the protocol's greedy streams; `source` says which."""
    collected = {}
    for r in records:
        if r.get("gate_collected") and r.get("status") == "ok" and r.get("depth") not in collected:
            collected[r["depth"]] = r["label"]
    reference = _outputs(run_path, collected[0]) if 0 in collected else None
    out = {}
    for d in plan.depths:
        label = collected.get(d)
        probe = _probe(run_path, label) if label and plan.baseline else None
        if d == 0:
            out[0] = gate(reference, reference, probe) if reference else {
                "state": "unchecked", "reason": "depth 0 has no greedy outputs", "prompts": [],
                "probe": None}
            if reference:
                out[0]["reason"] = "depth 0 is the gate's reference"
            out[0].update(launch=label, source="greedy requests" if reference else None)
            continue
        if label is None:
            entry = {"state": "unchecked", "reason": "no launch at this depth measured its greedy "
                     "outputs", "prompts": [], "probe": None, "launch": None, "source": None}
        else:
            entry = {**gate(reference, _outputs(run_path, label), probe), "launch": label,
                     "source": "greedy requests"}
        if entry["state"] == "unchecked":
            entry = _streamed(run_path, records, plan, d, probe) or {**entry, "source": None}
        out[d] = entry
    return out
