"""`VLLM_*` variables vLLM does not read: each gets an `unknowns` row (kept in env, flagged).

The list is `data/vllm_envs.txt`: the keys of `environment_variables` in vLLM 0.32's
`vllm/envs.py` (regenerate from an installed vllm). A name outside it is read by no part of
that release that goes through `vllm.envs` (a typo, a variable of an older release such as
`VLLM_USE_FLASHINFER_MOE_FP4`, or a made-up one); it stays in the deployment's env, since an
older or patched build may read it, and the row says so.
"""

from __future__ import annotations

from functools import lru_cache
from importlib import resources

from sparktriage.reproduce.model import Imported, Unknown


@lru_cache(maxsize=1)
def known_vllm_env() -> frozenset[str]:
    text = resources.files("sparktriage.reproduce").joinpath("data/vllm_envs.txt").read_text()
    return frozenset(line.strip() for line in text.splitlines()
                     if line.strip() and not line.startswith("#"))


def unknown_vllm_env(envs: dict[str, dict[str, str]], imported: list[Imported]) -> list[Unknown]:
    """One row per `VLLM_*` name (over every node's env) vLLM 0.32 does not list, at the input
    that set it."""
    seen: dict[str, list[str]] = {}
    for node, env in envs.items():
        for name in env:
            if name.startswith("VLLM_") and name not in known_vllm_env():
                seen.setdefault(name, []).append(node)
    return [Unknown(input=_source(name, imported), text=name,
                    note=f"env of {', '.join(nodes)}: vLLM 0.32 does not read {name} (not in "
                         "vllm/envs.py); an older or patched build may; kept in env")
            for name, nodes in sorted(seen.items())]


def _source(name: str, imported: list[Imported]) -> str:
    for part in imported:
        if name in (part.deployment.get("env") or {}) or any(name in n.env for n in part.nodes):
            return part.input.path
    return "env"
