"""The sweep engine: relaunch the deployment per depth, measure, gate, decide (docs/sweep.md).

`plan_sweep(...)` (sweep.plan) declares what runs; `run_sweep(plan, out_dir, observer)` runs it
into a run directory, one launch folder per launch (`launches/L001`, ...), each written as the
other commands write theirs: the evidence bundle and server log (launch), `bench.json`,
`requests.jsonl`, `metrics/`, `reconcile.json` (bench --metrics --log), `gate.json` and
`gate-requests.jsonl` (the gate's greedy outputs), `probe.json` (with --baseline),
`deployment.yaml` (redacted). Per launch: start through the launch path (`launch.run.launch_once`),
wait for readiness, run the protocol with `/metrics` scraped around each workload, tear down.

After every launch the state (`sweep-state.json`) and the sweep document (`sweep.json`) are
rewritten, so Ctrl-C or kill -9 leaves a directory that `run_sweep` (`--resume DIR`) continues
without repeating a finished launch. A launch that fails (startup error, readiness timeout, crash
mid-protocol) is recorded with its reason and retried once; a depth failing twice in a row is
reported failed and the sweep goes on with the others.
"""

from __future__ import annotations

import json
import time
from dataclasses import dataclass
from pathlib import Path
from typing import Callable


from sparktriage.documents.sweep import SweepDocument
from sparktriage.errors import SparktriageError
from sparktriage.bundle import layout
from sparktriage.launch.plan import build_plan
from sparktriage.launch.run import launch_once
from sparktriage.measure.steps import bench_step, probe_step
from sparktriage.progress import Observer, prefixed, quiet
from sparktriage.store.documents import write_document, write_yaml_document
from sparktriage.store.rundir import LaunchDir, RunDir
from sparktriage.store.typed import check
from sparktriage.sweep import pairtimes, rule, steptimes
from sparktriage.sweep.pair_phase import FILE, run_pairs
from sparktriage.sweep.acceptance import acceptance
from sparktriage.sweep.decide import workload_rate
from sparktriage.sweep.document import build_document, gate_by_depth, per_depth
from sparktriage.sweep.model_inputs import situation, step_shape
from sparktriage.sweep.gate import greedy_outputs
from sparktriage.sweep.plan import SweepPlan, deployment_hash, plan_sweep
from sparktriage.sweep.state import SweepState, open_state

# demo hook: (endpoint, launch, record so far) while the server of a launch is ready
WhileReady = Callable[[str, LaunchDir, dict], None]

__all__ = ["plan_sweep", "run_sweep", "SweepResult", "SweepPlan"]


@dataclass(frozen=True)
class SweepResult:
    """What a sweep left: its directory, the sweep document, why it stopped."""

    path: Path
    document: dict
    stop_reason: str

    @property
    def decision(self) -> dict:
        return self.document["decision"]


def _read(path: Path) -> dict | None:
    try:
        doc = json.loads(path.read_text(encoding="utf-8"))
    except (OSError, ValueError):
        return None
    return doc if isinstance(doc, dict) else None


def _workload(bench: dict | None, name: str) -> dict | None:
    return next((w for w in (bench or {}).get("workloads") or [] if w.get("name") == name), None)


def _rates(bench: dict | None, name: str, metric: str) -> list[float]:
    w = _workload(bench, name) or {}
    return [r[metric] for r in w.get("requests") or []
            if not r.get("warmup") and r.get("status") == "ok" and isinstance(r.get(metric), (int, float))]


def _protocol_failure(bench: dict | None, name: str) -> str | None:
    """Why the protocol's measurement is unusable (None when it is fine)."""
    w = _workload(bench, name)
    if w is None:
        return "the protocol did not measure the deciding workload"
    bad = [r for r in w.get("requests") or [] if not r.get("warmup") and r.get("status") != "ok"]
    measured = [r for r in w.get("requests") or [] if not r.get("warmup")]
    if bad:
        return (f"crash mid-protocol: {len(bad)} of {len(measured)} measured requests failed "
                f"({bad[0].get('reason') or bad[0].get('status')})")
    return None


