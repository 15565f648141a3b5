"""`DIR/session.json`: the declared plan and where it stands, rewritten atomically on every
change (write to a temporary file, fsync, rename), so a crash at any instant leaves either the
previous or the next state on disk, never a torn one.

The document (docs/formats.md, kind `session`): `options` (remembered for `resume`), `steps`
(id, kind, group, inputs, state, reason, launch, started, ended, notes), `launches` (every
launch folder the session made: label, step, state, depth, node state and flags),
`processes` (every server process the session started: node, pid, pgid, starttime, launch)
and `events` (survivors stopped, interrupted launches redone, ...).
"""

from __future__ import annotations

import json
import os
import threading
from pathlib import Path

from sparktriage.errors import InputError
from sparktriage.session.plan import DONE, FAILED, INTERRUPTED, PENDING, RUNNING, SessionOptions
from sparktriage.store.documents import dumps
from sparktriage.store.rundir import SCHEMA_VERSION, utc_now

FILE = "session.json"
KIND = "session"


def _atomic_write(path: Path, text: str) -> None:
    tmp = path.with_name(f".{path.name}.{os.getpid()}.tmp")
    with open(tmp, "w", encoding="utf-8") as out:
        out.write(text)
        out.flush()
        os.fsync(out.fileno())
    os.replace(tmp, path)


class SessionState:
    """The live `session.json` of one run directory; every mutation saves it."""

    def __init__(self, path: Path, doc: dict) -> None:
        self.path = path
        self.doc = doc
        self._lock = threading.RLock()

    # --- files ---------------------------------------------------------------------------

    @classmethod
    def create(cls, run_dir: Path, options: SessionOptions, steps: list[dict],
               estimate_s: float) -> "SessionState":
        doc = {"schema_version": SCHEMA_VERSION, "kind": KIND, "created": utc_now(),
               "options": options.to_json(), "estimate_s": estimate_s, "steps": steps,
               "launches": [], "processes": [], "events": [], "finished": None}
        state = cls(run_dir / FILE, doc)
        state.save()
        return state

    @classmethod
    def load(cls, run_dir: Path) -> "SessionState":
        path = run_dir / FILE
        try:
            doc = json.loads(path.read_text(encoding="utf-8"))
        except FileNotFoundError:
            raise InputError(f"{run_dir}: no {FILE} (not a session directory)") from None
        except (OSError, ValueError) as exc:
            raise InputError(f"{path}: not a readable session document ({exc})") from None
        if not isinstance(doc, dict) or doc.get("kind") != KIND:
            raise InputError(f"{path}: kind is not {KIND!r}")
        if doc.get("schema_version") != SCHEMA_VERSION:
            raise InputError(f"{path}: schema_version {doc.get('schema_version')} is not supported")
        return cls(path, doc)

    def save(self) -> None:
        """Write the document, secrets replaced (the redaction stage every writer uses: engine
        command lines in the node state may carry tokens)."""
        from sparktriage.redact import run as redaction
        with self._lock:
            _atomic_write(self.path, json.dumps(json.loads(dumps(redaction.document(self.doc))),
                                                indent=2, ensure_ascii=False) + "\n")

    # --- reading -------------------------------------------------------------------------

    @property
    def options(self) -> SessionOptions:
        return SessionOptions.from_json(self.doc["options"])

    @property
    def steps(self) -> list[dict]:
        return self.doc["steps"]

    def step(self, step_id: str) -> dict:
        for step in self.steps:
            if step["id"] == step_id:
                return step
        raise KeyError(step_id)

    def group(self, group: str) -> list[dict]:
        return [s for s in self.steps if s["group"] == group]

    def first_open(self) -> dict | None:
        """The first step that is not done (failed steps count as done: they were tried)."""
        return next((s for s in self.steps if s["state"] not in (DONE, FAILED)), None)

    def launch_record(self, label: str) -> dict | None:
        return next((l for l in self.doc["launches"] if l["label"] == label), None)

    # --- changes -------------------------------------------------------------------------

    def set_state(self, step: dict, state: str, reason: str | None = None,
                  launch: str | None = None) -> None:
        with self._lock:
            step["state"] = state
            step["reason"] = reason
            if launch is not None:
                step["launch"] = launch
            if state == RUNNING:
                step["started"] = utc_now()
                step["ended"] = None
            elif state in (DONE, FAILED, INTERRUPTED):
                step["ended"] = utc_now()
            self.save()

    def note(self, step: dict, text: str) -> None:
        with self._lock:
            step["notes"].append({"t": utc_now(), "text": text})
            self.save()

    def event(self, kind: str, text: str, **details) -> None:
        with self._lock:
            self.doc["events"].append({"t": utc_now(), "kind": kind, "text": text, **details})
            self.save()

    def add_launch(self, record: dict) -> None:
        with self._lock:
            self.doc["launches"].append({"started": utc_now(), "ended": None, "flags": [],
                                         "note": None, **record})
            self.save()

    def update_launch(self, label: str, **fields) -> None:
        with self._lock:
            record = self.launch_record(label)
            if record is not None:
                record.update(fields)
                self.save()

    # the run's process book (measure.loop.Processes): the session's launches and its sweep's
    def process_started(self, label: str, details: dict) -> None:
        record = {"node": details.get("node"), "name": details.get("name"),
                  "pid": details.get("pid"), "pgid": details.get("pgid"),
                  "starttime": details.get("starttime"), "launch": label}
        with self._lock:
            self.doc["processes"].append({"recorded": utc_now(), "stopped": None, **record})
            self.save()

    def launch_torn_down(self, label: str) -> None:
        with self._lock:
            for p in self.doc["processes"]:
                if p.get("launch") == label and not p.get("stopped"):
                    p["stopped"] = "teardown"
            self.save()

    def recover(self) -> list[str]:
        """After a crash: running launches become interrupted, running steps pending again
        (with a note); return what was said."""
        said = []
        with self._lock:
            for record in self.doc["launches"]:
                if record["state"] == RUNNING:
                    record["state"] = INTERRUPTED
                    record["ended"] = utc_now()
                    record["note"] = "the session ended while this launch ran; its records are kept here, unchanged"
                    said.append(f"launch {record['label']} was interrupted; it will be redone as a new launch")
            for step in self.steps:
                if step["state"] in (RUNNING, INTERRUPTED):
                    step["notes"].append({"t": utc_now(), "text":
                                          f"was {step['state']} when the session stopped; redone"
                                          + (f" (after launch {step['launch']})" if step["launch"] else "")})
                    step["state"] = PENDING
            self.save()
        return said
