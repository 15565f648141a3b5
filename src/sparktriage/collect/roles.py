"""What a process in a vLLM tree is, from its name and command line.

vLLM renames its processes with setproctitle (`VLLM::EngineCore`, `VLLM::Worker_TP1`); before
that they show as `python3.x` running `multiprocessing.spawn`. Ray workers show as
`ray::RayWorkerWrapper` / `ray::RayWorkerProc`. Compilers (nvcc, cicc, ptxas, Inductor's
compile workers) are what tells a JIT stall apart (field-reports §1.X, RC-10).
"""

from __future__ import annotations

import os
import re

COMPILERS = frozenset({
    "nvcc", "cicc", "ptxas", "nvlink", "fatbinary", "cudafe++", "gcc", "g++", "cc", "c++",
    "cc1", "cc1plus", "as", "ld", "ld.bfd", "ld.gold", "collect2", "clang", "clang++",
    "ninja", "make", "cmake",
})
_RANK = re.compile(r"(?:Worker|EngineCore|EngineCor|ApiServer)_([A-Za-z0-9_]+)")


def _title(comm: str, cmdline: list) -> str:
    first = cmdline[0] if cmdline else ""
    return first if first.startswith(("VLLM::", "ray::")) else comm


def classify(comm: str, cmdline: list, root: bool) -> tuple[str, str | None]:
    """(role, rank label) of a process; rank is e.g. "TP1", "DP0", "PP1_TP0" or None."""
    title = _title(comm, cmdline)
    joined = " ".join(cmdline)
    base = os.path.basename(cmdline[0]) if cmdline else comm
    match = _RANK.search(title)
    rank = match.group(1) if match else None
    if title.startswith("VLLM::"):
        name = title[6:]
        if name.startswith("EngineCor"):
            return "engine-core", rank
        if name.startswith("Worker"):
            return "worker", rank
        if name.startswith(("APIServer", "ApiServer")):
            return "api-server", rank
        if name.startswith("DPCoordinator"):
            return "dp-coordinator", None
        return "vllm-" + re.sub(r"[^a-z0-9]+", "-", name.lower()).strip("-"), rank
    if title.startswith("ray::"):
        return ("ray-worker" if "Worker" in title else "ray-task"), rank
    if comm in ("raylet", "gcs_server") or ("ray" in base and " start" in joined):
        return "ray", None
    if comm in COMPILERS or base in COMPILERS or "compile_worker" in joined:
        return "compiler", None
    if "multiprocessing.resource_tracker" in joined:
        return "resource-tracker", None
    if "vllm.model_executor.models.registry" in joined:
        return "model-inspector", None
    if " serve" in joined and "vllm" in joined:
        return ("headless" if "--headless" in cmdline else "api-server"), None
    if "multiprocessing.spawn" in joined or "multiprocessing-fork" in joined:
        return "spawned", None
    if base in ("docker", "podman", "nerdctl"):
        return "container-cli", None
    return ("server" if root else "child"), None


def is_python(comm: str, cmdline: list, role: str) -> bool:
    """Whether py-spy can dump this process (a Python interpreter, not a compiler or tool)."""
    if role in ("compiler", "container-cli", "ray"):
        return role == "ray" and "python" in " ".join(cmdline[:1])
    if role in ("api-server", "engine-core", "worker", "headless", "spawned", "ray-worker",
                "ray-task", "dp-coordinator", "model-inspector", "resource-tracker"):
        return True
    return comm.startswith("python") or (bool(cmdline) and "python" in os.path.basename(cmdline[0]))
