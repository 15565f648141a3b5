"""Execute a launch plan: agents on every node, stages, readiness, and teardown everywhere.

    with Supervisor(plan, bundle_dir, observe) as sup:
        sup.start()          # agents, stages, ready (raises LaunchError on failure/deadline)
        sup.watch(60)        # hold while watching for a death or a lost link
    # leaving the block tears down every node, whatever happened

Teardown guarantees (docs/launch.md): on success, failure, deadline, Ctrl-C, SIGTERM or SIGHUP
(the terminal's SIGINT reaches only sparktriage, which holds further signals until teardown
is done and then acts on the first) and a lost link, every node's agent is told to stop; its processes get SIGTERM, then SIGKILL after
the grace period, and every descendant ever seen is killed by pid and start time. A node whose
agent did not confirm (link lost, agent killed) gets a fresh agent that kills what the first
one reported by process group and pid. The plan's teardown commands (container removal,
`ray stop`) run last. Survivors, if any, are recorded per node in `events.jsonl`.
"""

from __future__ import annotations

import signal
import threading
import time
from pathlib import Path
from typing import Callable

from sparktriage.errors import LaunchError
from sparktriage.bundle.writer import BundleWriter
from sparktriage.bundle.envdiff import diff_environments, read_environments
from sparktriage.launch import ray
from sparktriage.launch.link import AgentLink, new_redact_key
from sparktriage.launch.plan import LaunchPlan
from sparktriage.launch.readiness import MarkerClock, api_ready
from sparktriage.launch.transport import local_python
from sparktriage.progress import Observer

HELLO_TIMEOUT_S = 60.0


