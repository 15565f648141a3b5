"""Cross-node environment diff: what differs between the nodes of one deployment.

Each node's `environment.json` is flattened into dotted keys (`versions.torch`,
`env.NCCL_SOCKET_IFNAME`, `nics.enp1s0f0np0.mtu`, `packages.nvidia-nccl-cu13`). Keys whose
values are not the same on every node are reported with each node's value (null where the
node lacks the key). Keys that identify a node (hostname, addresses, MACs, GPU UUIDs, capture
times) are left out; keys that legitimately differ per node but matter when wrong
(`VLLM_HOST_IP`, interface addresses) are reported with `expected: true` so that a reader can
still check them. Nothing here decides what is wrong: L-48 needs different interface names on
different nodes; the report explains, the diff only shows.
"""

from __future__ import annotations

import json
import re
from pathlib import Path

from sparktriage.errors import InputError
from sparktriage.store.documents import read_document_bounded
from sparktriage.bundle import layout

SCHEMA_VERSION = 1
IGNORED = re.compile(
    r"^(captured_at|updated_at|hostname|target_pid|notes|interpreter|nics\.[^.]+\.mac|"
    r"gpus\.\d+\.uuid|kernel\.version|memory_total|loaded_libraries\.[^.]+\.path)$")
PER_NODE = re.compile(r"^(env\.VLLM_HOST_IP|env\.(LOCAL_)?RANK|nics\.[^.]+\.ipv4|"
                      r"kernel\.cmdline)$")
CATEGORIES = (("versions.", "software"), ("packages.", "packages"), ("env.", "env"),
              ("kernel.", "kernel"), ("nics.", "network"), ("driver.", "driver"),
              ("gpus.", "gpu"), ("loaded_libraries.", "libraries"), ("sysctl.", "settings"),
              ("block.", "settings"), ("thp", "settings"), ("os", "os"), ("cpu.", "host"))


def flatten(doc: object, prefix: str = "") -> dict[str, object]:
    """{"a": {"b": 1}, "c": [1, 2]} -> {"a.b": 1, "c": "[1, 2]"} (lists of dicts by index)."""
    out: dict[str, object] = {}
    if isinstance(doc, dict):
        for key, value in doc.items():
            out.update(flatten(value, f"{prefix}{key}."))
    elif isinstance(doc, list) and doc and all(isinstance(v, dict) for v in doc):
        for index, value in enumerate(doc):
            out.update(flatten(value, f"{prefix}{index}."))
    elif isinstance(doc, list):
        out[prefix[:-1]] = json.dumps(doc, sort_keys=True)
    else:
        out[prefix[:-1]] = doc
    return out


def category(key: str) -> str:
    for prefix, name in CATEGORIES:
        if key.startswith(prefix):
            return name
    return "other"


def diff_environments(environments: dict[str, dict]) -> dict:
    """The `environment-diff.json` document for the given {node: environment} captures."""
    nodes = sorted(environments)
    flat = {node: {k: v for k, v in flatten(environments[node]).items() if not IGNORED.match(k)}
            for node in nodes}
    keys = sorted(set().union(*(set(f) for f in flat.values()))) if flat else []
    differences = []
    for key in keys:
        values = {node: flat[node].get(key) for node in nodes}
        if len({json.dumps(v, sort_keys=True) for v in values.values()}) > 1:
            differences.append({"key": key, "category": category(key), "values": values,
                                "expected": bool(PER_NODE.match(key))})
    return {
        "kind": "environment-diff",
        "nodes": nodes,
        "compared_keys": len(keys),
        "differences": differences,
        "flagged": sum(1 for d in differences if not d["expected"]),
        "note": "one node: nothing to compare" if len(nodes) < 2 else None,
    }


def read_environments(bundle_root: Path, nodes: list[str]) -> dict[str, dict]:
    """The environment captures present in a bundle being written (absent ones skipped)."""
    out = {}
    for node in nodes:
        path = bundle_root / layout.NODES_DIR / layout.check_name(node) / "environment.json"
        try:  # a node's capture: bounded, never through a link
            doc = read_document_bounded(path, follow_symlinks=False)
        except InputError:
            continue
        if not isinstance(doc, dict):
            continue
        doc.pop("schema_version", None)
        out[node] = doc
    return out
