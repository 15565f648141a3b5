"""Launches inside a run directory: one launch, and relaunches for replicates.

Each launch gets its own folder (`launches/L001`, `L002`, ...) holding its evidence bundle and,
for the head node's server, the plain `server.log` and `server.log.lines.jsonl` (docs/formats.md,
run directory), and `logs.json`: the log parser's document of every node's line records, with
the startup timeline (phases, unaccounted gaps). A failed launch still leaves its bundle; the
caller decides whether to go on with the next replicate.
"""

from __future__ import annotations

import shutil
from contextlib import contextmanager
from dataclasses import dataclass, field
from pathlib import Path
from typing import Callable, Iterator

from sparktriage.logs import startup_time
from sparktriage.documents.logs import LogsDocument
from sparktriage.errors import LaunchError, SparktriageError
from sparktriage.bundle import layout
from sparktriage.logs.scan import analyze_inputs
from sparktriage.launch.plan import LaunchPlan, refuse_client_steps
from sparktriage.launch.supervisor import Supervisor
from sparktriage.progress import Observer
from sparktriage.store.documents import read_records
from sparktriage.store.rundir import LaunchDir, RunDir

WhileReady = Callable[[Supervisor], None]


def _server_log(plan: LaunchPlan, launch: LaunchDir) -> None:
    """Derived copies of the head server's log beside the bundle (`server.log` + line records)."""
    source = launch.path / "bundle" / layout.NODES_DIR / plan.head.name / layout.log_file("server")
    if not source.is_file():
        return
    shutil.copyfile(source, launch.path / "server.log.lines.jsonl")
    with open(launch.path / "server.log", "w", encoding="utf-8") as out:
        for record in read_records(source):
            out.write(str(record.get("line", "")) + "\n")


def _startup_timeline(launch: LaunchDir) -> dict | None:
    """The `logs` document of the launch's line records (startup phases, gaps, findings),
    written as `logs.json`; None (and a note in the result) when the parser fails."""
    try:
        document = analyze_inputs([str(launch.path / "bundle")])
    except (SparktriageError, OSError, ValueError) as exc:
        return {"error": str(exc)[:300]}
    launch.write("logs.json", document, LogsDocument)  # with schema_version, like every document
    startup = document.get("startup") or {}
    return {"complete": startup.get("complete"), "failed": startup.get("failed"),
            "startup_s": startup_time.of_logs(document),
            "phases": [{"name": p.get("name"), "duration_s": p.get("duration_s"),
                        "open": p.get("open")} for p in document.get("phases") or []]}


def launch_once(plan: LaunchPlan, launch: LaunchDir, observe: Observer | None = None,
                hold_s: float = 0.0, while_ready: WhileReady | None = None) -> dict:
    """Launch, wait for readiness, hold (or run `while_ready`), tear down. Never raises for a
    launch that failed: the result's `outcome` and `failure` say what happened; KeyboardInterrupt
    propagates after teardown."""
    refuse_client_steps(plan)
    supervisor = Supervisor(plan, launch.path / "bundle", observe)
    error: str | None = None
    try:
        with supervisor:
            supervisor.start()
            if while_ready is not None:
                while_ready(supervisor)
            if hold_s > 0:
                supervisor.watch(hold_s)
    except LaunchError as exc:
        error = exc.one_line()
    finally:
        _server_log(plan, launch)
    summary = getattr(supervisor, "summary", {})
    return {"label": launch.label, "bundle": str(launch.path / "bundle"), "error": error,
            **summary, "startup": _startup_timeline(launch)}


@dataclass
class Launched:
    """A launch held ready by `launched()`: its plan, folder and supervisor; `result` is filled
    in (as `launch_once` returns it) once the block has ended and the launch is torn down."""

    plan: LaunchPlan
    launch: LaunchDir
    supervisor: Supervisor
    result: dict = field(default_factory=dict)

    @property
    def endpoint(self) -> str:
        return self.plan.endpoint

    def server_pid(self) -> int | None:
        """The head node's server process id (as its agent reported it)."""
        link = self.supervisor.links.get(self.plan.head.name)
        proc = (link.procs.get("server") if link else None) or {}
        return proc.get("pid")


@contextmanager
def launched(plan: LaunchPlan, launch: LaunchDir, observe: Observer | None = None) -> Iterator[Launched]:
    """`launch_once` as a context manager: launch and wait for readiness (LaunchError when the
    launch fails or misses its deadline, after teardown), hold it while the block runs, then
    tear down and write the launch's derived files (`server.log`, `logs.json`)."""
    supervisor = Supervisor(plan, launch.path / "bundle", observe)
    handle = Launched(plan, launch, supervisor)
    try:
        with supervisor:
            supervisor.start()
            yield handle
    finally:
        _server_log(plan, launch)
        handle.result.update({"label": launch.label, "bundle": str(launch.path / "bundle"),
                              **getattr(supervisor, "summary", {}),
                              "startup": _startup_timeline(launch)})


def launch_replicates(plan: LaunchPlan, run: RunDir, count: int, observe: Observer | None = None,
                      hold_s: float = 0.0, stop_on_failure: bool = True) -> list[dict]:
    """`count` launches of the same plan, one after the other, each torn down before the next."""
    results = []
    for index in range(count):
        launch = run.next_launch()
        if observe:
            observe("launch", {"label": launch.label, "index": index + 1, "count": count})
        result = launch_once(plan, launch, observe, hold_s)
        results.append(result)
        if result.get("outcome") != "completed" and stop_on_failure:
            break
    return results


def raise_for(results: list[dict]) -> None:
    """LaunchError (exit 3) when the last launch did not complete."""
    if results and results[-1].get("outcome") != "completed":
        last = results[-1]
        raise LaunchError(f"launch {last['label']} {last.get('outcome')}: "
                          f"{last.get('error') or last.get('failure') or 'see its bundle'}")
