"""What a client's inputs ask to run on the lab, and where: said, never followed.

- `ignored_labs`: a `lab:` in a client's deployment YAML is never read (where the deployment
  runs and how it is reached come from `--lab` only); one unknowns row per such input.
- `recorded_client_code`: the client code the written deployment records in `client_code:`
  because no other field shows it (recipe mods; a vLLM or Ray program at a path the client
  named). The rest follows from the deployment's fields (config/client_code.py).
- `loader_rows`: one unknowns row per loader-steering variable the client's environment keeps.

docs/security.md has the rule; `launch`, `session` and `sweep` refuse client code until it is
accepted by name.
"""

from __future__ import annotations


from sparktriage.config.client_code import LOADER_ENV
from sparktriage.config.client_code import item as code_item
from sparktriage.reproduce.model import ClientNode, Imported, Unknown


def ignored_labs(imported: list[Imported]) -> list[Unknown]:
    """One row per client input that brings its own `lab:`: where the client's deployment
    would run, how it is reached (hosts, ports, ssh_config, keys) is the consultant's choice,
    so it is never used, and it is said."""
    rows = []
    for part in imported:
        if part.client_lab is None:
            continue
        rows.append(Unknown(input=part.input.path, text=part.client_lab[:200], note=(
            "a lab named by a client file is ignored: which machines run the deployment and "
            "how they are reached (hosts, ports, ssh_config, keys) come from --lab only; "
            "without --lab the plan and the live capture are of this machine")))
    return rows


def recorded_client_code(dep: dict) -> list[dict]:
    """The client code no other field of the written deployment shows: what the inputs
    recorded (recipe mods), and a vLLM or Ray program at a path the client named (the lab's
    own is the bare name, looked up on the node's PATH)."""
    items = [dict(i) for i in dep.get("client_code") or [] if isinstance(i, dict)]
    engine = dep.get("engine") or {}
    vllm = engine.get("vllm")
    words = vllm if isinstance(vllm, list) else [vllm] if vllm else []
    if words and isinstance(words[0], str) and words[0] != "vllm":
        items.append(code_item("program", words[0], f"the client's vLLM program {words[0]} "
                               "runs as the server").model_dump())
    ray = engine.get("ray")
    if isinstance(ray, str) and ray != "ray":
        items.append(code_item("program", ray, f"the client's Ray program {ray} runs on every "
                               "node").model_dump())
    named: set = set()
    return [i for i in items if not (i.get("name") in named or named.add(i.get("name")))]


def loader_rows(client_dep: dict, client_nodes: list[ClientNode],
                 imported: list[Imported]) -> list[Unknown]:
    """One row per variable of the client's environment that chooses which code runs: it is
    kept in the deployment (the client's server runs with it) and is client code to accept."""
    envs = [client_dep.get("env") or {}] + [n.env for n in client_nodes]
    rows = []
    for name in LOADER_ENV:
        if any(name in env for env in envs):
            source = next((p.input.path for p in imported
                           if name in (p.deployment.get("env") or {})
                           or any(name in n.env for n in p.nodes)), "env")
            rows.append(Unknown(input=source, text=name, note=(
                f"runs client code: {name} chooses {LOADER_ENV[name]}; kept in env, never "
                f"applied to the capture; launch and session refuse until env:{name} is "
                "accepted (docs/security.md)")))
    return rows
