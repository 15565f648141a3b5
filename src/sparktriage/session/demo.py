"""`sparktriage demo`: a whole consultant session on the embedded default.

The bundled tiny Qwen3-MoE model (the test bed's models/tiny-moe, or provision/garbage/model in
a checkout; trained here) is served by the local
CPU vLLM through the launch supervisor with its collectors, once per speculative depth
(launches `L001`, `L002`, ...). The first launch is probed for garbage against the model's
shipped fingerprint (package data) and measured with the delivered-token protocol (code and prose), the
server's `/metrics` and log reconciled with what arrived; every launch's startup is classified
for stalls; later launches measure the code workload with ngram speculation at their depth.
The launches are run by the sweep engine (`sparktriage sweep`'s, one code path) on a fixed grid;
it writes `sweep.json`. Then a report signed with a throwaway key made for the run, and a verification of
that report. A step that fails is recorded in `demo.json` with its reason and the session goes on
with what does not depend on it; nothing measured is lost (docs/demo.md).
"""

from __future__ import annotations

import tempfile
from dataclasses import dataclass
from pathlib import Path

import yaml

from sparktriage.documents.bench import BenchDocument
from sparktriage.documents.session import DemoDocument
from sparktriage.progress import Observer, prefixed
from sparktriage.report.build import execute, plan_report
from sparktriage.report.keys import read_public_key
from sparktriage.report.signing import SignSpec
from sparktriage.report.verify import TrustAnchor, verify
from sparktriage.session.demokey import make_demo_key
from sparktriage.measure.steps import StepLog, bench_summary, probe_step, stalls_step
from sparktriage.store.documents import read_document, write_document
from sparktriage.store.rundir import SCHEMA_VERSION, LaunchDir, RunDir
from sparktriage.store.typed import Document, check, parse
from sparktriage.sweep.engine import plan_sweep, run_sweep
from sparktriage.errors import InputError
from sparktriage.testbed import garbage as garbage_package
from sparktriage.testbed.garbage.variants import trained_model
from sparktriage.testbed.paths import Testbed
from sparktriage.testbed.ports import free_port

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

    def lines(self) -> list[str]:
        """The plan as plain lines."""
        return [f"vLLM: {self.vllm}", f"model: {self.model}",
                f"fingerprint: {self.fingerprint or 'none (the probe runs without a baseline)'}",
                "launches: " + ", ".join(f"{self.launches} x depth {d}" for d in self.depths),
                f"workloads: {', '.join(self.workloads)} ({self.requests} requests of "
                f"{self.max_tokens} tokens)", f"probe: {'yes' if self.probe else 'no'}",
                f"report formats: {self.formats}"]


def plan_demo(bed: Testbed, settings: DemoSettings, model: Path | None = None) -> DemoPlan:
    """Declare the demo: which vLLM, model, fingerprint and launches (nothing is started)."""
    return DemoPlan(vllm=bed.vllm, model=demo_model(bed, model), fingerprint=fingerprint_path(),
                    depths=settings.depths, launches=settings.launches,
                    workloads=("code", "prose"), requests=settings.requests,
                    max_tokens=settings.max_tokens, probe=settings.probe, formats=settings.formats)


def deployment(bed: Testbed, model: Path, port: int, scratch: Path, depth: int,
               startup_s: float = 600.0) -> dict:
    """The deployment document of one demo launch (docs/launch.md): one local node."""
    doc: dict = {
        "schema_version": 1, "name": "demo-tiny-moe",
        "lab": {"nodes": [{"name": NODE, "host": "127.0.0.1", "gpu": "none"}]},
        "model": {"path": str(model), "name": "tiny"},
        "engine": {"vllm": str(bed.vllm)},
        "serve": {"host": "127.0.0.1", "port": port, "max_model_len": 1024, "dtype": "float32",
                  "enforce_eager": True},
        "env": {"HF_HUB_OFFLINE": "1", "TRANSFORMERS_OFFLINE": "1", "VLLM_CPU_KVCACHE_SPACE": "1",
                "VLLM_NO_USAGE_STATS": "1", "DO_NOT_TRACK": "1",
                "VLLM_CACHE_ROOT": str(scratch / "vllm-cache"),
                "TORCHINDUCTOR_CACHE_DIR": str(scratch / "inductor-cache")},
        "timeouts": {"startup_s": startup_s, "teardown_grace_s": 15},
        "collect": {"interval_s": 1.0, "stacks_interval_s": 15.0},
    }
    if depth > 0:
        doc["speculative"] = {"method": "ngram", "num_speculative_tokens": depth,
                              "extra": {"prompt_lookup_max": 4, "prompt_lookup_min": 2}}
    return doc


