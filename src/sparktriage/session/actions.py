"""The session's steps that work on what its launches left in the run folder: the authoritative
stall classification of a launch, the sweep (session/sweep_step.py: the sweep engine, launching
through the same launch loop as the runner, measure.loop, with the session's process book), the environment differences across nodes, the report and its signature.
Each takes the session and its step and returns why it failed, or None."""

from __future__ import annotations

import json
from pathlib import Path

from sparktriage.measure.steps import stalls_step
from sparktriage.session.context import Session, attached_launch, group_label
from sparktriage.session.sweep_step import run_engine
from sparktriage.store.documents import write_document


def _stalls(session: Session, step: dict) -> str | None:
    if "of" in step["inputs"]:
        label = group_label(session.state, step["inputs"]["of"])
        if label is None:
            return f"{step['inputs']['of']} did not complete: nothing to classify"
        step["launch"] = label
        stalls_step(session.run.launch(label))
    else:  # an attached server's log
        launch = attached_launch(session, fresh=False)
        step["launch"] = launch.label
        stalls_step(launch, Path(step["inputs"]["log"]))
    return None


def _sweep(session: Session, step: dict) -> str | None:
    state, inputs = session.state, step["inputs"]
    labels = tuple(l for g in inputs["base_launches"] if (l := group_label(state, g)))
    if not labels:
        return "no launch of the deployment as given completed: nothing to compare against"

    run_engine(session.run.path, session.plan, session.deployment, session.observe,
               session.state)
    return None


def _envdiff(session: Session, step: dict) -> str | None:
    launches = []
    for record in session.state.doc["launches"]:
        diff = session.run.path / "launches" / record["label"] / "bundle" / "environment-diff.json"
        try:
            doc = json.loads(diff.read_text(encoding="utf-8"))
        except (OSError, ValueError):
            doc = None
        launches.append({"label": record["label"], "state": record["state"],
                         "flags": record.get("flags") or [], "environment_diff": doc})
    write_document(session.run.path / "envdiff.json",
                   {"schema_version": 1, "kind": "session-envdiff", "launches": launches})
    return None


def _report(session: Session, step: dict) -> str | None:
    from sparktriage.report.build import execute, plan_report
    from sparktriage.signing.signing import SignSpec
    options = session.options
    sign = SignSpec(options.sign, options.sign_identity) if options.sign else None
    outcome = execute(plan_report(session.run.path, None, options.formats, sign))
    step["outputs"] = {"dir": outcome.report_dir, "signed": outcome.signed,
                       "fingerprint": outcome.fingerprint,
                       "allowed_signers_line": outcome.allowed_signers_line,
                       "map": outcome.map_path, "secrets_replaced": outcome.secrets_replaced}
    session.observe("session-note", {"text": f"report {outcome.report_dir} (signed: {outcome.signed})"})
    return None


def _signature(session: Session, step: dict) -> str | None:
    from sparktriage.signing.keys import read_public_key
    from sparktriage.signing.verify import TrustAnchor, verify
    key = Path(step["inputs"]["key"])
    public = key if key.name.endswith(".pub") else key.with_name(key.name + ".pub")
    if not public.is_file():
        return f"no public key {public} to check the signature with"
    checked = verify(session.run.path / "report", TrustAnchor(key=read_public_key(public), source=str(public)))
    step["outputs"] = {"verified": checked.ok, "public_key": str(public)}
    return None if checked.ok else "the report's signature does not verify"


ACTIONS = {"stalls": _stalls, "sweep": _sweep, "envdiff": _envdiff, "report": _report,
            "signature": _signature}
