"""Run a collector plan on a node: schedule each collector, hand records out, write the manifest.

Sampling collectors (host, disk, net, procs, gpu, dmesg) share one thread and run when due;
py-spy dumps have their own thread (a dump can take a second on a busy process) and can be
asked for on demand; the environment capture runs once in a thread of its own. A collector
that cannot start is not an error: it yields a manifest line whose `skipped` says why. A run
that raises counts as a failure with its message kept; the collector keeps its schedule.
"""

from __future__ import annotations

import threading
import time
from typing import Callable

from sparktriage.collect.base import Collector, Context, Skip
from sparktriage.collect.disk import DiskCollector
from sparktriage.collect.dmesg import DmesgCollector
from sparktriage.collect.environment import EnvironmentCollector
from sparktriage.collect.gpu import GpuCollector
from sparktriage.collect.host import HostCollector
from sparktriage.collect.net import NetCollector
from sparktriage.collect.plan import CollectPlan
from sparktriage.collect.procs import ProcsCollector
from sparktriage.collect.stacks import StacksCollector

CLASSES = {
    "host": HostCollector, "disk": DiskCollector, "net": NetCollector, "procs": ProcsCollector,
    "gpu": GpuCollector, "stacks": StacksCollector, "dmesg": DmesgCollector,
    "environment": EnvironmentCollector,
}
OWN_THREAD = frozenset({"stacks", "environment"})

Emit = Callable[[str, dict], None]  # (node-relative file, record)


class _State:
    """Book-keeping of one collector for its manifest line."""

    def __init__(self, collector: Collector) -> None:
        self.collector = collector
        self.started = time.time()
        self.skipped: str | None = None
        self.records = 0
        self.runs = 0
        self.failures = 0
        self.error: str | None = None
        self.due = time.monotonic()
        self.lock = threading.Lock()


class Runner:
    """Executes one CollectPlan; `emit` receives every record as it is produced."""

    def __init__(self, plan: CollectPlan, ctx: Context, emit: Emit,
                 make: Callable[[str, object, Context], Collector] | None = None) -> None:
        self.plan = plan
        self.ctx = ctx
        self._emit = emit
        self._make = make or (lambda name, spec, c: CLASSES[name](spec, c))
        self._states: dict[str, _State] = {}
        self._stop = threading.Event()
        self._stacks_now = threading.Event()
        self._threads: list[threading.Thread] = []

    def _run(self, state: _State, call: Callable[[], list]) -> None:
        with state.lock:
            state.runs += 1
            try:
                records = call()
            except Exception as exc:  # noqa: BLE001 - recorded in the manifest
                state.failures += 1
                state.error = f"{type(exc).__name__}: {exc}"[:300]
                return
            for record in records:
                if record.get("error"):
                    state.failures += 1
                self._emit(state.collector.file, record)
            state.records += len(records)

    def start(self) -> None:
        for spec in self.plan.collectors:
            collector = self._make(spec.name, spec, self.ctx)
            state = self._states[spec.name] = _State(collector)
            try:
                collector.start()
            except Skip as exc:
                state.skipped = str(exc)
            except Exception as exc:  # noqa: BLE001 - an unexpected failure to start
                state.skipped = f"could not start: {type(exc).__name__}: {exc}"[:300]
        sampled = [s for n, s in self._states.items() if n not in OWN_THREAD and not s.skipped]
        self._spawn(self._sampling_loop, sampled)
        stacks = self._states.get("stacks")
        if stacks and not stacks.skipped:
            self._spawn(self._stacks_loop, stacks)
        env = self._states.get("environment")
        if env and not env.skipped:
            self._spawn(lambda s: self._run(s, lambda: s.collector.collect(time.time())), env)

    def _spawn(self, target: Callable, arg: object) -> None:
        thread = threading.Thread(target=target, args=(arg,), daemon=True)
        thread.start()
        self._threads.append(thread)

    def _sampling_loop(self, states: list[_State]) -> None:
        for state in states:  # first records one interval after start (rates need two readings)
            state.due = time.monotonic() + (state.collector.spec.interval_s or 1.0)
        while states and not self._stop.is_set():
            now = time.monotonic()
            for state in states:
                if now >= state.due:
                    self._run(state, lambda s=state: s.collector.collect(time.time()))
                    state.due = max(state.due + state.collector.spec.interval_s,
                                    time.monotonic() + 0.05)
            wait = min(s.due for s in states) - time.monotonic()
            self._stop.wait(max(wait, 0.01))

    def _stacks_loop(self, state: _State) -> None:
        interval = state.collector.spec.interval_s
        while not self._stop.is_set():
            self._stacks_now.wait(interval if interval else None)
            if self._stop.is_set():
                return
            self._stacks_now.clear()
            self._run(state, lambda: state.collector.collect(time.time()))

    def request_stacks(self) -> bool:
        """Dump stacks now (on demand); False when the stacks collector is not running."""
        state = self._states.get("stacks")
        if not state or state.skipped:
            return False
        self._stacks_now.set()
        return True

    def stop(self, final_stacks: bool = True) -> list[dict]:
        """Stop every collector (one last stack dump first) and return the manifest lines."""
        self.ctx.stopping.set()
        stacks = self._states.get("stacks")
        if final_stacks and stacks and not stacks.skipped:
            self._run(stacks, lambda: stacks.collector.collect(time.time()))
        self._stop.set()
        self._stacks_now.set()
        for thread in self._threads:
            thread.join(timeout=30)
        manifest = []
        for name, state in self._states.items():
            collector = state.collector
            if not state.skipped:
                self._run(state, collector.stop)
                state.runs -= 1  # stopping is not a run
            ended = time.time()
            entry = {
                "collector": name, "node": self.ctx.node, "command": collector.command,
                "started": state.started, "ended": ended,
                "duration_s": round(ended - state.started, 3),
                "rc": None if state.skipped else (collector.rc if collector.rc is not None
                                                  else (0 if not state.failures else 1)),
                "records": state.records, "truncated": collector.truncated,
                "skipped": state.skipped, "error": state.error or collector.last_error,
                "interval_s": collector.spec.interval_s, "runs": state.runs,
                "failures": state.failures, "note": collector.note,
            }
            manifest.append(entry)
        return manifest
