"""Several independent vLLM servers in one input: never merged into one run.

A prefill server and a decode server (each with its own `--kv-transfer-config`), two compose
services, two Kubernetes workloads, two `vllm serve ... &` on different ports: each is a server
group of its own, not a node of one multi-node run. A deployment runs one server group, so the
first is reproduced and each other one is an unknowns row that names it (its port, its KV role
and connector, its line) and says why it is not in the deployment; each other one is also read
alone (cluster.alone), for reproduce/place/beside.py to write beside the first where the lab has room.
Which servers are independent rather than alternatives of one another (branches of an `if`, a
command run after another stopped) is decided here for every importer.
"""

from __future__ import annotations

import json

from sparktriage.reproduce.importers.common import Ctx


def _kv(serve) -> dict:
    return _kv_of(serve.deployment)


def _kv_of(deployment: dict) -> dict:
    config = (deployment.get("serve") or {}).get("flags", {}).get("kv-transfer-config")
    if isinstance(config, str):  # serve_args keeps a JSON option as its compact JSON text
        try:
            config = json.loads(config)
        except ValueError:
            return {}
    return config if isinstance(config, dict) else {}


def describe(serve) -> str:
    """What tells the server apart: its port, its KV role and connector."""
    return describe_deployment(serve.deployment)


def describe_deployment(deployment: dict) -> str:
    """`describe` of a server's deployment data."""
    parts = []
    port = (deployment.get("serve") or {}).get("port")
    parts.append(f"port {port}" if port is not None else "port 8000 (vLLM's default)")
    kv = _kv_of(deployment)
    if kv.get("kv_role"):
        parts.append(str(kv["kv_role"]))
    if kv.get("kv_connector"):
        parts.append(f"KV connector {kv['kv_connector']}")
    return ", ".join(parts)


def independent(first, other, both_in_background: bool = False) -> bool:
    """Two serve commands that run side by side: both started in the background, on other
    ports, or joined by a KV transfer (a prefill/decode pair)."""
    if both_in_background or _kv(first) or _kv(other):
        return True
    ports = [(s.deployment.get("serve") or {}).get("port") or 8000 for s in (first, other)]
    return ports[0] != ports[1]


def flag_other(ctx: Ctx, first, first_name: str, other, other_name: str) -> None:
    """The unknowns row of an independent server that is not reproduced."""
    pair = " (a prefill/decode pair: the KV cache goes from one to the other)" \
        if _kv(first) and _kv(other) else ""
    who = first_name or "the first"
    ctx.flag_unknown(f"independent vLLM server: {other_name or 'vllm serve'} ({describe(other)})",
                     f"line {other.line}: an independent vLLM server beside {who} (line "
                     f"{first.line}, {describe(first)}){pair}; each is its own server group and "
                     "they are never merged: deployment.yaml runs the first; this one is written "
                     "as a deployment of its own on the lab nodes beside it when the lab has "
                     "them (the plan says where), else give its command alone")
