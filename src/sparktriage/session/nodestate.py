"""Node state between launches (field-reports.md, addendum): engine processes left over from
the previous launch, free memory drifting across restarts, a GPU stuck in a low-power state.

Before each launch the session records, per node, the free memory (MemAvailable), the engine
processes still running (command lines naming the deployment's model, or any process left
in a process group the session started, vLLM's `EngineCore` children included), and the clocks and power state (`nvidia-smi`, when the node has one; the CPU
frequency governor otherwise). `compare` flags a launch whose nodes differ from what the first
launch found; a flagged launch is reported apart, never pooled silently with the others.
"""

from __future__ import annotations

import json
import subprocess

from sparktriage.launch.plan import LaunchPlan
from sparktriage.launch.transport import local_python

MEMORY_TOLERANCE = 0.05  # of the first launch's free memory
MEMORY_FLOOR_BYTES = 1 << 30

# Run on the node by its own Python; argv[1] is JSON {"needles": [...]}. Fixed text, no input.
_PROBE = r"""# sparktriage-nodestate-probe
import json, os, subprocess, sys
want = json.loads(sys.argv[1])
out = {"mem_available_bytes": None, "engines": [], "other_engines": 0, "gpu": None, "governor": None}
groups = set(want.get("pgids") or [])
try:
    for line in open("/proc/meminfo"):
        if line.startswith("MemAvailable:"):
            out["mem_available_bytes"] = int(line.split()[1]) * 1024
except OSError:
    pass
me = os.getpid()
for name in os.listdir("/proc"):
    if not name.isdigit() or int(name) == me:
        continue
    try:
        raw = open(f"/proc/{name}/cmdline", "rb").read().replace(b"\0", b" ").decode("utf-8", "replace")
    except OSError:
        continue
    if "sparktriage-nodestate-probe" in raw:
        continue
    try:
        stat = open(f"/proc/{name}/stat").read()
        pgrp = int(stat[stat.rindex(")") + 2:].split()[2])
    except (OSError, ValueError, IndexError):
        pgrp = None
    if any(n and n in raw for n in want["needles"]) or pgrp in groups:
        out["engines"].append({"pid": int(name), "cmd": raw[:200].strip()})
    elif "EngineCore" in raw:
        out["other_engines"] += 1
try:
    done = subprocess.run(["nvidia-smi", "--query-gpu=index,clocks.sm,clocks.max.sm,power.draw,pstate",
                           "--format=csv,noheader,nounits"], capture_output=True, text=True, timeout=20)
    if done.returncode == 0:
        out["gpu"] = [dict(zip(("index", "sm_mhz", "sm_max_mhz", "power_w", "pstate"),
                               [v.strip() for v in l.split(",")])) for l in done.stdout.splitlines() if l.strip()]
except (OSError, subprocess.TimeoutExpired):
    pass
try:
    out["governor"] = open("/sys/devices/system/cpu/cpu0/cpufreq/scaling_governor").read().strip()
except OSError:
    pass
print(json.dumps(out))
"""


def snapshot(plan: LaunchPlan, needles: list[str],
             pgids: dict[str, list[int]] | None = None) -> dict[str, dict]:
    """Each node's state now: {node: {mem_available_bytes, engines, other_engines, gpu,
    governor} or {error}}. `engines`: processes naming `needles` or in the session's own
    process groups (`pgids` per node); `other_engines`: how many other `EngineCore` processes
    run there (another user's server: recorded, not flagged)."""
    states = {}
    for node in plan.nodes:
        argv = node.transport.argv([node.python or local_python(), "-c", _PROBE,
                                    json.dumps({"needles": needles,
                                                "pgids": (pgids or {}).get(node.name, [])})])
        try:
            done = subprocess.run(argv, capture_output=True, timeout=60, stdin=subprocess.DEVNULL)
            states[node.name] = json.loads(done.stdout.decode("utf-8", "replace").strip().splitlines()[-1])
        except (OSError, subprocess.TimeoutExpired, ValueError, IndexError) as exc:
            states[node.name] = {"error": f"cannot read the node state: {str(exc)[:200]}"}
    return states


def engine_needles(model_path: str) -> list[str]:
    """What marks an engine process of this deployment in a command line: its model path
    (vLLM's `EngineCore` children are found by process group instead)."""
    return [model_path] if model_path else []


def compare(first: dict[str, dict] | None, now: dict[str, dict]) -> list[str]:
    """Why the nodes now differ from the first launch's (empty: the same)."""
    flags = []
    for node, state in now.items():
        if state.get("error"):
            flags.append(f"{node}: {state['error']}")
            continue
        if state.get("engines"):
            flags.append(f"{node}: {len(state['engines'])} engine process(es) still running "
                         f"before the launch (pid {', '.join(str(e['pid']) for e in state['engines'][:5])})")
        base = (first or {}).get(node) or {}
        was, free = base.get("mem_available_bytes"), state.get("mem_available_bytes")
        if was and free is not None:
            allowed = max(MEMORY_FLOOR_BYTES, was * MEMORY_TOLERANCE)
            if was - free > allowed:
                flags.append(f"{node}: free memory {free / 2**30:.1f} GiB, "
                             f"{(was - free) / 2**30:.1f} GiB below the first launch's {was / 2**30:.1f} GiB")
        if base.get("gpu") and state.get("gpu"):
            before = [g.get("pstate") for g in base["gpu"]]
            after = [g.get("pstate") for g in state["gpu"]]
            if before != after:
                flags.append(f"{node}: GPU power state {', '.join(map(str, after))} "
                             f"(first launch: {', '.join(map(str, before))})")
        if base.get("governor") and state.get("governor") and base["governor"] != state["governor"]:
            flags.append(f"{node}: CPU governor {state['governor']} (first launch: {base['governor']})")
    return flags
