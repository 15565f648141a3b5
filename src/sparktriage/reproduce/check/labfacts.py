"""The lab's side of the diff: facts from an environment capture (live or `--lab-capture`).

A capture is the environment collector's `environment.json` document (docs/collectors.md), a
JSON object mapping lab node names to such documents, or a `vllm collect-env` output or env
dump taken on the lab (then it stands for every lab node).
"""

from __future__ import annotations

import json
from pathlib import Path

from sparktriage.errors import InputError
from sparktriage.reproduce.read.detect import read_input
from sparktriage.reproduce.importers import collect_env, envdump
from sparktriage.reproduce.importers.common import Ctx
from sparktriage.reproduce.model import Facts, InputRef
from sparktriage.reproduce.secrets import Placeholders


def from_environment_doc(doc: dict, source: str, node: str | None,
                         secrets: Placeholders) -> Facts:
    versions = dict(doc.get("versions") or {})
    versions.pop("python", None)
    kernel = doc.get("kernel") or {}
    driver = doc.get("driver") or {}
    gpus = doc.get("gpus") or []
    names = sorted({str(g.get("name")) for g in gpus if isinstance(g, dict) and g.get("name")})
    env = {k: secrets.env_value(k, str(v), "lab capture") for k, v in
           sorted((doc.get("env") or {}).items())}
    return Facts(
        source=source, node=node,
        versions={k: (str(v) if v is not None else None) for k, v in versions.items()},
        system={"os": doc.get("os"), "kernel": kernel.get("release"),
                "arch": kernel.get("machine")},
        gpu={"model": ", ".join(names) or ("none" if "gpus" in doc else None),
             "count": str(len(gpus)) if "gpus" in doc else None,
             "driver": driver.get("driver_version") or driver.get("nvidia"),
             "interconnect": None},
        build={}, env=env, interfaces=sorted(doc.get("nics") or {}))


def read_capture(path: Path, lab_nodes: list[str], secrets: Placeholders) -> dict[str, Facts]:
    """{lab node: facts} from a saved capture file."""
    text = read_input(path)
    source = str(path)
    try:
        data = json.loads(text)
    except ValueError:
        data = None
    if isinstance(data, dict):
        if "versions" in data or "kernel" in data or "env" in data:
            facts = from_environment_doc(data, source, None, secrets)
            return {n: facts.model_copy(update={"node": n}) for n in lab_nodes}
        out = {}
        for node, doc in data.items():
            if isinstance(doc, dict):
                out[node] = from_environment_doc(doc, source, node, secrets)
        if not out:
            raise InputError(f"{path}: not an environment capture")
        return out
    ctx = Ctx(InputRef(path=source, kind="collect-env"), secrets)
    if collect_env.looks_like(text):
        facts = collect_env.parse(text, ctx)
    elif envdump.looks_like(text):
        facts = envdump.parse(text, ctx)
    else:
        raise InputError(f"{path}: not an environment capture (environment.json, collect-env "
                         "output or an env dump)")
    return {n: facts.model_copy(update={"node": n}) for n in lab_nodes}