class _Sweep:
    """One run of the engine over a state (fresh or resumed)."""

    def __init__(self, plan: SweepPlan, run: RunDir, state: SweepState, observe: Observer,
                 while_ready: WhileReady | None) -> None:
        self.plan, self.run, self.state, self.observe = plan, run, state, observe
        self.while_ready = while_ready
        self.deployment = plan.load_deployment()
        self.decide_name = plan.deciding_workload
        self.hash = deployment_hash(self.deployment)
        self.shape = step_shape(self.deployment)
        self.greedy = plan.load_workloads()[0].temperature == 0

    # ---- bookkeeping -------------------------------------------------------------------
    def started(self) -> int:
        return len(self.state.launches)

    def elapsed_s(self) -> float:
        return sum(r.get("wall_s") or 0.0 for r in self.state.launches)

    def consecutive_failures(self, depth: int) -> int:
        count = 0
        for r in reversed([r for r in self.state.launches
                           if r.get("depth") == depth and not r.get("interrupted")]):
            if r["status"] == "ok":
                break
            count += 1
        return count

    def failed_depths(self) -> set[int]:
        return {d for d in self.plan.depths if self.consecutive_failures(d) > self.plan.retries}

    def eligible(self) -> list[int]:
        gates = gate_by_depth(self.run.path, self.state.launches, self.plan)
        return [d for d in self.plan.depths
                if d not in self.failed_depths() and gates.get(d, {}).get("state") != "fail"]

    def choose(self) -> tuple[int | None, str]:
        """The next depth and why (None and the stop reason when the sweep is done)."""
        if self.started() >= self.plan.max_launches:
            return None, "launch budget spent"
        if self.plan.budget_minutes is not None:
            walls = [r["wall_s"] for r in self.state.launches if r.get("wall_s")]
            estimate = sum(walls) / len(walls) if walls else 0.0
            if self.elapsed_s() + estimate > self.plan.budget_minutes * 60.0:
                return None, "time budget spent"
        eligible = self.eligible()
        for d in eligible:  # a failed launch is retried once, before anything else
            if 0 < self.consecutive_failures(d) <= self.plan.retries:
                return d, "retry of a failed launch"
        which, stats = per_depth(self.plan, self.state.launches)
        where = situation(self.plan, self.state.launches, stats, eligible, self.shape, which)
        model = rule.model_of(where)
        depth = rule.next_depth(where, model)
        means = where.means
        if depth is None:
            return None, ("settled" if len([d for d in eligible if means.get(d)]) >= 1
                          else "no eligible depth")
        minimum = len(means.get(depth) or []) < self.plan.min_launches_per_depth
        leads = rule.model_leads(model)
        return depth, ("minimum launches per depth" if minimum and not leads
                       else rule.why(model, depth, where) if leads
                       else "most reduces the uncertainty about the best depth")

    # ---- one launch --------------------------------------------------------------------
    def needs_gate(self, depth: int) -> bool:
        return not any(r.get("gate_collected") for r in self.state.launches if r.get("depth") == depth)

    def pair_phase(self, endpoint: str, launch, deployment) -> str | None:
        """Run the launch's two-stream phase (sweep.pair_phase); why it did not run, if not."""
        if deployment.serve.max_num_seqs == 1:
            return "the deployment serves one sequence at a time (max_num_seqs 1)"
        try:
            run_pairs(endpoint, launch, self.plan.load_workloads()[0], self.plan.pairs)
        except SparktriageError as exc:
            return exc.one_line()
        except OSError as exc:  # its records could not be written
            return f"{FILE}: {exc.strerror or exc}"
        return None

    def launch(self, depth: int, why: str) -> dict:
        launch = self.run.next_launch()
        deployment = self.plan.deployment_at(self.deployment, depth)
        write_yaml_document(launch.path / "deployment.yaml", deployment.model_dump(mode="json"))
        if not (self.run.path / "deployment.yaml").exists():
            write_yaml_document(self.run.path / "deployment.yaml",
                                self.deployment.model_dump(mode="json"))
        launch_plan = build_plan(deployment)
        first = self.started() == 0
        record: dict = {"label": launch.label, "depth": depth, "status": "failed", "why": why,
                        "attempt": self.consecutive_failures(depth) + 1, "reason": None}
        self.observe("sweep-launch", {"label": launch.label, "depth": depth, "why": why,
                                      "index": self.started() + 1, "max": self.plan.max_launches})
        log = [str(launch.path / "bundle" / layout.NODES_DIR / launch_plan.head.name
                   / layout.log_file("server"))]
        endpoint = launch_plan.endpoint
        gate = self.needs_gate(depth)
        problems: list[str] = []
        pair_failure: list[str] = []

        def ready(_supervisor) -> None:
            try:
                bench_step(endpoint, launch, self.plan.load_workloads(first=first), log=log,
                           observe=self.observe,
                           warn=lambda m: self.observe("warning", {"text": m}))
            except SparktriageError as exc:
                problems.append(f"protocol failed: {exc.one_line()}")
                return
            bench = _read(launch.path / "bench.json")
            if gate and not _protocol_failure(bench, self.decide_name):
                prompts = {w.name: w.prompt for w in self.plan.load_workloads() if w.prompt}
                outputs = greedy_outputs(endpoint, (bench or {}).get("model") or "", launch,
                                         prompts, self.plan.gate_tokens)
                write_document(launch.path / "gate.json", {
                    "schema_version": 1, "kind": "sweep-gate-outputs", "depth": depth,
                    "outputs": [o.as_dict() for o in outputs]})
                record["gate_collected"] = True
            if gate and self.plan.baseline:
                try:
                    probe_step(endpoint, launch, Path(self.plan.baseline),
                               observe=prefixed(self.observe, "probe-"))
                except SparktriageError as exc:
                    problems.append(f"probe failed: {exc.one_line()}")
            if self.plan.pairs and not _protocol_failure(bench, self.decide_name):
                failed = self.pair_phase(endpoint, launch, deployment)
                if failed:
                    pair_failure.append(failed)
            if self.while_ready is not None:
                self.while_ready(endpoint, launch, record)

        started = time.monotonic()
        try:
            result = launch_once(launch_plan, launch, self.observe, while_ready=ready)
        except KeyboardInterrupt:
            record.update(reason="interrupted: stopped during this launch", interrupted=True,
                          wall_s=round(time.monotonic() - started, 3))
            self.state.add(record)
            raise
        record["wall_s"] = round(time.monotonic() - started, 3)
        record["ready_s"] = result.get("ready_s")
        record["outcome"] = result.get("outcome")
        bench = _read(launch.path / "bench.json")
        failure = None
        if result.get("outcome") != "completed":
            failure = (f"launch {result.get('outcome')}: "
                       f"{result.get('error') or result.get('failure') or 'see its bundle'}")
        failure = failure or (problems[0] if problems and problems[0].startswith("protocol") else None)
        failure = failure or _protocol_failure(bench, self.decide_name)
        decode = _rates(bench, self.decide_name, "decode_tok_s")
        e2e = _rates(bench, self.decide_name, "e2e_tok_s")
        if failure is None and not decode and not e2e:
            failure = "no measured request delivered a rate"
        accepted = (acceptance(launch, _read(launch.path / "logs.json"), bench, self.decide_name,
                               {self.decide_name}, self.greedy) if depth else None)
        ratio = steptimes.from_launch(launch.path, depth, self.decide_name, accepted)
        pair = pairtimes.from_launch(launch.path, depth, self.decide_name, accepted)
        if pair is None and pair_failure:
            pair = steptimes.StepRatio(depth, None, None, reason="the two-stream phase did not "
                                       f"run: {pair_failure[0]}")
        record.update(
            status="ok" if failure is None else "failed", reason=failure, problems=problems,
            request_decode_tok_s=decode, request_e2e_tok_s=e2e,
            delivered_tok_s=workload_rate(bench, self.decide_name),
            e2e_tok_s=workload_rate(bench, self.decide_name, "e2e_tok_s"),
            metadata={"model": (bench or {}).get("model"),
                      "server_version": (bench or {}).get("server_version"),
                      "deployment_hash": self.hash,
                      "nodes": [n.host for n in launch_plan.nodes]},
            acceptance=accepted, step_ratio=None if ratio is None else ratio.as_dict(),
            pair_ratio=None if pair is None else pairtimes.as_dict(pair))
        if failure is not None:
            record.pop("gate_collected", None)
        return record

    def loop(self) -> str:
        while True:
            depth, why = self.choose()
            if depth is None:
                return why
            record = self.launch(depth, why)
            self.state.add(record)
            self.write("running")
            self.observe("sweep-launch-done", {k: record.get(k) for k in
                                               ("label", "depth", "status", "reason", "wall_s")}
                         | {"delivered_tok_s": record.get("delivered_tok_s")})

    def write(self, stop_reason: str) -> dict:
        document = build_document(self.plan, self.state, self.run.path, stop_reason,
                                  self.deployment)
        write_document(self.run.path / "sweep.json", check(SweepDocument, document))
        return document


