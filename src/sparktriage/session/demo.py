"""`sparktriage demo`: a whole consultant session on the embedded default, as a preset of the
session engine (sparktriage.session.runner: the same plan, runner and resume as `session run`).

The bundled tiny Qwen3-MoE model (provision/garbage/model, trained here) is served by the local
CPU vLLM through the launch supervisor with its collectors, once per speculative depth
(launches `L001`, `L002`, ...). The first launch is probed for garbage against the model's
committed fingerprint and measured with the delivered-token protocol (code and prose), the
server's `/metrics` and log reconciled with what arrived; every launch's startup is classified
for stalls; later launches measure the code workload with ngram speculation at their depth.
Then `sweep.json`, a report signed with a throwaway key made for the run, and a verification of
that report. A step that fails is recorded (session.json, and `demo.json` with its reason) and
the session goes on with what does not depend on it; nothing measured is lost; an interrupted
demo continues with `sparktriage session resume DIR` (docs/demo.md).
"""

from __future__ import annotations

import hashlib
import json
import shutil
import tempfile
from dataclasses import dataclass
from pathlib import Path

import yaml

from sparktriage.logs import startup_time
from sparktriage.signing.demokey import make_demo_key
from sparktriage.session.plan import SessionOptions
from sparktriage.session.runner import open_session, run_session
from sparktriage.measure.steps import bench_summary
from sparktriage.store.documents import write_document
from sparktriage.store.rundir import SCHEMA_VERSION, RunDir
from sparktriage.sweep.evidence.acceptance import from_log
from sparktriage.sweep.evidence.launch import workload_rate
from sparktriage.errors import InputError
from sparktriage.testbed import garbage as garbage_package
from sparktriage.testbed.garbage.variants import trained_model
from sparktriage.testbed.paths import Testbed
from sparktriage.testbed.ports import free_port
from sparktriage.testbed.server import SERVE_ENV, cache_env
from sparktriage.progress import Observer
from sparktriage.view import View

NODE = "local"
SWEEP_WORKLOAD = "code"
IDENTITY = "sparktriage-demo"


@dataclass(frozen=True)
class DemoSettings:
    """What the demo runs (the CLI's options)."""

    depths: tuple[int, ...] = (0, 2)
    launches: int = 1  # per depth
    requests: int = 15
    max_tokens: int = 256
    startup_timeout_s: float = 600.0
    probe: bool = True
    formats: str = "md,pdf"


MODEL_NAME = "tiny-moe"  # the trained model's folder under the test bed's models/


def fingerprint_path() -> Path | None:
    """The shipped fingerprint of the bundled model (a known-good launch of it; package data,
    so an installed package finds it without a checkout)."""
    path = Path(garbage_package.__file__).with_name("fingerprint.json")
    return path if path.is_file() else None


def demo_model(bed: Testbed, given: Path | None = None) -> Path:
    """The model the demo serves: `--model`, else the test bed's `models/tiny-moe`, else the
    checkout's committed `provision/garbage/model`; InputError when none has weights."""
    if given is not None:
        if not (given / "model.safetensors").is_file() or not (given / "config.json").is_file():
            raise InputError(f"{given}: not a model folder (needs config.json and model.safetensors)")
        return given
    candidate = bed.model(MODEL_NAME)
    if (candidate / "model.safetensors").is_file():
        return candidate
    return trained_model()


@dataclass(frozen=True)
class DemoPlan:
    """What `demo` will do, declared before anything runs (`--dry-run` prints it)."""

    vllm: Path
    model: Path
    fingerprint: Path | None
    depths: tuple[int, ...]
    launches: int
    workloads: tuple[str, ...]
    requests: int
    max_tokens: int
    probe: bool
    formats: str

    def to_json(self) -> dict:
        return {"schema_version": SCHEMA_VERSION, "kind": "demo-plan", "vllm": str(self.vllm),
                "model": str(self.model),
                "fingerprint": str(self.fingerprint) if self.fingerprint else None,
                "launches": [{"depth": d, "count": self.launches} for d in self.depths],
                "workloads": list(self.workloads), "requests": self.requests,
                "max_tokens": self.max_tokens, "probe": self.probe, "formats": self.formats}

    def view(self) -> View:
        """The plan as plain lines."""
        return View.of_lines([f"vLLM: {self.vllm}", f"model: {self.model}",
                f"fingerprint: {self.fingerprint or 'none (the probe runs without a baseline)'}",
                "launches: " + ", ".join(f"{self.launches} x depth {d}" for d in self.depths),
                f"workloads: {', '.join(self.workloads)} ({self.requests} requests of "
                f"{self.max_tokens} tokens)", f"probe: {'yes' if self.probe else 'no'}",
                f"report formats: {self.formats}"])


