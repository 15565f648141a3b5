"""Execute a session's declared plan (`session.json`), step by step, resumable anywhere.

`open_session` creates the plan (or reopens it: the remembered options win), stops what an
earlier, crashed run left running on any node, turns a launch that was running into an
interrupted one (its folder and raw records stay as they are) and makes every step that was
running pending again. `run_session` then executes every step that is not done, in order:

  launch group  node state checked and recorded; then the one launch loop (measure.loop, the
                sweep's too): a new launch folder, the server started by the launch supervisor
                with the live stall watcher on its bundle, the group's protocol and probe run
                while it is up, teardown on every node, every server process in session.json
  stalls        the authoritative classification of that launch after teardown
  sweep         session/sweep_step.py (the sweep engine), launching through the same loop
  envdiff       the environment differences across nodes, per launch, and the node-state flags
  report        `sparktriage report` into DIR/report, signed when a key was given
  signature     the signed report verified with the key's public half

The launch groups run here; the steps after them are session/actions.py, and what the session
found is read back by session/summary.py.

Ctrl-C (KeyboardInterrupt) ends the current step after teardown, marks it interrupted and
propagates: the CLI exits 130 and `resume` picks up from there.
"""

from __future__ import annotations

import os
import time
from pathlib import Path
from typing import Callable

from sparktriage.bench.workload import load_workloads
from sparktriage.config import speculative as spec_source
from sparktriage.config.deployment import Deployment, load_deployment
from sparktriage.errors import SparktriageError, UsageError
from sparktriage.config.client_code import client_code
from sparktriage.launch import acceptance
from sparktriage.launch.plan import LaunchPlan, build_plan
from sparktriage.session import nodestate
from sparktriage.session.actions import ACTIONS
from sparktriage.session.context import Session, attached_launch
from sparktriage.session.live import StallWatcher
from sparktriage.session.plan import (DONE, FAILED, INTERRUPTED, PENDING, RUNNING, LabAssumptions,
                                      SessionOptions, base_depth, build_steps, estimate_s)
from sparktriage.session.state import FILE, SessionState
from sparktriage.measure.loop import Slot, measure_launch, run_deployment_file
from sparktriage.measure.steps import bench_step, probe_step
from sparktriage.session.summary import summarize
from sparktriage.session.survivors import stop_survivors
from sparktriage.session.sweep_step import sweep_plan
from sparktriage.store.rundir import RunDir
from sparktriage.progress import Observer, quiet


# --- opening ---------------------------------------------------------------------------------

def plan_steps(options: SessionOptions) -> tuple[list[dict], float]:
    """The declared steps of `options` and their estimated lab seconds."""
    steps = build_steps(options)
    workloads = max(1, len(_workloads(options, options.workloads)))
    return steps, estimate_s(steps, LabAssumptions(), workloads)


def open_session(run_dir: Path, options: SessionOptions | None, command: list[str],
                 observe: Observer = quiet, api_key: str | None = None,
                 deployment: Deployment | None = None) -> Session:
    """Create `run_dir`'s session (options given) or reopen it (options None: `resume`);
    recover from a crash and stop survivors either way. `deployment`: the session's deployment
    already loaded (by the CLI's checks), else it is loaded here, once."""
    exists = (run_dir / FILE).is_file()
    if options is None and not exists:
        raise UsageError(f"{run_dir}: no {FILE}; start a session with `sparktriage session run`")
    run = RunDir.create(run_dir, command)
    if exists:
        state = SessionState.load(run_dir)
        if options is not None and options.to_json() != state.doc["options"]:
            changed = sorted(k for k, v in options.to_json().items() if state.doc["options"].get(k) != v)
            raise UsageError(f"{run_dir} holds a session with other options ({', '.join(changed)}); "
                             "use `sparktriage session resume DIR`, or a new --out")
    else:
        steps, estimate = plan_steps(options)
        state = SessionState.create(run_dir, options, steps, estimate)
    session = Session(run, state, observe, api_key or os.environ.get("OPENAI_API_KEY") or None)
    _load(session, deployment)
    if exists:
        for text in state.recover():
            observe("session-note", {"text": text})
        _stop_survivors(session)
    return session


