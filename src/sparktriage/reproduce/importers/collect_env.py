"""`vllm collect-env` output (vllm-mechanics.md §12) into one node's facts.

Sections are framed by `=====` lines; entries are `Key : value` (aligned), pip lines
`[pip3] name==version`, the vLLM build flags line `CUDA Archs: ...; ROCm: ...`, the GPU
topology matrix, and `NAME=value` lines under Environment Variables. `Could not collect`
is an unknown value. Every section's entries are kept in `raw` for the diff.
"""

from __future__ import annotations

import re

from sparktriage.reproduce.importers.common import Ctx
from sparktriage.reproduce.importers.protocol import ReadInput
from sparktriage.reproduce.model import Facts, Imported

_FRAME = re.compile(r"^=+\s*\Z")
_ENTRY = re.compile(r"^([A-Za-z][A-Za-z0-9 ._/()+-]*?)\s*:\s(.*)\n?\Z")
_PIP = re.compile(r"^\[(?:pip3?|conda)\]\s+([A-Za-z0-9_.-]+)\s*(?:==|\s)\s*(\S+)")
_ARCHS = re.compile(r"CUDA Archs:\s*([^;]*)")
_ENV = re.compile(r"^([A-Za-z_][A-Za-z0-9_]*)=(.*)\n?\Z")
PACKAGES = {"torch": "torch", "transformers": "transformers", "triton": "triton",
            "flashinfer-python": "flashinfer", "flashinfer": "flashinfer",
            "flashinfer-cubin": "flashinfer-cubin", "nvidia-nccl-cu12": "nccl",
            "nvidia-nccl-cu13": "nccl", "nvidia-cutlass-dsl": "cutlass-dsl",
            "numpy": "numpy", "pyzmq": "pyzmq", "xformers": "xformers", "deep-gemm": "deep-gemm",
            "deep_gemm": "deep-gemm", "safetensors": "safetensors", "ray": "ray"}


def looks_like(text: str) -> bool:
    return ("vLLM Version" in text or "PyTorch version" in text) and bool(
        re.search(r"^=+\s*$", text, re.MULTILINE))


def _value(text: str) -> str | None:
    text = text.strip()
    return None if not text or text in ("Could not collect", "N/A") else text


def parse(text: str, ctx: Ctx) -> Facts:
    section = ""
    entries: dict[str, str | None] = {}
    pips: dict[str, str] = {}
    env: dict[str, str] = {}
    topology: list[str] = []
    lines = text.splitlines()
    i = 0
    while i < len(lines):
        line = lines[i]
        if _FRAME.match(line) and i + 2 < len(lines) and _FRAME.match(lines[i + 2]):
            section = lines[i + 1].strip()
            i += 3
            continue
        i += 1
        if section == "Environment Variables":
            match = _ENV.match(line.strip())
            if match:
                env[match.group(1)] = ctx.secrets.env_value(match.group(1), match.group(2),
                                                             "collect-env")
            continue
        if section == "CPU Info":
            match = re.match(r"^(Architecture|Model name|CPU\(s\)):\s+(.*)\n?\Z", line)
            if match:
                entries.setdefault(f"cpu {match.group(1)}", match.group(2).strip())
            continue
        pip = _PIP.match(line.strip())
        if pip:
            pips[pip.group(1).lower()] = pip.group(2)
            continue
        archs = _ARCHS.search(line)
        if archs:
            entries["CUDA Archs"] = _value(archs.group(1))
            continue
        if line.startswith("GPU Topology"):
            while i < len(lines) and lines[i].startswith((" ", "\t", "GPU", "NIC", "Legend")) \
                    and not _FRAME.match(lines[i]):
                topology.append(lines[i].strip())
                i += 1
            continue
        match = _ENTRY.match(line)
        if match:
            entries[match.group(1).strip()] = _value(match.group(2))
    versions = {"vllm": entries.get("vLLM Version"), "torch": None, "cuda": None}
    torch = entries.get("PyTorch version")
    versions["torch"] = torch
    versions["cuda"] = entries.get("CUDA runtime version") or entries.get(
        "CUDA used to build PyTorch")
    for pip_name, key in PACKAGES.items():
        if pip_name in pips and key not in versions:
            versions[key] = pips[pip_name]
    versions.setdefault("torch", pips.get("torch"))
    if versions["torch"] is None:
        versions["torch"] = pips.get("torch")
    os_line = entries.get("OS") or ""
    arch = re.search(r"\(([^()]*)\)\s*$", os_line)
    gpu_line = entries.get("GPU models and configuration")
    facts = Facts(
        source=ctx.source,
        versions={k: v for k, v in versions.items()},
        system={"os": re.sub(r"\s*\([^()]*\)\s*$", "", os_line) or None,
                "kernel": _kernel(entries.get("Python platform")),
                "arch": (arch.group(1) if arch else None) or entries.get("cpu Architecture"),
                "libc": entries.get("Libc version"), "cpu": entries.get("cpu Model name"),
                "gcc": entries.get("GCC version"), "python": (entries.get("Python version")
                                                              or "").split(" ")[0] or None},
        gpu={"model": _gpu_model(gpu_line), "count": _gpu_count(gpu_line),
             "driver": entries.get("Nvidia driver version"),
             "interconnect": _interconnect(topology)},
        build={"cuda_archs": entries.get("CUDA Archs"),
               "cudnn": entries.get("cuDNN version"),
               "cuda_available": entries.get("Is CUDA available"),
               "cuda_module_loading": entries.get("CUDA_MODULE_LOADING set to")},
        env=dict(sorted(env.items())),
    )
    ctx.mapped.append(f"collect-env: {len([v for v in entries.values() if v])} entries, "
                      f"{len(pips)} packages, {len(env)} environment variables -> facts")
    return facts


def _kernel(platform: str | None) -> str | None:
    if not platform:
        return None
    match = re.match(r"^Linux-(.+?)-(?:x86_64|aarch64|arm64)", platform)
    return match.group(1) if match else platform


def _gpu_model(line: str | None) -> str | None:
    if not line:
        return None
    match = re.search(r"GPU \d+:\s*([^(\n]+)", line)
    return (match.group(1) if match else line).strip()


def _gpu_count(line: str | None) -> str | None:
    if not line:
        return None
    return str(len(re.findall(r"GPU \d+:", line)) or 1)


def _interconnect(topology: list[str]) -> str | None:
    text = " ".join(topology)
    for word in ("NV18", "NV12", "NV8", "NV4", "NV2", "NV1", "PIX", "PXB", "PHB", "NODE", "SYS"):
        if re.search(rf"\b{word}\b", text):
            return word
    return None


class CollectEnvImporter:
    """`vllm collect-env` output: its framed sections (module doc)."""

    kind = "collect-env"
    role = "values"

    def claims(self, source: ReadInput) -> bool:
        return looks_like(source.text)

    def read(self, source: ReadInput, ctx: Ctx) -> Imported:
        return ctx.result(facts=[parse(source.text, ctx)])