def plan_demo(bed: Testbed, settings: DemoSettings, model: Path | None = None) -> DemoPlan:
    """Declare the demo: which vLLM, model, fingerprint and launches (nothing is started)."""
    return DemoPlan(vllm=bed.vllm, model=demo_model(bed, model), fingerprint=fingerprint_path(),
                    depths=settings.depths, launches=settings.launches,
                    workloads=("code", "prose"), requests=settings.requests,
                    max_tokens=settings.max_tokens, probe=settings.probe, formats=settings.formats)


def deployment(bed: Testbed, model: Path, port: int, scratch: Path, depth: int,
               startup_s: float = 600.0, temp: Path | None = None) -> dict:
    """The deployment document of one demo launch (docs/launch.md): one local node; its caches
    in the bed's shared folder, else fresh in `scratch` (testbed.server.cache_env); its
    server's temporary folder is `temp` when given (vLLM's IPC sockets and rendezvous files and
    Inductor's precompiled header go there instead of the machine's /tmp)."""
    doc: dict = {
        "schema_version": 1, "name": "demo-tiny-moe",
        "lab": {"nodes": [{"name": NODE, "host": "127.0.0.1", "gpu": "none"}]},
        "model": {"path": str(model), "name": "tiny"},
        "engine": {"vllm": str(bed.vllm)},
        "serve": {"host": "127.0.0.1", "port": port, "max_model_len": 1024, "dtype": "float32",
                  "enforce_eager": True},
        "env": {**SERVE_ENV, **cache_env(bed, scratch)},
        "timeouts": {"startup_s": startup_s, "teardown_grace_s": 15},
        "collect": {"interval_s": 1.0, "stacks_interval_s": 15.0},
    }
    if temp is not None:
        doc["env"]["TMPDIR"] = str(temp)
    if depth > 0:
        doc["speculative"] = {"method": "ngram", "num_speculative_tokens": depth,
                              "extra": {"prompt_lookup_max": 4, "prompt_lookup_min": 2}}
    return doc


SOCKET_PATH_MAX = 107  # bytes of a Unix socket path (vLLM's IPC sockets live in TMPDIR)


def scratch_folder(run: RunDir) -> Path:
    """The demo's own folder of caches and temporary files, removed when the demo ends: short
    (vLLM's IPC socket paths are limited to 107 bytes) and the same for every process that runs
    or resumes this run directory (the deployment written at the start names it)."""
    digest = hashlib.sha256(str(run.path.resolve()).encode()).hexdigest()[:12]
    return Path(tempfile.gettempdir()) / f"sparktriage-demo-{digest}"


def run_demo(run: RunDir, bed: Testbed, settings: DemoSettings, observe: Observer,
             model_path: Path | None = None) -> dict:
    """Run the demo as a session preset into `run` (the same engine as `session run`:
    session.json, resume with `sparktriage session resume DIR`); return `demo.json` (also
    written there)."""
    model = demo_model(bed, model_path)
    baseline = fingerprint_path()
    scratch = scratch_folder(run)
    temp = scratch / "tmp"  # its servers' TMPDIR, unless too long for vLLM's socket names
    temp.mkdir(parents=True, exist_ok=True)  # also when resuming: same path
    deployment_path = run.path / "deployment.yaml"
    if not deployment_path.exists():
        spec = deployment(bed, model, free_port(), scratch, 0, settings.startup_timeout_s,
                          temp=temp if len(str(temp)) + 1 + 36 < SOCKET_PATH_MAX else None)
        deployment_path.write_text(yaml.safe_dump(spec, sort_keys=False), encoding="utf-8")
    key = run.path / "keys" / "demo_ed25519"
    if not key.exists():
        make_demo_key(key, IDENTITY)
    options = SessionOptions(
        deployment=str(deployment_path.resolve()), preset="demo", launches=settings.launches,
        depths=settings.depths, method="ngram", requests=settings.requests,
        max_tokens=settings.max_tokens, workloads=("code,prose",), sweep_workload=SWEEP_WORKLOAD,
        baseline=str(baseline) if baseline else None, sign=str(key.resolve()),
        sign_identity=IDENTITY, formats=settings.formats, probe=settings.probe)
    session = open_session(run.path, options, ["sparktriage", "demo"], observe)
    try:
        result = run_session(session)
    finally:
        shutil.rmtree(scratch, ignore_errors=True)
    summary = demo_summary(run, session.state.doc, result, model, baseline)
    write_document(run.path / "demo.json", summary)
    return summary