def _mean(values) -> float | None:
    return sum(values) / len(values) if values else None


def run_sweep(plan: SweepPlan | None, out_dir: Path, observer: Observer | None = None, *,
              while_ready: WhileReady | None = None,
              command: list[str] | None = None) -> SweepResult:
    """Run (or, when `out_dir` holds a sweep, continue) the sweep; return its result.

    `plan` None: resume the plan stored in `out_dir`. KeyboardInterrupt propagates after the
    running launch is torn down and recorded (the directory stays resumable)."""
    observe = observer or quiet
    run = RunDir.create(out_dir, command or ["sparktriage", "sweep"])
    state = open_state(run.path, plan)
    interrupted = state.adopt_interrupted(run)
    if interrupted or state.launches:
        state.resumed.append(time.strftime("%Y-%m-%dT%H:%M:%SZ", time.gmtime()))
        observe("sweep-resume", {"finished": len(state.launches) - len(interrupted),
                                 "interrupted": interrupted})
    state.save()
    sweep = _Sweep(state.plan, run, state, observe, while_ready)
    try:
        stop = sweep.loop()
    except KeyboardInterrupt:
        sweep.write("interrupted")
        raise
    document = sweep.write(stop)
    observe("sweep-decision", document["decision"])
    return SweepResult(run.path, document, stop)
