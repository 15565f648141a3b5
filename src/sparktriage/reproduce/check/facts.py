"""The flat facts trap conditions read: the deployment's settings and a few derived ones.

Keys: every setting of the normalized deployment by its dotted path (`serve.max_num_seqs`,
`serve.flags.kv-cache-memory-bytes`, `env.VLLM_HOST_IP`, `speculative.method`), plus the
derived facts below (`client.loader_env`: the variables of the deployment's env that choose
which code runs, comma-separated, absent when none). A fact that cannot be known is absent (a condition on it is unknown).
"""

from __future__ import annotations

import json
import re
from typing import Any

from sparktriage.config.client_code import LOADER_ENV
from sparktriage.reproduce.model import Facts

UNIFIED = re.compile(r"gb10|gh200|gb200|grace|spark|thor|orin|unified", re.IGNORECASE)
# GPU model words -> CUDA arch ("12.1" for GB10 / DGX Spark)
ARCHS = [(re.compile(r"gb10|spark", re.I), "12.1"), (re.compile(r"rtx pro 6000|rtx 50|5090|blackwell workstation", re.I), "12.0"),
         (re.compile(r"gb200|b200|b100", re.I), "10.0"), (re.compile(r"gb300|b300", re.I), "10.3"),
         (re.compile(r"h100|h200|gh200|h800|h20\b", re.I), "9.0"), (re.compile(r"l40|l4\b|4090|ada", re.I), "8.9"),
         (re.compile(r"a100|a800|a30\b", re.I), "8.0"), (re.compile(r"a10\b|a40|3090|a6000", re.I), "8.6")]
CACHE_ENV = ("VLLM_CACHE_ROOT", "TRITON_CACHE_DIR", "TORCHINDUCTOR_CACHE_DIR",
             "FLASHINFER_WORKSPACE_BASE", "XDG_CACHE_HOME")


def flatten(data: Any, prefix: str = "", out: dict | None = None) -> dict[str, Any]:
    out = {} if out is None else out
    if isinstance(data, dict):
        for key, value in data.items():
            flatten(value, f"{prefix}.{key}" if prefix else str(key), out)
    elif data is not None:
        out[prefix] = data
    return out


def _speculative_from_json(flags: dict, facts: dict) -> None:
    """A speculative config kept as JSON in serve.flags still has a method and a depth."""
    text = flags.get("speculative-config")
    if not isinstance(text, str) or "speculative.method" in facts:
        return
    try:
        spec = json.loads(text)
    except ValueError:
        return
    if isinstance(spec, dict):
        for key in ("method", "num_speculative_tokens", "model"):
            if spec.get(key) is not None:
                facts[f"speculative.{key}"] = spec[key]


def gpu_arch(model: str | None) -> str | None:
    if not model:
        return None
    for pattern, arch in ARCHS:
        if pattern.search(model):
            return arch
    return None


def _archs(text: str | None) -> list[str] | None:
    if not text or text.strip().lower() in ("not set", "none"):
        return None
    return [a.rstrip("+PTXaf").strip() for a in re.split(r"[;\s,]+", text) if a.strip()]


def _bind_short(args: list[str]) -> bool:
    """A `-v HOST:CONTAINER` bind of a host path (a placeholder for one counts: `<supply:HOME>/..`)."""
    for flag, value in zip(args, args[1:]):
        if flag in ("-v", "--volume") and re.match(r"^(?:\.{1,2}/|~/|/|\$|<supply:)[^:]*:/", value):
            return True
    return False


def _mount_targets(args: list[str]) -> list[str]:
    targets = []
    for flag, value in zip(args, args[1:]):
        if flag in ("-v", "--volume") and ":" in value:
            targets.append(value.split(":")[1])
        elif flag == "--mount":
            for part in value.split(","):
                key, _, item = part.partition("=")
                if key in ("target", "destination", "dst"):
                    targets.append(item)
    return [t.rstrip("/") or "/" for t in targets]


def _cache_persistent(args: list[str], env: dict) -> bool:
    """vLLM's compile cache (VLLM_CACHE_ROOT, else XDG_CACHE_HOME/vllm, else ~/.cache/vllm)
    lies on a mounted folder. A mount of one sibling folder (the Hugging Face cache at
    /root/.cache/huggingface) does not hold it."""
    root = env.get("VLLM_CACHE_ROOT")
    if not root and env.get("XDG_CACHE_HOME"):
        root = env["XDG_CACHE_HOME"].rstrip("/") + "/vllm"
    candidates = [root] if root else ["/root/.cache/vllm"]
    for target in _mount_targets(args):
        for cache in candidates:
            if cache == target or cache.startswith(target + "/") or target == "/":
                return True
        if not root and re.search(r"^/home/[^/]+/\.cache(?:/vllm)?$", target):
            return True  # a non-root user's home cache
    return False


