"""The sweep engine: relaunch the deployment per depth, measure, gate, decide (docs/sweep.md).

`plan_sweep(...)` (sweep.plan) declares what runs; `run_sweep(plan, out_dir, observer)` runs it
into a run directory, one launch folder per launch (`launches/L001`, ...), each written as the
other commands write theirs: the evidence bundle and server log (launch), `bench.json`,
`requests.jsonl`, `metrics/`, `reconcile.json` (bench --metrics --log), `gate.json` and
`gate-requests.jsonl` (the gate's greedy outputs), `probe.json` (with --baseline),
`deployment.yaml` (redacted). Per launch, through the one launch loop the session also runs
(`measure.loop.measure_launch`): start, wait for readiness, run the protocol with `/metrics`
scraped around each workload, the gate, the probe and the two-stream phase, tear down.

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

from sparktriage.documents.sweep import SweepJson
from sparktriage.errors import SparktriageError
from sparktriage.measure.loop import Processes, Slot, measure_launch, run_deployment_file
from sparktriage.measure.steps import bench_step, probe_step
from sparktriage.progress import Observer, prefixed, quiet
from sparktriage.store.documents import write_document
from sparktriage.store.rundir import RunDir
from sparktriage.sweep.assess import Assessment, assess
from sparktriage.sweep.document import record as sweep_record
from sparktriage.sweep.evidence.launch import LaunchEvidence, derive, derive_all, protocol_failure
from sparktriage.sweep.running.pair_phase import FILE, run_pairs
from sparktriage.sweep.policy.situation import step_shape
from sparktriage.sweep.evidence.gate import greedy_outputs
from sparktriage.sweep.plan import SweepPlan, deployment_hash, plan_sweep
from sparktriage.sweep.running.state import SweepState, open_state

__all__ = ["plan_sweep", "run_sweep", "SweepResult", "SweepPlan"]


@dataclass(frozen=True)
class SweepResult:
    """What a sweep left: its directory, the sweep record, why it stopped."""

    path: Path
    record: SweepJson
    stop_reason: str

    @property
    def document(self) -> dict:
        """sweep.json's JSON object."""
        return self.record.to_dict()

    @property
    def decision(self) -> dict:
        return self.document["decision"]


def _read(path: Path) -> dict | None:
    try:
        doc = json.loads(path.read_text(encoding="utf-8"))
    except (OSError, ValueError):
        return None
    return doc if isinstance(doc, dict) else None