def _report_files(folder: str | None) -> int:
    """How many files the report folder holds (MANIFEST and signature included)."""
    path = Path(folder) if folder else None
    if path is None or not path.is_dir():
        return 0
    return sum(1 for p in path.rglob("*") if p.is_file() and not p.is_symlink())


def demo_summary(run: RunDir, state: dict, result: dict, model: Path, baseline: Path | None) -> dict:
    """`demo.json` (docs/demo.md) from the session's state and result."""
    launches = []
    first_bench = None
    for record in state["launches"]:
        if record["state"] not in ("done", "failed"):
            continue  # interrupted launches stay in session.json, redone by later ones
        folder = run.path / "launches" / record["label"]
        stalls, logs, bench = (_read(folder / n) for n in ("stalls.json", "logs.json", "bench.json"))
        if first_bench is None and record["step"] == "launch-1":
            first_bench = bench
        depth = record["depth"]
        launches.append({"label": record["label"], "depth": depth,
                         "outcome": record.get("outcome") or record["state"],
                         "ready_s": record.get("ready_s"),
                         "startup_s": startup_time.of_logs(logs),
                         "stall_findings": len((stalls or {}).get("findings") or []),
                         "delivered_tok_s": workload_rate(bench, SWEEP_WORKLOAD),
                         "e2e_tok_s": workload_rate(bench, SWEEP_WORKLOAD, "e2e_tok_s"),
                         "acceptance_length": ((from_log(logs) or {}).get("mean_acceptance_length")
                                               if depth else None)})
    sweep = _read(run.path / "sweep" / "sweep.json") or {}
    for entry in sweep.get("launches") or []:  # the sweep's own launches (DIR/sweep/launches)
        folder = run.path / "sweep" / "launches" / entry["label"]
        stalls = _read(folder / "stalls.json")
        launches.append({"label": entry["label"], "depth": entry["depth"],
                         "outcome": "completed" if entry["status"] == "ok" else "failed",
                         "ready_s": entry.get("ready_s"),
                         "startup_s": startup_time.of_logs(_read(folder / "logs.json")),
                         "stall_findings": len((stalls or {}).get("findings") or []),
                         "delivered_tok_s": entry.get("delivered_tok_s"),
                         "e2e_tok_s": entry.get("e2e_tok_s"),
                         "acceptance_length": entry.get("acceptance_length")})
    probe_step = next((s for s in state["steps"] if s["kind"] == "probe"), None)
    probe = _read(run.path / "launches" / probe_step["launch"] / "probe.json") \
        if probe_step and probe_step["state"] == "done" else None
    report_step = next(s for s in state["steps"] if s["kind"] == "report")
    signature = next((s for s in state["steps"] if s["kind"] == "signature"), None)
    report = None
    if report_step["state"] == "done":
        outputs = report_step.get("outputs") or {}
        report = {"dir": outputs.get("dir"), "signed": outputs.get("signed"),
                  "fingerprint": outputs.get("fingerprint"),
                  "public_key": ((signature or {}).get("outputs") or {}).get("public_key"),
                  "allowed_signers_line": outputs.get("allowed_signers_line"),
                  "verified": bool(signature and signature["state"] == "done"
                                   and (signature.get("outputs") or {}).get("verified")),
                  "files": _report_files(outputs.get("dir"))}
    steps = [{"step": s["kind"], "launch": s["launch"],
              "status": "ok" if s["state"] == "done" else "failed", "reason": s["reason"]}
             for s in state["steps"] if s["kind"] not in ("launch", "signature")]
    steps += [{"step": "launch", "launch": l["label"],
               "status": "ok" if l["outcome"] == "completed" else "failed",
               "reason": None if l["outcome"] == "completed" else f"outcome {l['outcome']}"}
              for l in launches]
    return {
        "schema_version": SCHEMA_VERSION, "kind": "demo", "run": str(run.path), "model": str(model),
        "baseline": str(baseline) if baseline else None, "launches": launches,
        "probe": _probe_summary(probe), "bench": bench_summary(first_bench),
        "sweep": (result.get("sweep") or None), "report": report, "steps": steps,
    }


def _read(path: Path) -> dict | None:
    try:
        return json.loads(path.read_text(encoding="utf-8"))
    except (OSError, ValueError):
        return None


def _probe_summary(doc: dict | None) -> dict | None:
    if doc is None:
        return None
    return {"verdict": doc.get("verdict"), "pattern": doc.get("pattern"),
            "tokens_spent": doc.get("tokens_spent"), "baseline": doc.get("baseline") is not None}