def build(deployment: dict, client: dict[str, Facts], lab: dict[str, Facts],
          lab_nodes: list[dict], client_envs: dict[str, dict],
          pairs: list[tuple[str | None, str]] = ()) -> dict[str, Any]:
    """`client_envs`: each client node's whole environment (facts, command env, own env)."""
    facts = flatten({k: v for k, v in deployment.items() if k not in ("lab",)})
    serve = deployment.get("serve") or {}
    for name, value in (serve.get("flags") or {}).items():
        facts[f"serve.flags.{name}"] = value
    _speculative_from_json(serve.get("flags") or {}, facts)
    engine = deployment.get("engine") or {}
    nodes = (deployment.get("parallelism") or {}).get("nodes") or 1
    client_nodes = max(len(client_envs), 1)
    facts["client.nodes"] = client_nodes
    facts["multi_node"] = client_nodes > 1 or nodes > 1
    gpu_models = [f.gpu.get("model") for f in client.values() if f.gpu.get("model")]
    lab_gpus = [n.get("gpu") for n in lab_nodes if n.get("gpu")] + \
        [f.gpu.get("model") for f in lab.values() if f.gpu.get("model")]
    if gpu_models:
        facts["client.gpu_model"] = gpu_models[0]
    if lab_gpus:
        facts["lab.gpu_model"] = lab_gpus[0]
    known = gpu_models + lab_gpus
    if known:
        facts["unified_memory"] = any(UNIFIED.search(g or "") for g in known)
    # every client node's environment: deployment env + the node's own
    envs = list(client_envs.values()) or [dict(deployment.get("env") or {})]
    facts["vllm_host_ip_every_node"] = all("VLLM_HOST_IP" in e for e in envs)
    ips = [e.get("VLLM_HOST_IP") for e in envs if e.get("VLLM_HOST_IP")
           and not e["VLLM_HOST_IP"].startswith("<supply:")]  # a placeholder is not known
    if facts["multi_node"] and ips:
        # one value for all nodes: given by one shared script, or implied nodes copying the head
        facts["vllm_host_ip_shared"] = len(set(ips)) == 1 and (len(ips) > 1 or client_nodes > 1)
    if engine.get("image"):
        args = list(engine.get("container_args") or [])
        facts["container.short_bind"] = _bind_short(args)
        envs_all = [deployment.get("env") or {}] + list(client_envs.values())
        facts["container.jit_cache_persistent"] = _cache_persistent(
            args, {k: v for e in envs_all for k, v in e.items()})
    # variables the launch keeps that choose which code runs (config/client_code.py)
    planned = [deployment.get("env") or {}, *(deployment.get("node_env") or {}).values()]
    loader = [n for n in LOADER_ENV if any(n in env for env in planned)]
    if loader:
        facts["client.loader_env"] = ", ".join(loader)
    # interface names against the lab nodes' interfaces (lab YAML or capture)
    missing = []
    have_info = False
    for node in lab_nodes:
        names = set(node.get("interfaces") or []) | set(node.get("nics") or [])
        if not names:
            continue
        have_info = True
        planned = {**(deployment.get("env") or {}), **(node.get("env") or {}),
                   **((deployment.get("node_env") or {}).get(node["name"]) or {})}
        client_name = next((c for c, lab_node in pairs if lab_node == node["name"]), None)
        for label, env in (("lab", planned), ("client", client_envs.get(client_name or "", {}))):
            for var in ("NCCL_SOCKET_IFNAME", "GLOO_SOCKET_IFNAME", "TP_SOCKET_IFNAME"):
                value = env.get(var)
                if not value or value.startswith(("^", "=", "<supply:")):
                    continue
                for item in value.split(","):
                    if item and item not in names and not any(n.startswith(item) for n in names):
                        missing.append(f"{node['name']}: {var}={item} ({label} value)")
    if have_info and facts["multi_node"]:
        facts["lab.ifname_missing"] = bool(missing)
        facts["lab.ifname_missing_list"] = "; ".join(missing)
    # engine build arch list against the GPU's arch
    for side, table, models in (("client", client, gpu_models), ("lab", lab, lab_gpus)):
        archs = next((_archs(f.build.get("cuda_archs")) for f in table.values()
                      if f.build.get("cuda_archs")), None)
        arch = gpu_arch(models[0]) if models else None
        if archs is not None and arch is not None:
            facts[f"{side}.arch_missing"] = arch not in archs and arch.replace(".", "") not in archs
            facts[f"{side}.gpu_arch"] = arch
    ct = next((f.versions.get("transformers") for f in client.values() if f.versions.get("transformers")), None)
    lt = next((f.versions.get("transformers") for f in lab.values() if f.versions.get("transformers")), None)
    if ct and lt:
        facts["transformers_major_differs"] = ct.split(".")[0] != lt.split(".")[0]
    if ct:
        facts["client.transformers_major"] = int(ct.split(".")[0]) if ct.split(".")[0].isdigit() else None
    return {k: v for k, v in facts.items() if v is not None}
