"""Processes a session started that outlived it: find them on every node, stop them.

Each server process the supervisor starts is recorded in `session.json` with its node, pid,
process group and start time (clock ticks since boot, from /proc). After a crash, `resume`
(and `run` on an existing directory) asks every node which of them are still alive, matched
by pid *and* start time (a reused pid is never touched), and which members their process
groups still have; what is found is stopped by the node agent's `reap` operation (SIGTERM to
the groups, SIGKILL after the grace period), the same path teardown uses, locally or over SSH.
"""

from __future__ import annotations

import json
import subprocess
import tempfile
from dataclasses import dataclass
from pathlib import Path

from sparktriage.bundle.writer import BundleWriter
from sparktriage.launch.link import AgentLink
from sparktriage.launch.plan import LaunchPlan
from sparktriage.launch.transport import local_python

# Run on the node by its own Python: reads JSON {"pids": [[pid, start]], "pgids": [..]} from
# argv[1], prints {"alive": [[pid, start]], "members": {pgid: [pid, ...]}}. Fixed text, no input.
_PROBE = r"""
import json, os, sys
want = json.loads(sys.argv[1])
def stat(pid):
    try:
        raw = open(f"/proc/{pid}/stat", "rb").read().decode("utf-8", "replace")
    except OSError:
        return None
    fields = raw[raw.rindex(")") + 2:].split()
    return int(fields[2]), int(fields[19])  # pgrp, starttime
alive = [[p, s] for p, s in want["pids"] if (stat(p) or (0, -1))[1] == s]
members = {}
groups = set(want["pgids"])
if groups:
    for name in os.listdir("/proc"):
        if name.isdigit():
            got = stat(int(name))
            if got and got[0] in groups:
                members.setdefault(str(got[0]), []).append(int(name))
print(json.dumps({"alive": alive, "members": members}))
"""


@dataclass(frozen=True)
class NodeSurvivors:
    """What one node still runs of the session's processes, and what stopping them left."""

    node: str
    alive: list[list[int]]
    members: dict[str, list[int]]
    error: str | None = None
    left: list[dict] | None = None  # survivors of the reap itself

    @property
    def found(self) -> int:
        return len({p for p, _ in self.alive} | {m for ms in self.members.values() for m in ms})


def _ask(plan: LaunchPlan, node: str, pids: list[list[int]], pgids: list[int]) -> NodeSurvivors:
    target = plan.node(node)
    argv = target.transport.argv([target.python or local_python(), "-c", _PROBE,
                                  json.dumps({"pids": pids, "pgids": pgids})])
    try:
        done = subprocess.run(argv, capture_output=True, timeout=60, stdin=subprocess.DEVNULL)
        answer = json.loads(done.stdout.decode("utf-8", "replace").strip().splitlines()[-1])
    except (OSError, subprocess.TimeoutExpired, ValueError, IndexError) as exc:
        return NodeSurvivors(node, [], {}, error=f"cannot ask {node}: {str(exc)[:200]}")
    return NodeSurvivors(node, [[int(p), int(s)] for p, s in answer.get("alive") or []],
                         {str(k): [int(x) for x in v] for k, v in (answer.get("members") or {}).items()})


def _reap(plan: LaunchPlan, found: NodeSurvivors, grace_s: float) -> list[dict]:
    target = plan.node(found.node)
    with tempfile.TemporaryDirectory(prefix="sparktriage-reap-") as scratch:
        writer = BundleWriter(Path(scratch), origin="launch", target={}, nodes=[found.node],
                              interval_s=None)
        link = AgentLink(found.node, target.transport, target.python or local_python(), writer)
        link.start({"pids": found.alive, "pgids": [int(g) for g in found.members],
                    "commands": [], "grace_s": grace_s}, op="reap")
        link.done.wait(grace_s + 120.0)
        link.close()
        return list((link.teardown or {}).get("survivors") or [])


def stop_survivors(plan: LaunchPlan, processes: list[dict]) -> list[NodeSurvivors]:
    """Find the recorded processes still alive on every node and stop them; one result per
    node that had any recorded."""
    results = []
    for node in dict.fromkeys(p["node"] for p in processes):
        mine = [p for p in processes if p["node"] == node and p.get("pid")
                and p.get("starttime") is not None]
        pids = [[int(p["pid"]), int(p["starttime"])] for p in mine]
        pgids = sorted({int(p["pgid"]) for p in mine if p.get("pgid")})
        try:
            plan.node(node)
        except (KeyError, StopIteration, ValueError):
            results.append(NodeSurvivors(node, [], {}, error=f"node {node} is not in the deployment"))
            continue
        found = _ask(plan, node, pids, pgids)
        if found.found:
            found = NodeSurvivors(found.node, found.alive, found.members,
                                  left=_reap(plan, found, plan.grace_s))
        results.append(found)
    return results
