"""Capture the lab's environment live, on each lab node, with the environment collector.

For every lab node of the plan a node agent runs (locally, or over SSH as `launch` does) with
only the environment collector, around a short placeholder process started with the node's
planned environment and the engine's own interpreter: the capture then reads that
interpreter's packages and that process's environment, exactly what the server would get.
The placeholder is fixed text; the engine path travels as an argument, never as code. With a
container image the host is captured (the packages inside the image are not).
"""

from __future__ import annotations

import os
import shutil
import sys
import tempfile
from pathlib import Path

from sparktriage.collect.plan import COLLECTORS, default_plan
from sparktriage.errors import SparktriageError
from sparktriage.bundle.envdiff import read_environments
from sparktriage.launch.attach_collect import CollectRequest, run_collect
from sparktriage.launch.plan import LaunchPlan
from sparktriage.reproduce.labfacts import from_environment_doc
from sparktriage.reproduce.model import Facts
from sparktriage.reproduce.secrets import Placeholders

HOLD_S = 3.0
# Find the interpreter of a console script (its shebang) and become it, sleeping briefly.
_BOOT = ("import os,sys\n"
         "p=sys.argv[1]\n"
         "exe=p\n"
         "if 'python' not in os.path.basename(p):\n"
         "    try:\n"
         "        import shutil\n"
         "        q=p if os.path.isabs(p) else (shutil.which(p) or p)\n"
         "        l=open(q,'rb').readline(300).decode('utf-8','replace')\n"
         "        w=l[2:].split() if l.startswith('#!') else []\n"
         "        exe=(shutil.which(w[1]) if w and os.path.basename(w[0])=='env' and len(w)>1 else (w[0] if w else sys.executable))\n"
         "    except OSError:\n"
         "        exe=sys.executable\n"
         "os.execv(exe,[exe,'-c','import time; time.sleep(%s)'])\n")


def local_interpreter(program: str) -> str | None:
    """The interpreter of a console script on this machine (its shebang), read, not run."""
    path = program if os.path.isabs(program) else shutil.which(program)
    if not path:
        return None
    try:
        with open(path, "rb") as fh:
            first = fh.readline(300).decode("utf-8", "replace")
    except OSError:
        return None
    words = first[2:].split() if first.startswith("#!") else []
    if words and os.path.basename(words[0]) == "env" and len(words) > 1:
        return shutil.which(words[1])
    return words[0] if words and "python" in os.path.basename(words[0]) else None


def capture_node(plan: LaunchPlan, node: str, engine_argv0: str, out: Path,
                 secrets: Placeholders) -> Facts:
    node_plan = plan.node(node)
    env = {}
    for stage in plan.stages:
        for name, proc in stage.processes:
            if name == node and proc.name == "server":
                env = dict(proc.env)
    python = node_plan.python or "python3"
    interpreter = engine_argv0 if "python" in os.path.basename(engine_argv0) else None
    if node_plan.transport.local:
        python = sys.executable
        interpreter = interpreter or local_interpreter(engine_argv0)
    collect = default_plan(node, python=interpreter,
                           disable=tuple(c for c in COLLECTORS if c != "environment"))
    # `env NAME=VALUE ...` sets the planned environment; names are checked by the model
    cmd = ("env", *(f"{k}={v}" for k, v in sorted(env.items())), python, "-c",
           _BOOT % HOLD_S, engine_argv0)
    req = CollectRequest(out=out, node=node, cmd=cmd, duration_s=HOLD_S + 1.0,
                         transport=node_plan.transport, python=node_plan.python, plan=collect,
                         grace_s=5.0)
    run_collect(req)
    docs = read_environments(out, [node])
    if node not in docs:
        raise SparktriageError(f"{node}: the environment capture wrote nothing")
    return from_environment_doc(docs[node], f"live capture on {node}", node, secrets)


def capture_lab(plan: LaunchPlan, engine_argv0: str, secrets: Placeholders,
                nodes: list[str]) -> tuple[dict[str, Facts], dict[str, str]]:
    """({lab node: facts}, {lab node: "live" or the reason it failed})."""
    facts: dict[str, Facts] = {}
    status: dict[str, str] = {}
    with tempfile.TemporaryDirectory(prefix="sparktriage-capture-") as tmp:
        for node in nodes:
            try:
                facts[node] = capture_node(plan, node, engine_argv0, Path(tmp) / node, secrets)
                status[node] = "live"
            except SparktriageError as exc:
                status[node] = f"not captured: {exc.one_line()}"
    return facts, status
