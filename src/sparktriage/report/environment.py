"""The environment as what matters: versions, GPU, driver, NCCL, interconnect, the env vars that
change behaviour; one table for the whole run where launches captured the same environment.

A node's full capture (`environment.json`, hundreds of rows: every package, NIC address,
sysctl) stays in the report's `data/` folder; this module picks the rows a reader needs, from
the collector's documented shape (collect/environment.py: `versions.*`, `driver.nvidia`,
`gpus`, `nics`, `env`) or the flatter shape of older captures (`vllm`, `driver`, `nccl`).
"""

from __future__ import annotations

from typing import Any

from sparktriage.report.values import as_dict, as_list, scalar

VERSION_KEYS = ("python", "torch", "vllm", "cuda", "nccl", "flashinfer", "triton", "transformers")
BEHAVIOUR_ENV = ("NCCL_", "GLOO_", "VLLM_", "CUDA_", "TORCH", "PYTORCH_", "TRITON_", "UCX_",
                 "FLASHINFER_", "NVSHMEM_", "OMP_", "TP_SOCKET_IFNAME", "MASTER_ADDR",
                 "MASTER_PORT", "RAY_")


def _text(value: Any) -> str | None:
    if value is None or value == "" or isinstance(value, (dict, list)):
        return None
    return scalar(value)


def _gpu(env: dict) -> str | None:
    gpus = [g for g in as_list(env.get("gpus")) if isinstance(g, dict)]
    if not gpus:
        return _text(env.get("gpu"))
    names = [_text(g.get("name")) or _text(g.get("model")) or "GPU" for g in gpus]
    counted = {n: names.count(n) for n in names}
    return ", ".join(f"{c} x {n}" for n, c in counted.items())


def _interconnect(env: dict) -> str | None:
    nics = env.get("nics")
    items = ([{"name": k, **as_dict(v)} for k, v in nics.items()] if isinstance(nics, dict)
             else [n for n in as_list(nics) if isinstance(n, dict)])
    parts = []
    for nic in items:
        if nic.get("operstate") not in (None, "up") or str(nic.get("name", "")).startswith(("lo", "ifb", "veth", "docker")):
            continue
        bits = [f"{nic['speed_mbps'] / 1000:g} Gb/s" if isinstance(nic.get("speed_mbps"), (int, float))
                and nic["speed_mbps"] > 0 else None,
                f"MTU {nic['mtu']}" if nic.get("mtu") else None]
        parts.append(f"{nic.get('name', '?')}" + (f" ({', '.join(b for b in bits if b)})"
                                                   if any(bits) else ""))
    return "; ".join(parts) or None


def _differing_name(key: str) -> str | None:
    """A readable name for a flattened capture key whose difference can change results, or
    None for noise (addresses, times, counters): `versions.torch` -> `torch version`,
    `env.NCCL_IB_DISABLE` -> `env NCCL_IB_DISABLE`, `packages.einops` -> `package einops`."""
    head, _, rest = key.partition(".")
    if head == "versions" and rest:
        return f"{rest} version"
    if head == "packages" and rest:
        return f"package {rest}"
    if head == "env" and rest.startswith(BEHAVIOUR_ENV):
        return f"env {rest}"
    if head == "driver":
        return "NVIDIA driver" if rest in ("", "nvidia") else f"driver {rest}"
    if head in ("gpus", "gpu"):
        return "GPU " + rest.replace(".", " ") if rest else "GPU"
    if head in ("kernel", "os", "arch", "machine"):
        return head + (f" {rest.replace('.', ' ')}" if rest else "")
    return None


def cross_node_rows(differs: list[dict], limit: int = 40) -> tuple[list[list[str]], int]:
    """The cross-node differences that can change results, as table rows (setting, then one
    value per node), and how many other differences (noise) were left in data/."""
    rows, other = [], 0
    for item in differs:
        name = _differing_name(str(item.get("key", "")))
        if name is None:
            other += 1
            continue
        rows.append([name, *(scalar(v) for v in as_dict(item.get("values")).values())])
    return rows[:limit], other + max(0, len(rows) - limit)


def summary_rows(env: dict) -> list[tuple[str, str]]:
    """(setting, value) rows of one node's capture: only what matters, in a fixed order."""
    versions = as_dict(env.get("versions"))
    rows: list[tuple[str, str | None]] = []
    for key in VERSION_KEYS:
        rows.append((f"{key} version", _text(versions.get(key)) or _text(env.get(key))))
    driver = env.get("driver")
    rows.append(("NVIDIA driver", _text(as_dict(driver).get("nvidia")) if isinstance(driver, dict)
                 else _text(driver)))
    rows.append(("GPU", _gpu(env)))
    kernel = env.get("kernel")
    rows.append(("kernel", _text(as_dict(kernel).get("release")) if isinstance(kernel, dict)
                 else _text(kernel)))
    rows.append(("OS", _text(env.get("os"))))
    rows.append(("interconnect", _interconnect(env)))
    for name, value in sorted(as_dict(env.get("env")).items()):
        if str(name).startswith(BEHAVIOUR_ENV):
            rows.append((f"env {name}", _text(value)))
    return [(k, v) for k, v in rows if v is not None]


def run_table(launches: list[dict]) -> list[dict]:
    """Launches grouped by identical summaries: [{launches, nodes, rows: [[setting, v1, v2..]]}],
    one column per node, so a run whose launches captured one environment shows one table."""
    groups: list[dict] = []
    for launch in launches:
        nodes = sorted(launch["summary"])
        keys: list[str] = []
        for node in nodes:
            keys += [k for k, _ in launch["summary"][node] if k not in keys]
        rows = [[k, *[dict(launch["summary"][n]).get(k, "(absent)") for n in nodes]] for k in keys]
        for group in groups:
            if group["nodes"] == nodes and group["rows"] == rows:
                group["launches"].append(launch["label"])
                break
        else:
            groups.append({"launches": [launch["label"]], "nodes": nodes, "rows": rows})
    return groups


__all__ = ["summary_rows", "run_table", "VERSION_KEYS", "BEHAVIOUR_ENV"]
