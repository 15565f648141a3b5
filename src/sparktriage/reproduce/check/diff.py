"""The diff that matters: client facts against lab facts, node by node, each with why and severity.

Compared: engine and library versions, build arch list, CUDA runtime, driver, OS, kernel,
architecture, GPU model, count and interconnect, node count, and every environment variable
that changes behaviour (VLLM_*, NCCL_*, GLOO_*, TORCH*, PYTORCH_*, CUDA_*, OMP_*, UCX_*,
TP_SOCKET_IFNAME, NVIDIA_VISIBLE_DEVICES). A fact known on one side only is listed with severity `info`. `why` and
the severity come from the curated table (rules/config/_why.yaml, shown in docs/reproduce.md).
"""

from __future__ import annotations

import fnmatch
from typing import Any

from sparktriage.reproduce.model import DiffItem, Facts
from sparktriage.reproduce.check.traps import WhyTable

ENV_PREFIXES = ("VLLM_", "NCCL_", "GLOO_", "TORCH", "PYTORCH_", "CUDA_", "OMP_", "UCX_",
                "TP_SOCKET_IFNAME", "NVIDIA_VISIBLE_DEVICES")
SEVERITY_ORDER = {"high": 0, "medium": 1, "low": 2, "info": 3}


def why_for(key: str, table: WhyTable) -> tuple[str, str, str]:
    for row in table.rows:
        if fnmatch.fnmatchcase(key, row.key):
            return row.why, row.severity, row.source
    return "another setting", "low", ""


def _pairs(facts: Facts) -> dict[str, Any]:
    out = {}
    for section in ("versions", "system", "gpu", "build"):
        for key, value in getattr(facts, section).items():
            if section == "gpu" and key == "driver":
                out["gpu.driver"] = value
            else:
                out[f"{section}.{key}"] = value
    return out


def _norm(key: str, value):
    if value is None:
        return None
    text = str(value).strip()
    if key == "versions.torch":
        return text.split("+")[0] if False else text
    return text


def compare(client: dict[str, Facts], lab: dict[str, Facts], pairs: list[tuple[str | None, str]],
            client_env: dict[str, dict[str, str]], lab_env: dict[str, dict[str, str]],
            client_nodes: int, lab_nodes: int, table: WhyTable) -> list[DiffItem]:
    items: list[DiffItem] = []

    def add(key, c, l, cn, ln, known_absent=False):
        why, severity, source = why_for(key, table)
        if (c is None or l is None) and not known_absent:
            severity = "info"
            why = f"{why} (known on one side only)"
        items.append(DiffItem(key=key, client=c, lab=l, why=why, severity=severity,
                              client_node=cn, lab_node=ln, source=source))

    if client_nodes != lab_nodes:
        add("nodes.count", client_nodes, lab_nodes, None, None)
    for cname, lname in pairs:
        cf = client.get(cname) if cname else None
        lf = lab.get(lname)
        if cf is not None or lf is not None:
            cp = _pairs(cf) if cf else {}
            lp = _pairs(lf) if lf else {}
            for key in sorted(set(cp) | set(lp)):
                c, l = _norm(key, cp.get(key)), _norm(key, lp.get(key))
                if c == l or (c is None and l is None):
                    continue
                if cf is None or lf is None:
                    continue  # one side not captured at all: said once in lab_capture
                add(key, c, l, cname, lname)
        ce = client_env.get(cname or "", {})
        le = lab_env.get(lname, {})
        for name in sorted(set(ce) | set(le)):
            if not name.startswith(ENV_PREFIXES):
                continue
            if ce.get(name) != le.get(name):
                # unset is a fact where that side's environment was captured (collect-env does
                # not list GLOO_*, UCX_* and TP_SOCKET_IFNAME, vllm-mechanics §12)
                hidden = name.startswith(("GLOO_", "UCX_", "TP_SOCKET_IFNAME"))
                known = (ce.get(name) is not None or (cf is not None and not hidden)) and \
                    (le.get(name) is not None or (lf is not None and not hidden))
                add(f"env.{name}", ce.get(name), le.get(name), cname, lname, known)
    items.sort(key=lambda d: (SEVERITY_ORDER[d.severity], d.key, d.client_node or ""))
    return items
