"""KV connectors the target vLLM release does not ship: each gets an `unknowns` row.

A `--kv-transfer-config` names its connector (`kv_connector`); vLLM builds it through its
connector factory, which knows the names registered in `vllm/distributed/kv_transfer/
kv_connector/factory.py` and, beside them, a class loaded from `kv_connector_module_path`. The
list is `data/vllm_kv_connectors.txt`, generated from vLLM 0.32's factory by
`scripts/vllm_kv_connectors.py`. A name outside it with no module path (PyNcclConnector and
P2pNcclConnector of earlier releases, a typo) makes the server fail at start on the lab; the
setting stays as the client wrote it, and the row says what to change. A MultiConnector's
children (`kv_connector_extra_config.connectors`) are checked the same way.
"""

from __future__ import annotations

import json
from functools import lru_cache
from importlib import resources

from sparktriage.reproduce.model import Imported, Unknown

MAX_CHILDREN = 32


@lru_cache(maxsize=1)
def shipped() -> tuple[str, frozenset[str]]:
    """(the release named in the list's header, the connector names)."""
    text = resources.files("sparktriage.reproduce").joinpath(
        "data/vllm_kv_connectors.txt").read_text()
    header = text.splitlines()[0] if text.startswith("#") else ""
    release = header.split(" registers")[0].removeprefix("# KV connectors ").strip() or "vLLM"
    return release, frozenset(line.strip() for line in text.splitlines()
                              if line.strip() and not line.startswith("#"))


def _config(part: Imported) -> dict:
    value = ((part.deployment.get("serve") or {}).get("flags") or {}).get("kv-transfer-config")
    if isinstance(value, str):
        try:
            value = json.loads(value)
        except ValueError:
            return {}
    return value if isinstance(value, dict) else {}


def _connectors(config: dict) -> list[dict]:
    """The config and, for a MultiConnector, each child config."""
    out = [config]
    extra = config.get("kv_connector_extra_config")
    children = extra.get("connectors") if isinstance(extra, dict) else None
    if isinstance(children, list):
        out += [c for c in children[:MAX_CHILDREN] if isinstance(c, dict)]
    return out


def unshipped_connectors(imported: list[Imported]) -> list[Unknown]:
    """One row per KV connector of a reproduced server that the release does not register."""
    release, names = shipped()
    rows = []
    for part in imported:
        for config in _connectors(_config(part)):
            name = config.get("kv_connector")
            if not isinstance(name, str) or name in names or config.get(
                    "kv_connector_module_path"):
                continue
            where = f"line {part.line}: " if part.line else ""
            rows.append(Unknown(
                input=part.input.path, text=f"--kv-transfer-config kv_connector {name}",
                note=f"{where}KV connector {name} is not registered in {release}'s connector "
                     "factory: the server fails at start with this config; kept as written: "
                     f"choose one the release ships ({', '.join(sorted(names))}) or give "
                     "kv_connector_module_path"))
    return rows
