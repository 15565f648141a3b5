"""`collect`: an evidence bundle around a server sparktriage did not start.

Declared as a `CollectRequest` (what to watch, where, for how long), executed by `run_collect`:
one agent on the node, attached to a PID or to the first process whose command line matches,
or running a given command (which it then also stops). Collection ends when the duration is
over, when the server is ready (`until_ready`), when the target exits, on Ctrl-C, or when the
link to the node is lost; the bundle's `outcome` says which.
"""

from __future__ import annotations

import re
import threading
import time
from dataclasses import dataclass, field
from pathlib import Path

from sparktriage.collect.plan import CollectPlan, default_plan
from sparktriage.errors import LaunchError
from sparktriage.bundle.writer import BundleWriter, export_bundle
from sparktriage.bundle.envdiff import diff_environments, read_environments
from sparktriage.launch.link import AgentLink, new_redact_key
from sparktriage.launch.readiness import MarkerClock, api_ready
from sparktriage.launch.transport import Transport, local_python
from sparktriage.progress import Observer

_PORT = re.compile(r"--port[= ](\d+)")
_WILDCARD = {"", "0.0.0.0", "::", "[::]", "*"}


def endpoint_from_argv(argv: list[str] | tuple[str, ...]) -> str | None:
    """The URL a server command listens on, from its own `--host`/`--port` (`--opt V` or
    `--opt=V`); vLLM's default port 8000 for a `serve` command without `--port`; None when it
    cannot tell (then --until-ready needs --endpoint). A wildcard host is reached on 127.0.0.1."""
    values: dict[str, str] = {}
    for i, word in enumerate(argv):
        for opt in ("--host", "--port"):
            if word == opt and i + 1 < len(argv):
                values[opt] = argv[i + 1]
            elif word.startswith(opt + "="):
                values[opt] = word.split("=", 1)[1]
    port = values.get("--port")
    if port is None:
        if "serve" not in argv:
            return None
        port = "8000"
    if not port.isdigit() or not 0 < int(port) < 65536:
        return None
    host = values.get("--host", "")
    host = "127.0.0.1" if host in _WILDCARD else host
    if ":" in host and not host.startswith("["):
        host = f"[{host}]"
    return f"http://{host}:{int(port)}"


@dataclass(frozen=True)
class CollectRequest:
    """What `collect` will do (built by the CLI, shown by --dry-run, executed by run_collect)."""

    out: Path
    node: str = "local"
    pid: int | None = None
    match: str | None = None
    cmd: tuple[str, ...] | None = None
    duration_s: float | None = None
    until_ready: bool = False
    endpoint: str | None = None
    interval_s: float = 1.0
    stacks_interval_s: float | None = 15.0
    logs: tuple[str, ...] = ()
    transport: Transport = field(default_factory=Transport)
    python: str | None = None  # the agent's interpreter on the node (default: python3 / ours)
    pyspy: str | None = None
    match_wait_s: float = 600.0
    export: Path | None = None
    grace_s: float = 20.0
    ready_tail_s: float = 2.0  # keep collecting this long after ready: the last startup lines
    plan: CollectPlan | None = None
    # the command's environment: only these names of the node's own (None: all of them), then
    # `env`; and whether it runs in a fresh private folder the agent makes (and removes)
    env_allow: tuple[str, ...] | None = None
    env: tuple[tuple[str, str], ...] = ()
    private_cwd: bool = False

    def collect_plan(self) -> CollectPlan:
        return self.plan or default_plan(self.node, interval_s=self.interval_s,
                                         stacks_interval_s=self.stacks_interval_s,
                                         pyspy=self.pyspy)

    def target(self) -> dict:
        if self.pid is not None:
            return {"pid": self.pid}
        if self.match is not None:
            return {"match": self.match}
        return {"cmd": list(self.cmd or ())}


def run_collect(req: CollectRequest, observe: Observer | None = None) -> dict:
    """Collect; return {outcome, bundle, ready_s, markers, archive}. Raises LaunchError when
    the node agent could not be started or attached to nothing."""
    observe = observe or (lambda event, details: None)
    plan = req.collect_plan()
    writer = BundleWriter(req.out, origin="collect", target=req.target(), nodes=[req.node],
                          interval_s=req.interval_s)
    started = time.time()
    clock = MarkerClock(started)
    state = {"endpoint": req.endpoint, "exited": False, "attach_error": None}
    wake = threading.Event()

    def listener(node: str, kind: str, message: dict) -> None:
        if kind == "line":
            for name in clock.feed(node, message):
                observe("marker", {"node": node, "marker": name})
        elif kind == "attached":
            state["attach_error"] = message.get("error")
            found = endpoint_from_argv((message.get("cmdline") or "").split())
            if state["endpoint"] is None and found and _PORT.search(message.get("cmdline") or ""):
                state["endpoint"] = found
            observe("attached", message)
            wake.set()
        elif kind == "proc" and message.get("event") in ("exited", "failed"):
            state["exited"] = True
            observe("exited", message)
            wake.set()
        elif kind == "lost":
            wake.set()

    python = req.python or ("python3" if not req.transport.local else local_python())
    link = AgentLink(req.node, req.transport, python, writer, listener)
    start = {"plan": plan.to_json(), "redact_key": new_redact_key(), "link_timeout_s": 60.0,
             "tail": list(req.logs)}
    if req.cmd:
        process = {"name": "server", "argv": list(req.cmd), "env": dict(req.env),
                   "private_cwd": req.private_cwd}
        if req.env_allow is not None:
            process["env_allow"] = list(req.env_allow)
        start["processes"] = [process]
    else:
        start["attach"] = {"pid": req.pid, "match": req.match, "wait_s": req.match_wait_s}
    link.start(start)
    observe("started", {"bundle": str(req.out), "transport": req.transport.describe()})
    outcome, ready_s = "stopped", None
    try:
        deadline = None if req.duration_s is None else time.monotonic() + req.duration_s
        while True:
            if link.lost:
                outcome = "link-lost"
                break
            if state["attach_error"]:
                outcome = "attach-failed"
                break
            if state["exited"]:
                outcome = "target-exited"
                break
            if req.until_ready and api_ready(state["endpoint"] or "http://127.0.0.1:8000", 1.0):
                ready_s = round(time.time() - started, 3)
                outcome = "ready"
                observe("ready", {"after_s": ready_s})
                time.sleep(req.ready_tail_s)
                break
            if deadline is not None and time.monotonic() >= deadline:
                outcome = "duration-elapsed"
                break
            wake.wait(1.0)
            wake.clear()
    except KeyboardInterrupt:
        outcome = "interrupted"
    finally:
        link.stop(req.grace_s, reason=outcome)
        writer.environment_diff(diff_environments(read_environments(req.out, [req.node])))
        writer.finish(outcome, ready_s=ready_s, markers=clock.timeline(),
                      link_lost=link.lost, endpoint=state["endpoint"])
    archive = export_bundle(req.out, req.export) if req.export else None
    if outcome == "attach-failed":
        raise LaunchError(f"could not attach: {state['attach_error']}")
    if link.hello is None and link.lost:
        raise LaunchError(f"node agent on {req.transport.describe()} did not start: {link.lost}")
    return {"outcome": outcome, "bundle": str(req.out), "ready_s": ready_s,
            "markers": clock.timeline(), "archive": str(archive) if archive else None}