class _Sweep:
    """One run of the engine over a state (fresh or resumed)."""

    def __init__(self, plan: SweepPlan, run: RunDir, state: SweepState, observe: Observer,
                 processes: Processes | None, deployment=None, label_prefix: str = "L") -> None:
        self.plan, self.run, self.state, self.observe = plan, run, state, observe
        self.label_prefix = label_prefix
        self.processes = processes
        self.deployment = deployment if deployment is not None else plan.load_deployment()
        self.decide_name = plan.deciding_workload
        self.hash = deployment_hash(self.deployment)
        self.shape = step_shape(self.deployment)
        self.evidence: list[LaunchEvidence] = list(derive_all(run.path, state.launches, plan))
        self.assessment: Assessment = self.assess(None)

    def assess(self, previous: Assessment | None) -> Assessment:
        """The sweep after every launch so far (sweep.assess), the model advanced from `previous`."""
        return assess(self.plan, self.evidence, previous, run_path=self.run.path, shape=self.shape)

    def started(self) -> int:
        return len(self.evidence)

    def choose(self) -> tuple[int | None, str]:
        """The next depth and why (None and the stop reason when the sweep is done)."""
        return self.assessment.next_launch()

    # ---- one launch --------------------------------------------------------------------
    def needs_gate(self, depth: int) -> bool:
        return not any(e.gate_collected for e in self.evidence if e.depth == depth)

    def pair_phase(self, endpoint: str, launch, deployment) -> str | None:
        """Run the launch's two-stream phase (sweep.running.pair_phase); why it did not run, if
        not."""
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
        """One launch at `depth` through the one launch loop (measure.loop); its record."""
        deployment = self.plan.deployment_at(self.deployment, depth)
        first = self.started() == 0
        record: dict = {}
        gate = self.needs_gate(depth)
        problems: list[str] = []
        pair_failure: list[str] = []

        def opened(slot: Slot) -> None:
            run_deployment_file(self.run.path, self.deployment)
            record.update(label=slot.label, depth=depth, why=why,
                          attempt=self.assessment.consecutive_failures(depth) + 1)
            self.observe("sweep-launch", {"label": slot.label, "depth": depth, "why": why,
                                          "index": self.started() + 1,
                                          "max": self.plan.max_launches})

        def measure(slot: Slot) -> None:
            launch, endpoint = slot.launch, slot.endpoint
            try:
                bench_step(endpoint, launch, self.plan.load_workloads(first=first), log=slot.log,
                           observe=self.observe,
                           warn=lambda m: self.observe("warning", {"text": m}))
            except SparktriageError as exc:
                problems.append(f"protocol failed: {exc.one_line()}")
                return
            bench = _read(launch.path / "bench.json")
            if gate and not protocol_failure(bench, self.decide_name):
                prompts = {w.name: w.prompt for w in self.plan.load_workloads() if w.prompt}
                outputs = greedy_outputs(endpoint, (bench or {}).get("model") or "", launch,
                                         prompts, self.plan.gate_tokens)
                write_document(launch.path / "gate.json", {
                    "schema_version": 1, "kind": "sweep-gate-outputs", "depth": depth,
                    "outputs": [o.as_dict() for o in outputs]})
            if gate and self.plan.baseline:
                try:
                    probe_step(endpoint, launch, Path(self.plan.baseline),
                               observe=prefixed(self.observe, "probe-"))
                except SparktriageError as exc:
                    problems.append(f"probe failed: {exc.one_line()}")
            if self.plan.pairs and not protocol_failure(bench, self.decide_name):
                failed = self.pair_phase(endpoint, launch, deployment)
                if failed:
                    pair_failure.append(failed)

        def interrupted(_slot: Slot, wall_s: float) -> None:
            record.update(status="failed", reason="interrupted: stopped during this launch",
                          interrupted=True, wall_s=wall_s)
            self.state.add(record)

        ended = measure_launch(self.run, deployment, measure, observe=self.observe,
                               prefix=self.label_prefix, processes=self.processes,
                               opened=opened, interrupted=interrupted)
        # the loop's facts only: everything measured is derived from the folder
        # (sweep.evidence.launch)
        result = ended.result
        record.update(wall_s=ended.wall_s, ready_s=result.get("ready_s"),
                      outcome=result.get("outcome"), error=ended.error, problems=problems,
                      pair_failure=pair_failure[0] if pair_failure else None,
                      metadata={"deployment_hash": self.hash,
                                "nodes": [n.host for n in ended.slot.plan.nodes]})
        return record

    def loop(self) -> str:
        while True:
            depth, why = self.choose()
            if depth is None:
                return why
            record = self.launch(depth, why)
            self.state.add(record)
            evidence = derive(self.run.path, record, self.plan)
            self.evidence.append(evidence)
            self.assessment = self.assess(self.assessment)
            self.write("running")
            self.observe("sweep-launch-done", {"label": evidence.label, "depth": evidence.depth,
                                               "status": evidence.status,
                                               "reason": evidence.reason,
                                               "wall_s": evidence.wall_s,
                                               "delivered_tok_s": evidence.delivered_tok_s})

    def catch_up(self) -> None:
        """Derive and assess the launches recorded but not yet assessed (one cut short)."""
        if len(self.evidence) < len(self.state.launches):
            self.evidence += [derive(self.run.path, r, self.plan)
                              for r in self.state.launches[len(self.evidence):]]
            self.assessment = self.assess(self.assessment)

    def write(self, stop_reason: str) -> SweepJson:
        return write_sweep_json(self.run.path, self.assessment, stop_reason, self.deployment)


def write_sweep_json(run_path: Path, assessment: Assessment, stop_reason: str,
                     deployment=None) -> SweepJson:
    """The sweep record of an assessment (its contract checked by its making), written as
    `sweep.json`."""
    made = sweep_record(assessment, stop_reason, deployment)
    write_document(run_path / "sweep.json", made.to_dict())
    return made


def run_sweep(plan: SweepPlan | None, out_dir: Path, observer: Observer | None = None, *,
              command: list[str] | None = None, deployment=None,
              label_prefix: str = "L", processes: Processes | None = None) -> SweepResult:
    """Run (or, when `out_dir` holds a sweep, continue) the sweep; return its result.

    `plan` None: resume the plan stored in `out_dir`. `deployment`: the plan's deployment already
    loaded (a session's), else loaded from the plan. `label_prefix`: the first letter of its
    launch labels (a session's sweep numbers its launches S001, ... so that no launch id of the
    session's run directory names two launches). `processes`: the run's process book (a
    session's), told of every server process a launch starts and of its teardown.
    KeyboardInterrupt propagates after the
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
    sweep = _Sweep(state.plan, run, state, observe, processes, deployment, label_prefix)
    try:
        stop = sweep.loop()
    except KeyboardInterrupt:
        sweep.catch_up()
        sweep.write("interrupted")
        raise
    made = sweep.write(stop)
    observe("sweep-decision", made.decision.to_dict())
    return SweepResult(run.path, made, stop)