def run_demo(run: RunDir, bed: Testbed, settings: DemoSettings, observe: Observer,
             model: Path | None = None) -> dict:
    """Run the session into `run`; return `demo.json` (also written there).

    The launches are the sweep engine's (sweep.engine.run_sweep, one code path with
    `sparktriage sweep`): a fixed grid of `settings.launches` per depth, the first launch also
    measuring the prose workload and probed; every launch's startup is classified after."""
    plan_d = plan_demo(bed, settings, model)
    model, baseline = plan_d.model, plan_d.fingerprint
    steps = StepLog(observe)
    first: dict = {}
    with tempfile.TemporaryDirectory(prefix="sparktriage-demo-") as scratch:
        spec = deployment(bed, model, free_port(), Path(scratch), max(settings.depths),
                          settings.startup_timeout_s)
        deploy = run.path / "deployment.yaml"
        deploy.write_text(yaml.safe_dump(spec, sort_keys=False), encoding="utf-8")
        grid = len(set(settings.depths) | {0}) * settings.launches
        plan = plan_sweep(deploy, depths=settings.depths, max_launches=grid,
                          min_launches_per_depth=settings.launches, requests=settings.requests,
                          max_tokens=settings.max_tokens, workloads=(SWEEP_WORKLOAD,),
                          first_launch_workloads=("prose",))

        def while_ready(endpoint: str, launch: LaunchDir, record: dict) -> None:
            if launch.label != "L001":
                return
            first["bench"] = _read(launch.path / "bench.json", BenchDocument)
            if settings.probe:  # after the protocol: its traffic would fall into the log windows
                first["probe"] = steps.run("probe", launch.label, lambda: probe_step(
                    endpoint, launch, baseline,
                    observe=prefixed(observe, "probe-")))

        sweep = run_sweep(plan, run.path, observe, while_ready=while_ready).document
    launches: list[dict] = []
    for entry in sweep["launches"]:
        launch = run.launch(entry["label"])
        record = next(r for r in read_document(run.path / "sweep-state.json")["launches"]
                      if r["label"] == entry["label"])
        steps.record("launch", entry["label"], entry["reason"] if entry["status"] != "ok" else None)
        stalls = steps.run("stalls", entry["label"], lambda: stalls_step(launch))
        launches.append({"label": entry["label"], "depth": entry["depth"],
                         "outcome": record.get("outcome"), "ready_s": entry["ready_s"],
                         "stall_findings": len((stalls or {}).get("findings") or []),
                         "delivered_tok_s": entry["delivered_tok_s"], "e2e_tok_s": entry["e2e_tok_s"],
                         "acceptance_length": entry["acceptance_length"] if entry["depth"] else None})
    report = steps.run("report", None, lambda: _report(run, settings.formats, observe))
    summary = {
        "schema_version": SCHEMA_VERSION, "kind": "demo", "run": str(run.path), "model": str(model),
        "baseline": str(baseline) if baseline else None, "launches": launches,
        "probe": _probe_summary(first.get("probe")), "bench": bench_summary(first.get("bench")),
        "sweep": sweep["decision"], "report": report, "steps": steps.records,
    }
    write_document(run.path / "demo.json", check(DemoDocument, summary))
    return summary


def _read(path: Path, model: type[Document]) -> dict | None:
    """A document this session wrote, validated against its model; None when the step that
    writes it did not run (or failed before writing)."""
    if not path.is_file():
        return None
    doc = read_document(path)
    parse(model, doc, str(path))
    return doc


def _report(run: RunDir, formats: str, observe: Observer) -> dict:
    key = make_demo_key(run.path / "keys" / "demo_ed25519", IDENTITY)
    outcome = execute(plan_report(run.path, None, formats, SignSpec(str(key), IDENTITY)))
    public = key.with_name(key.name + ".pub")
    checked = verify(Path(outcome.report_dir),
                     TrustAnchor(key=read_public_key(public), source=str(public)))
    observe("report", {"dir": outcome.report_dir, "verified": checked.ok})
    return {"dir": outcome.report_dir, "signed": outcome.signed, "fingerprint": outcome.fingerprint,
            "public_key": str(public), "allowed_signers_line": outcome.allowed_signers_line,
            "verified": checked.ok, "files": len(outcome.files)}


def _probe_summary(doc: dict | None) -> dict | None:
    if doc is None:
        return None
    return {"verdict": doc.get("verdict"), "pattern": doc.get("pattern"),
            "tokens_spent": doc.get("tokens_spent"), "baseline": doc.get("baseline") is not None}
