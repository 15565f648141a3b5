"""Capture the lab's environment live, on each lab node, with the environment collector.

Only the consultant's side chooses what this runs, where and with which environment (the
client's inputs are data to diff, docs/security.md). For every lab node of the plan a node
agent runs (locally, or over SSH with the `--lab` file's transport, as `launch` does) with
only the environment collector, around a short placeholder process:

- the program is the lab's own interpreter (the node's `python` from the lab file; this
  machine's own on a local node) in isolated mode (`-I`: no PYTHON* variable, no user site,
  not the working folder on sys.path), running fixed text;
- its environment is the node's own values of an allow-list of names (the families the
  collector reports, and the locale and home), then the lab file's `env` of the node; the
  client's planned environment is never applied (the diff lays it over the capture);
- it runs in a fresh private folder the agent makes and removes, never beside client files;
- the packages read are those of the lab's vLLM interpreter: the lab file's `vllm_python`,
  else on this machine the interpreter of the `vllm` on sparktriage's own PATH, else the
  node's `python`. No path a client file names is read for a `#!` line or executed.

With a container image the host is captured (the packages inside the image are not).
"""

from __future__ import annotations

import os
import shutil
import sys
import tempfile
from pathlib import Path

from sparktriage.collect.environment import ENV_PREFIXES
from sparktriage.collect.plan import COLLECTORS, default_plan
from sparktriage.config.lab import Lab, LabNode
from sparktriage.errors import SparktriageError
from sparktriage.bundle.envdiff import read_environments
from sparktriage.launch.attach_collect import CollectRequest, run_collect
from sparktriage.launch.plan import LaunchPlan
from sparktriage.reproduce.check.labfacts import from_environment_doc
from sparktriage.reproduce.model import Facts
from sparktriage.reproduce.secrets import Placeholders

HOLD_S = 3.0
PLACEHOLDER = "import time; time.sleep(%s)" % HOLD_S
# the node's own variables the placeholder keeps: those the collector reports, and the basics
LAB_ENV_ALLOW = ("HOME", "USER", "LOGNAME", "LANG", "LC_*", "TZ", "PATH", "TMPDIR",
                 *(f"{prefix}*" for prefix in ENV_PREFIXES))


def local_interpreter(program: str = "vllm") -> str | None:
    """The interpreter of the lab's own console script on this machine (its `#!` line, read,
    never run), found on sparktriage's own PATH; only ever asked for a fixed name."""
    path = shutil.which(program)
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


def capture_request(plan: LaunchPlan, node: str, lab_node: LabNode | None,
                    out: Path) -> CollectRequest:
    """What the capture of one lab node runs (declared; `run_collect` executes it)."""
    node_plan = plan.node(node)
    local = node_plan.transport.local
    python = sys.executable if local else (node_plan.python or "python3")
    packages = (lab_node.vllm_python if lab_node else None) or \
        (local_interpreter() if local else None) or python
    collect = default_plan(node, python=packages,
                           disable=tuple(c for c in COLLECTORS if c != "environment"))
    return CollectRequest(out=out, node=node, cmd=(python, "-I", "-c", PLACEHOLDER),
                          duration_s=HOLD_S + 1.0, transport=node_plan.transport,
                          python=node_plan.python, plan=collect, grace_s=5.0,
                          env_allow=LAB_ENV_ALLOW,
                          env=tuple(sorted((lab_node.env if lab_node else {}).items())),
                          private_cwd=True)


def capture_node(plan: LaunchPlan, node: str, lab_node: LabNode | None, out: Path,
                 secrets: Placeholders) -> Facts:
    run_collect(capture_request(plan, node, lab_node, out))
    docs = read_environments(out, [node])
    if node not in docs:
        raise SparktriageError(f"{node}: the environment capture wrote nothing")
    return from_environment_doc(docs[node], f"live capture on {node}", node, secrets)


def capture_lab(plan: LaunchPlan, lab: Lab, secrets: Placeholders,
                nodes: list[str]) -> tuple[dict[str, Facts], dict[str, str]]:
    """({lab node: facts}, {lab node: "live" or the reason it failed})."""
    facts: dict[str, Facts] = {}
    status: dict[str, str] = {}
    own = {n.name: n for n in lab.nodes}
    with tempfile.TemporaryDirectory(prefix="sparktriage-capture-") as tmp:
        for node in nodes:
            try:
                facts[node] = capture_node(plan, node, own.get(node), Path(tmp) / node, secrets)
                status[node] = "live"
            except SparktriageError as exc:
                status[node] = f"not captured: {exc.one_line()}"
    return facts, status
