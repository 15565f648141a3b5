"""What a session found, read back from its files (`summarize`): launches (pooled or flagged
apart), probe, protocol, stalls (live and authoritative), sweep decision, report, signature."""

from __future__ import annotations

import json
from pathlib import Path

from sparktriage.documents.sweep import SweepDocument, read as read_sweep
from sparktriage.measure.steps import bench_summary
from sparktriage.session.context import Session
from sparktriage.session.plan import DONE


def _read(path: Path) -> dict | None:
    try:
        return json.loads(path.read_text(encoding="utf-8"))
    except (OSError, ValueError):
        return None


def _sweep(root: Path) -> SweepDocument | None:
    """The session's sweep record (None before the sweep wrote one); a sweep.json that is not
    one stops the summary with the file and the field named (the session wrote it)."""
    doc = _read(root / "sweep.json")
    return read_sweep(doc, str(root / "sweep.json")) if doc is not None else None


def summarize(session: Session) -> dict:
    """What the session found, from its files: launches (pooled or flagged apart), probe,
    protocol, stalls (live and authoritative), sweep decision, report."""
    state, root = session.state, session.run.path
    launches = []
    for record in state.doc["launches"]:
        folder = root / "launches" / record["label"]
        stalls = _read(folder / "stalls.json")
        live = [json.loads(line) for line in (folder / "live-stalls.jsonl").read_text().splitlines()
                if line.strip()] if (folder / "live-stalls.jsonl").is_file() else []
        launches.append({"label": record["label"], "step": record["step"], "depth": record["depth"],
                         "state": record["state"], "ready_s": record.get("ready_s"),
                         "flags": record.get("flags") or [], "pooled": record["state"] == DONE
                         and not record.get("flags") and record["step"] != "sweep",
                         "bench": bench_summary(_read(folder / "bench.json")),
                         "stall_findings": len((stalls or {}).get("findings") or []) if stalls else None,
                         "live_verdicts": len(live), "note": record.get("note"),
                         "redone_as": record.get("redone_as")})
    probe_label = next((s["launch"] for s in state.steps if s["kind"] == "probe" and s["state"] == DONE), None)
    probe = _read(root / "launches" / probe_label / "probe.json") if probe_label else None
    sweep = _sweep(root)
    report = next((s.get("outputs") for s in state.steps if s["kind"] == "report"), None)
    signature = next((s.get("outputs") for s in state.steps if s["kind"] == "signature"), None)
    return {"schema_version": 1, "kind": "session-result", "run": str(root),
            "preset": session.options.preset, "launches": launches,
            "probe": {"verdict": probe.get("verdict"), "tokens_spent": probe.get("tokens_spent"),
                      "baseline": probe.get("baseline") is not None} if probe else None,
            "sweep": sweep.decision.to_dict() if sweep is not None else None, "report": report, "signature": signature,
            "steps": [{"id": s["id"], "state": s["state"], "reason": s["reason"], "launch": s["launch"]}
                      for s in state.steps],
            "spent_s": state.doc.get("spent_s"), "estimate_s": state.doc.get("estimate_s")}
