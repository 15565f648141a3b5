"""`sparktriage demo`: a whole consultant session on the embedded default.

The bundled tiny Qwen3-MoE model (the test bed's models/tiny-moe, or provision/garbage/model in
a checkout; trained here) is served by the local
CPU vLLM through the launch supervisor with its collectors, once per speculative depth
(launches `L001`, `L002`, ...). The first launch is probed for garbage against the model's
shipped fingerprint (package data) and measured with the delivered-token protocol (code and prose), the
server's `/metrics` and log reconciled with what arrived; every launch's startup is classified
for stalls; later launches measure the code workload with ngram speculation at their depth.
Then `sweep.json`, a report signed with a throwaway key made for the run, and a verification of
that report. A step that fails is recorded in `demo.json` with its reason and the session goes on
with what does not depend on it; nothing measured is lost (docs/demo.md).
"""

from __future__ import annotations

import tempfile
from dataclasses import dataclass
from pathlib import Path
from typing import Callable

import yaml

from sparktriage.bench.workload import load_workloads
from sparktriage.bundle import layout
from sparktriage.config.deployment import load_deployment
from sparktriage.documents.bench import BenchDocument
from sparktriage.documents.logs import LogsDocument
from sparktriage.documents.session import DemoDocument
from sparktriage.documents.stalls import StallsDocument
from sparktriage.documents.sweep import SweepDocument
from sparktriage.launch.plan import build_plan
from sparktriage.launch.run import launch_once
from sparktriage.progress import Observer, prefixed
from sparktriage.report.build import execute, plan_report
from sparktriage.report.keys import read_public_key
from sparktriage.report.signing import SignSpec
from sparktriage.report.verify import TrustAnchor, verify
from sparktriage.session.demokey import make_demo_key
from sparktriage.session.steps import StepLog, bench_step, bench_summary, probe_step, stalls_step
from sparktriage.store.documents import read_document, write_document
from sparktriage.store.rundir import SCHEMA_VERSION, LaunchDir, RunDir
from sparktriage.store.typed import Document, check, parse
from sparktriage.sweep.decide import LaunchRate, acceptance_length, sweep_document, workload_rate
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


def _launch(run: RunDir, spec: dict, steps: StepLog, while_ready: Callable[[str, LaunchDir], None],
            observe: Observer) -> tuple[LaunchDir, dict]:
    launch = run.next_launch()
    path = launch.path / "deployment.yaml"
    path.write_text(yaml.safe_dump(spec, sort_keys=False), encoding="utf-8")
    plan = build_plan(load_deployment(path))
    endpoint = f"http://127.0.0.1:{spec['serve']['port']}"
    observe("launch", {"label": launch.label, "depth": (spec.get("speculative") or {})
                       .get("num_speculative_tokens", 0)})
    result = launch_once(plan, launch, observe, while_ready=lambda _: while_ready(endpoint, launch))
    failed = result.get("outcome") != "completed"
    steps.record("launch", launch.label, (result.get("error") or result.get("failure")
                                          or f"outcome {result.get('outcome')}") if failed else None)
    steps.run("stalls", launch.label, lambda: stalls_step(launch))
    return launch, result


def run_demo(run: RunDir, bed: Testbed, settings: DemoSettings, observe: Observer,
             model: Path | None = None) -> dict:
    """Run the session into `run`; return `demo.json` (also written there)."""
    plan = plan_demo(bed, settings, model)
    model, baseline = plan.model, plan.fingerprint
    workloads = tuple(w.model_copy(update={"requests": settings.requests,
                                           "max_tokens": settings.max_tokens})
                      for w in load_workloads(["code,prose"]))
    sweep_only = tuple(w for w in workloads if w.name == SWEEP_WORKLOAD)
    steps = StepLog(observe)
    launches: list[dict] = []
    per_depth: dict[int, list[LaunchRate]] = {}
    first: dict = {}
    with tempfile.TemporaryDirectory(prefix="sparktriage-demo-") as scratch:
        for depth in settings.depths:
            for _ in range(settings.launches):
                spec = deployment(bed, model, free_port(), Path(scratch), depth,
                                  settings.startup_timeout_s)
                if not (run.path / "deployment.yaml").exists():
                    (run.path / "deployment.yaml").write_text(yaml.safe_dump(spec, sort_keys=False),
                                                              encoding="utf-8")
                is_first = not launches

                def while_ready(endpoint: str, launch: LaunchDir, is_first=is_first) -> None:
                    log = [str(launch.path / "bundle" / layout.NODES_DIR / NODE /
                               layout.log_file("server"))]
                    # the protocol first: the probe's traffic would fall into its log windows
                    chosen = workloads if is_first else sweep_only
                    bench = steps.run("bench", launch.label, lambda: bench_step(
                        endpoint, launch, chosen, log=log, observe=observe,
                        warn=lambda m: observe("warning", {"text": m})))
                    if is_first:
                        first["bench"] = bench
                    if is_first and settings.probe:
                        first["probe"] = steps.run("probe", launch.label, lambda: probe_step(
                            endpoint, launch, baseline,
                            observe=prefixed(observe, "probe-")))

                launch, result = _launch(run, spec, steps, while_ready, observe)
                stalls = _read(launch.path / "stalls.json", StallsDocument)
                logs = _read(launch.path / "logs.json", LogsDocument)
                bench = _read(launch.path / "bench.json", BenchDocument)
                launches.append({"label": launch.label, "depth": depth, "outcome": result.get("outcome"),
                                 "ready_s": result.get("ready_s"),
                                 "stall_findings": len((stalls or {}).get("findings") or []),
                                 "delivered_tok_s": workload_rate(bench, SWEEP_WORKLOAD),
                                 "e2e_tok_s": workload_rate(bench, SWEEP_WORKLOAD, "e2e_tok_s"),
                                 "acceptance_length": acceptance_length(logs) if depth else None})
                per_depth.setdefault(depth, []).append(LaunchRate(
                    launch.label, launches[-1]["delivered_tok_s"], launches[-1]["acceptance_length"],
                    launches[-1]["e2e_tok_s"]))
                if result.get("outcome") != "completed" and is_first:
                    break  # the default itself does not start: nothing to sweep
            if launches and launches[0]["outcome"] != "completed":
                break
    sweep = None
    if len(per_depth) > 1:
        sweep = sweep_document("ngram", SWEEP_WORKLOAD, per_depth)
        write_document(run.path / "sweep.json", check(SweepDocument, sweep))
    report = steps.run("report", None, lambda: _report(run, settings.formats, observe))
    summary = {
        "schema_version": SCHEMA_VERSION, "kind": "demo", "run": str(run.path), "model": str(model),
        "baseline": str(baseline) if baseline else None, "launches": launches,
        "probe": _probe_summary(first.get("probe")), "bench": bench_summary(first.get("bench")),
        "sweep": (sweep or {}).get("decision"), "report": report, "steps": steps.records,
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