def _stop_survivors(session: Session) -> None:
    state = session.state
    open_processes = [p for p in state.doc["processes"] if not p.get("stopped")]
    if session.options.deployment is None:
        return
    if not open_processes:
        text = "every process the previous run started had been torn down: nothing to stop"
        state.event("survivors", text, found=0)
        session.observe("session-note", {"text": text})
        return
    plan = _launch_plan(session, base_depth(session.options))
    results = stop_survivors(plan, open_processes)
    found = sum(r.found for r in results)
    for result in results:
        if result.error:
            state.event("survivors", result.error, node=result.node)
            session.observe("session-note", {"text": result.error})
        elif result.found:
            text = (f"{result.node}: stopped {result.found} process(es) the previous run left "
                    f"running (pids {', '.join(str(p) for p, _ in result.alive) or 'group members'})"
                    + (f"; still alive: {result.left}" if result.left else ""))
            state.event("survivors", text, node=result.node, found=result.found,
                        left=result.left or [])
            session.observe("session-note", {"text": text})
    if not found:
        text = "no process of the previous run was left on any node"
        state.event("survivors", text, found=0)
        session.observe("session-note", {"text": text})
    with state._lock:
        for p in open_processes:
            p["stopped"] = "checked on resume"
        state.save()


# --- deployments ---------------------------------------------------------------------------

def _load(session: Session, deployment: Deployment | None) -> None:
    """Load the deployment once, declare the sweep's plan (sweep.plan: the one depth parser and
    deployment builder), and write the run's deployment at the top of the run directory (the
    report's deployment and roofline sections read it there; redacted)."""
    options = session.options
    if options.deployment is None:
        return
    lab = Path(options.lab) if options.lab else None
    session.deployment = deployment or load_deployment(Path(options.deployment), lab)
    # what the deployment runs by the client's choice, accepted by name (checked again on
    # resume: the file may have changed since)
    accepted = acceptance.require(client_code(session.deployment),
                                  tuple(options.extra.get(acceptance.OPTION) or ()))
    acceptance.record(session.run.path, accepted)
    session.plan = sweep_plan(options, session.deployment)
    run_deployment_file(session.run.path, session.deployment)


def _deployment(session: Session, depth: int) -> Deployment:
    """The deployment a launch at `depth` runs: the deployment as given at its own depth (its
    batch-size schedule too: the protocol's launches), else the sweep plan's at that depth."""
    dep, plan = session.deployment, session.plan
    assert dep is not None and plan is not None, "an attached session launches nothing"
    if depth == base_depth(session.options) and not (depth and spec_source.find(dep).schedule):
        return dep
    return plan.deployment_at(dep, depth)


def _launch_plan(session: Session, depth: int) -> LaunchPlan:
    return build_plan(_deployment(session, depth))


def _workloads(options: SessionOptions, names) -> tuple:
    return tuple(w.model_copy(update={"requests": options.requests, "max_tokens": options.max_tokens})
                 for w in load_workloads(list(names)))


# --- the launch group ------------------------------------------------------------------------

def _first_node_state(state: SessionState) -> dict | None:
    return next((l.get("node_state") for l in state.doc["launches"] if l.get("node_state")), None)