class Supervisor:
    """One launch of a plan, with its evidence bundle."""

    def __init__(self, plan: LaunchPlan, bundle_dir: Path, observe: Observer | None = None) -> None:
        self.plan = plan
        self.bundle_dir = bundle_dir
        self.observe = observe or (lambda event, details: None)
        self.writer = BundleWriter(
            bundle_dir, origin="launch", target={"deployment": plan.deployment},
            nodes=[n.name for n in plan.nodes],
            interval_s=plan.head.collect.spec("host").interval_s if plan.head.collect.spec("host")
            else None, extra={"backend": plan.backend, "endpoint": plan.endpoint})
        self.started = time.time()
        self.clock = MarkerClock(self.started)
        self.links: dict[str, AgentLink] = {}
        self.failure: str | None = None
        self._failed = threading.Event()
        self._stopping = False
        self.ready_s: float | None = None
        self.outcome = "starting"
        self._redact_key = new_redact_key()
        self._last_line = time.monotonic()
        self.refused: tuple[str, str] | None = None  # (node, vLLM's sentence) on the Ray backend

    def _refusal_note(self) -> str:
        """The launch failure's cause when vLLM refused the Ray backend (docs/launch.md)."""
        if self.refused is None:
            return ""
        node, sentence = self.refused
        return f"; {node}: vLLM refused the Ray backend: {sentence}"

    # --- events from the agents ------------------------------------------------------------

    def _fail(self, reason: str) -> None:
        if not self._stopping and self.failure is None:
            self.failure = reason + self._refusal_note()
            self.observe("failure", {"reason": reason})
            self._failed.set()

    def _listener(self, node: str, kind: str, message: dict) -> None:
        if kind == "line":
            self._last_line = time.monotonic()
            sentence = ray.refusal(str(message.get("line", ""))) if self.plan.backend == "ray" else None
            if sentence and self.refused is None:
                self.refused = (node, sentence)
                self.writer.event("ray-refused", node, line=sentence)
                if self.failure is not None and not self._stopping:
                    self.failure += self._refusal_note()
            self.observe("line", {"node": node, "t": message.get("t")})
            for name in self.clock.feed(node, message):
                self.observe("marker", {"node": node, "marker": name})
        elif kind == "proc":
            event = message.get("event")
            if event == "started":
                self.observe("process", {"node": node, "name": message.get("name"),
                                         "pid": message.get("pid"), "pgid": message.get("pgid"),
                                         "starttime": message.get("starttime")})
            elif event == "failed":
                self._fail(f"{node}: {message.get('name')} could not start: {message.get('error')}")
            elif event == "exited":
                self._fail(f"{node}: {message.get('name')} exited with status {message.get('rc')}")
        elif kind == "lost":
            self._fail(f"{node}: link lost ({message.get('reason')})")

    # --- start -----------------------------------------------------------------------------

    def _wait(self, done: Callable[[], bool], deadline: float, what: str) -> None:
        while not done():
            if self._failed.is_set():
                if self.plan.backend == "ray" and self.refused is None:
                    time.sleep(1.0)  # the refusal line may arrive just after the exit
                raise LaunchError(self.failure or "launch failed")
            if time.monotonic() >= deadline:
                self.outcome = "timeout"
                raise LaunchError(f"{what} not reached within the deadline")
            self._failed.wait(0.25)

    def start(self) -> float:
        """Start agents and stages and wait for readiness; return seconds from start to ready."""
        plan = self.plan
        self.writer.event("launch-starting", None, stages=[s.name for s in plan.stages])
        for node in plan.nodes:
            link = AgentLink(node.name, node.transport, node.python or local_python(),
                             self.writer, self._listener)
            self.links[node.name] = link
            link.start({"plan": node.collect.to_json(), "redact_key": self._redact_key,
                        "link_timeout_s": plan.link_timeout_s})
        deadline = time.monotonic() + plan.startup_timeout_s
        try:
            self._wait(lambda: all(l.hello for l in self.links.values()),
                       min(deadline, time.monotonic() + HELLO_TIMEOUT_S), "agents on every node")
        except LaunchError:
            self.outcome = "unreachable"
            raise
        self.observe("agents", {"nodes": list(self.links)})
        self.outcome = "starting"
        for stage in plan.stages:
            self.writer.event("stage", None, name=stage.name)
            self.observe("stage", {"name": stage.name})
            for node, proc in stage.processes:
                self.links[node].launch(proc.to_agent())
            gates = [(node, proc.marker) for node, proc in stage.processes if proc.marker]
            if gates:
                stage_deadline = min(deadline, time.monotonic() + plan.stage_timeout_s)
                self._wait(lambda: all(f"{n}:{m}" in self.clock.first for n, m in gates),
                           stage_deadline, f"stage {stage.name} ({', '.join(m for _, m in gates)})")
        head = plan.head.name

        def ready() -> bool:
            if plan.ready == "log":
                return f"{head}:ready" in self.clock.first
            return api_ready(plan.endpoint, 2.0)

        try:
            self._wait(ready, deadline, f"readiness of {plan.endpoint}")
        except LaunchError:
            if self.outcome != "timeout" and plan.observe_failure_s > 0:
                self._observe_failure(deadline)
            if self.outcome == "timeout" or plan.observe_failure_s > 0:
                for link in self.links.values():  # what was everyone doing at that moment?
                    link.request_stacks()
                time.sleep(2.0)
            raise
        self.ready_s = round(time.time() - self.started, 3)
        self.outcome = "ready"
        self.writer.event("ready", head, after_s=self.ready_s, endpoint=plan.endpoint)
        self.observe("ready", {"after_s": self.ready_s, "endpoint": plan.endpoint})
        return self.ready_s

    def _observe_failure(self, deadline: float) -> None:
        """Keep collecting after a failure before ready (`timeouts.observe_failure_s`) until no
        node has logged a line for that long (at most 4x that, or that + 120 s, after the
        failure, and never past the startup deadline), or every process has ended: the nodes still running show whether they hang (a
        peer stuck in a rendezvous keeps waiting where a healthy one would have failed too)."""
        quiet = self.plan.observe_failure_s
        cap = min(deadline, time.monotonic() + max(quiet * 4, quiet + 120.0))
        self.writer.event("observing-after-failure", None, quiet_s=quiet, failure=self.failure)
        self.observe("observing", {"seconds": quiet})
        while time.monotonic() < min(cap, self._last_line + quiet):
            if not any(p.get("state") == "started" for link in self.links.values()
                       if not link.lost for p in link.procs.values()):
                break
            time.sleep(0.5)

    def abort(self, reason: str) -> None:
        """Stop waiting now (a caller that has seen enough of a start that will not finish):
        `start` raises LaunchError with `reason`; leaving the block tears down as ever."""
        self._fail(reason)

    def watch(self, seconds: float) -> None:
        """Hold the running deployment; raise LaunchError if a process dies or a link is lost."""
        if self._failed.wait(seconds):
            self.outcome = "failed-after-ready"
            raise LaunchError(self.failure or "failed")

    # --- stop ------------------------------------------------------------------------------

    def _reap(self, node: str, link: AgentLink | None, commands: list) -> dict | None:
        plan_node = self.plan.node(node)
        pids = [[p["pid"], p["starttime"]] for p in (link.procs.values() if link else [])
                if p.get("pid") and p.get("starttime") is not None]
        pgids = [p["pgid"] for p in (link.procs.values() if link else []) if p.get("pgid")]
        if not pids and not pgids and not commands:
            return None
        reaper = AgentLink(node, plan_node.transport, plan_node.python or local_python(),
                           self.writer)
        reaper.start({"pids": pids, "pgids": pgids, "commands": commands,
                      "grace_s": self.plan.grace_s}, op="reap")
        reaper.done.wait(self.plan.grace_s + 180.0)
        reaper.close()
        return reaper.teardown

    def stop(self, outcome: str | None = None) -> dict:
        """Tear down every node (see module doc); finish the bundle; return the summary."""
        self._stopping = True
        outcome = outcome or self.outcome
        main = threading.current_thread() is threading.main_thread()
        # further Ctrl-C, SIGTERM or SIGHUP must not cut the teardown short, nor be lost: the
        # first one is held and delivered once teardown is done
        held: list[int] = []
        previous = {sig: signal.signal(sig, lambda signum, _frame: held.append(signum))
                    for sig in (signal.SIGINT, signal.SIGTERM, signal.SIGHUP)} if main else {}
        try:
            threads = [threading.Thread(target=l.stop, args=(self.plan.grace_s, outcome),
                                        daemon=True) for l in self.links.values()]
            for thread in threads:
                thread.start()
            for thread in threads:
                thread.join(self.plan.grace_s + 60.0)
            survivors: dict[str, list] = {}
            commands: dict[str, list] = {}
            for node, argv in self.plan.teardown:
                commands.setdefault(node, []).append(list(argv))
            for node in [n.name for n in self.plan.nodes]:
                link = self.links.get(node)
                confirmed = link is not None and link.teardown is not None
                if confirmed:
                    survivors[node] = list(link.teardown.get("survivors") or [])
                if not confirmed or commands.get(node):
                    reaped = self._reap(node, None if confirmed else link, commands.get(node, []))
                    if reaped is not None:
                        survivors[node] = survivors.get(node, []) + list(reaped.get("survivors") or [])
                    elif not confirmed and link is not None and link.procs:
                        survivors[node] = [{"pid": p.get("pid"), "unverified": True}
                                           for p in link.procs.values()]
            nodes = [n.name for n in self.plan.nodes]
            self.writer.environment_diff(diff_environments(read_environments(self.bundle_dir, nodes)))
            summary = {
                "outcome": outcome, "ready_s": self.ready_s, "failure": self.failure,
                "markers": self.clock.timeline(), "survivors": survivors,
                "lost": {n: l.lost for n, l in self.links.items() if l.lost},
            }
            self.writer.event("launch-ended", None, outcome=outcome,
                              survivors=sum(len(v) for v in survivors.values()))
            self.writer.finish(outcome, **{k: v for k, v in summary.items() if k != "outcome"})
            self.summary = summary
            return summary
        finally:
            for sig, handler in previous.items():
                signal.signal(sig, handler)
            if held:  # to the handler it would have met (KeyboardInterrupt; ignored if ignored)
                signal.raise_signal(held[0])

    def __enter__(self) -> "Supervisor":
        return self

    def __exit__(self, exc_type, exc, tb) -> None:
        if exc_type is None:
            outcome = "completed"
        elif issubclass(exc_type, KeyboardInterrupt):
            outcome = "interrupted"
        elif self.outcome in ("timeout", "unreachable", "failed-after-ready"):
            outcome = self.outcome
        elif self.failure and "link lost" in self.failure:
            outcome = "node-lost"
        else:
            outcome = "failed"
        self.stop(outcome)  # sets self.summary (also when a held signal then interrupts)