def _launch_group(session: Session, group: str, depth: int, substeps: list[dict],
                  launch_step: dict | None) -> str | None:
    """One launch with `substeps` (protocol, probe) run while it is up, through the one launch
    loop (measure.loop); the label when it completed, else None. KeyboardInterrupt propagates
    after teardown."""
    state, observe = session.state, session.observe
    dep = _deployment(session, depth)
    plan = build_plan(dep)
    _check_budget(session)
    pgids: dict[str, list[int]] = {}
    for p in state.doc["processes"]:
        if p.get("pgid"):
            pgids.setdefault(p["node"], []).append(int(p["pgid"]))
    node_state = nodestate.snapshot(plan, nodestate.engine_needles(dep.model.path), pgids)
    flags = nodestate.compare(_first_node_state(state), node_state)

    def opened(slot: Slot) -> None:
        label = slot.label
        redo = [l for l in state.doc["launches"] if l["step"] == group
                and l["state"] == INTERRUPTED and not l.get("redone_as")]
        state.add_launch({"label": label, "step": group, "state": RUNNING, "depth": depth,
                          "node_state": node_state, "flags": flags})
        for old in redo:
            state.update_launch(old["label"], redone_as=label)
            state.event("redo", f"launch {old['label']} was interrupted; redone as {label}",
                        launch=label)
            observe("session-note", {"text": f"launch {old['label']} was interrupted; redone as {label}"})
        for flag in flags:
            observe("warning", {"text": f"{label}: node state differs: {flag}"})
        if launch_step is not None:
            state.set_state(launch_step, RUNNING, launch=label)
        observe("session-launch", {"label": label, "depth": depth,
                                   "nodes": [n.name for n in slot.plan.nodes]})

    def measure(slot: Slot) -> None:
        for sub in substeps:
            _run_sub(session, sub, slot, depth)

    def interrupted(slot: Slot, _wall_s: float) -> None:
        state.update_launch(slot.label, state=INTERRUPTED, ended=_now(),
                            note="interrupted (Ctrl-C); torn down; its records are kept here")
        if launch_step is not None:
            state.set_state(launch_step, INTERRUPTED, "interrupted (Ctrl-C)")

    ended = measure_launch(session.run, dep, measure, observe=observe, plan=plan,
                           processes=state, opened=opened, interrupted=interrupted,
                           watch=lambda launch: StallWatcher(launch.path / "bundle",
                                                             launch.path / "live-stalls.jsonl",
                                                             observe))
    result, label = ended.result, ended.label
    reason = None if ended.completed else (ended.error or f"outcome {result.get('outcome')}")
    state.update_launch(label, state=DONE if ended.completed else FAILED, ended=_now(),
                        outcome=result.get("outcome"), ready_s=result.get("ready_s"),
                        survivors=result.get("survivors") or {}, reason=reason)
    for sub in substeps:
        if sub["state"] in (PENDING, RUNNING):
            state.set_state(sub, FAILED, f"launch {label} did not stay up: {reason}", label)
    if launch_step is not None:
        state.set_state(launch_step, DONE if ended.completed else FAILED, reason, label)
    done = sum(1 for l in state.doc["launches"] if l["state"] in (DONE, FAILED))
    observe("session-launch-done", {"label": label, "launches_done": done})
    return label if ended.completed else None


def _now() -> str:
    from sparktriage.store.rundir import utc_now
    return utc_now()


def _record_outcome(session: Session, step: dict, work: Callable[[], str | None]) -> None:
    """Run a step's `work` and record how it ended: done; failed with the reason it returned
    or the error it raised (and a warning); interrupted by Ctrl-C (then re-raised)."""
    try:
        reason = work()
        failed = bool(reason)
    except KeyboardInterrupt:
        session.state.set_state(step, INTERRUPTED, "interrupted (Ctrl-C)")
        raise
    except SparktriageError as exc:
        reason, failed = exc.one_line(), True
    session.state.set_state(step, FAILED if failed else DONE, reason)
    if failed:
        session.observe("warning", {"text": f"{step['id']} failed: {reason}"})


def _run_sub(session: Session, sub: dict, slot: Slot, depth: int) -> None:
    state, options, observe = session.state, session.options, session.observe
    launch, endpoint, log = slot.launch, slot.endpoint, slot.log
    state.set_state(sub, RUNNING, launch=launch.label)
    observe("session-step", {"id": sub["id"], "kind": sub["kind"]})

    def work() -> None:
        if sub["kind"] == "protocol":
            names = sub["inputs"].get("workloads") or list(options.workloads)
            bench_step(endpoint, launch, _workloads(options, names), log=log, observe=observe,
                       warn=lambda m: observe("warning", {"text": m}))
        elif sub["kind"] == "probe":
            baseline = sub["inputs"].get("baseline")
            probe_step(endpoint, launch, Path(baseline) if baseline else None,
                       observe=lambda e, d: observe("probe-" + e, d))

    _record_outcome(session, sub, work)


def _check_budget(session: Session) -> None:
    budget = session.options.budget_min
    if budget is None:
        return
    spent = time.time() - session.state.doc.get("_started_at", time.time())
    left = budget * 60 - spent - session.state.doc.get("spent_s", 0.0)
    if left < LabAssumptions().startup_s:
        raise _OverBudget(f"--budget {budget:g} min: {max(left, 0) / 60:.1f} min left, "
                          "not enough for another launch")


class _OverBudget(SparktriageError):
    """No time left in the session's budget for another launch."""


# --- the session -----------------------------------------------------------------------------

def run_session(session: Session) -> dict:
    """Execute every step that is not done; return the session summary (also in
    session.json's `result`)."""
    state, observe = session.state, session.observe
    state.doc["_started_at"] = time.time()
    try:
        while (step := state.first_open()) is not None:
            left = estimate_s(state.steps, LabAssumptions(),
                              max(1, len(_workloads(session.options, session.options.workloads))))
            planned = sum(1 for s in state.steps if s["kind"] == "launch") + len(
                [d for d in session.options.depths if d != base_depth(session.options)])
            observe("session-step", {"id": step["id"], "kind": step["kind"], "estimate_left_s": left,
                                     "launches_done": sum(1 for l in state.doc["launches"]
                                                          if l["state"] in (DONE, FAILED)),
                                     "launches_planned": planned})
            _execute(session, step)
    finally:
        spent = time.time() - state.doc.pop("_started_at")
        state.doc["spent_s"] = round(state.doc.get("spent_s", 0.0) + spent, 1)
        state.save()
    result = summarize(session)
    state.doc["result"] = result
    state.doc["finished"] = _now()
    state.save()
    return result


def _execute(session: Session, step: dict) -> None:
    state = session.state
    kind = step["kind"]
    if kind == "launch":
        group = [s for s in state.group(step["group"]) if s is not step and s["state"] not in (DONE, FAILED)]
        if not group and any(l["step"] == step["group"] for l in state.doc["launches"]):
            state.note(step, "every step of this launch was done before the session stopped; not relaunched")
            state.set_state(step, DONE)
            return
        try:
            _launch_group(session, step["group"], step["inputs"].get("depth", 0), group, step)
        except _OverBudget as exc:
            state.set_state(step, FAILED, exc.one_line())
            for sub in group:
                state.set_state(sub, FAILED, exc.one_line())
        return
    if kind in ("probe", "protocol") and step["group"]:
        state.set_state(step, FAILED, "its launch did not run")
        return
    if kind in ("probe", "protocol", "logs") and session.options.deployment is None:
        _attached(session, step)
        return
    if kind == "report" and session.before_report is not None:
        session.before_report()
    state.set_state(step, RUNNING)
    _record_outcome(session, step, lambda: ACTIONS[kind](session, step))


def _attached(session: Session, step: dict) -> None:
    """Protocol, probe or log parsing against `options.endpoint` (the selfcheck preset)."""
    from sparktriage.logs.clock import parse_tz
    from sparktriage.measure.steps import logs_step
    state, options, observe = session.state, session.options, session.observe
    extra, inputs = options.extra, step["inputs"]
    tz = parse_tz(extra.get("tz"))
    launch = attached_launch(session, fresh=step["kind"] == "protocol" and step["launch"] is not None)
    state.set_state(step, RUNNING, launch=launch.label)

    def work() -> None:
        if step["kind"] == "protocol":
            bench_step(options.endpoint, launch, _workloads(options, inputs["workloads"]),
                       log=inputs.get("logs") or (), metrics=inputs.get("metrics", ""),
                       model=extra.get("model"), api_key=session.api_key, tz=tz, observe=observe,
                       warn=lambda m: observe("warning", {"text": m}),
                       scrape_every=extra.get("scrape_every"))
        elif step["kind"] == "probe":
            baseline = inputs.get("baseline")
            probe_step(options.endpoint, launch, Path(baseline) if baseline else None,
                       reference=inputs.get("reference"), model=extra.get("model"),
                       api_key=session.api_key, observe=lambda e, d: observe("probe-" + e, d))
        else:
            logs_step(launch, inputs["logs"], tz)

    _record_outcome(session, step, work)
