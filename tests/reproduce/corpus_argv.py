"""Argv-level corpus checks: what each planned node would run, read back from `launch --dry-run`.

The corpus compares the written deployment and the plan's node count; this reads the argv the
plan gives each node and reduces it to the facts a multi-node launch hangs on, so that a plan
whose nodes both claim data-parallel rank 0 (or lose --headless, the rendezvous address, the
node rank or the speculative config) fails. `node_facts` reads one node's processes; vLLM's own
inference is followed where the argv leaves a value to it (the data-parallel rank comes from
--data-parallel-start-rank, else from --node-rank under --nnodes, as arg_utils does).
`check_argv` compares the facts with an expected.yaml's `argv_nodes` and holds the invariants
every multi-node plan must keep (distinct data-parallel ranks, one API server).
"""

from __future__ import annotations

import json
import shlex

_VALUED = {"--nnodes": "nnodes", "-n": "nnodes", "--node-rank": "node_rank", "-r": "node_rank",
           "--data-parallel-start-rank": "dp_start_rank", "--data-parallel-rank": "dp_rank_given",
           "-dpr": "dp_rank_given", "--data-parallel-size": "dp", "-dp": "dp",
           "--data-parallel-size-local": "dp_local", "-dpl": "dp_local",
           "--data-parallel-address": "dp_address", "-dpa": "dp_address",
           "--tensor-parallel-size": "tp", "-tp": "tp", "--pipeline-parallel-size": "pp",
           "-pp": "pp", "--speculative-config": "speculative_config"}


def _tokens(argv: tuple[str, ...] | list[str]) -> list[str]:
    """The argv with any `sh -c` / `bash -c` script split as the shell would (quotes only)."""
    out: list[str] = []
    for arg in argv:
        if "serve" in arg and " " in arg:
            try:
                out += shlex.split(arg)
                continue
            except ValueError:
                pass
        out.append(arg)
    return out


def _serve_options(tokens: list[str]) -> dict | None:
    """The options after `serve` (or the OpenAI api_server module), None if it is not a server."""
    start = None
    for i, tok in enumerate(tokens):
        if tok == "serve" or tok.endswith("vllm.entrypoints.openai.api_server"):
            start = i + 1
            break
    if start is None:
        return None
    facts: dict = {"headless": False}
    i = start
    while i < len(tokens):
        tok = tokens[i]
        name, eq, value = tok.partition("=")
        if tok == "--headless":
            facts["headless"] = True
        elif name in _VALUED:
            if not eq:
                i += 1
                value = tokens[i] if i < len(tokens) else ""
            facts[_VALUED[name]] = value
        i += 1
    return facts


def _rank(facts: dict, key: str) -> int | None:
    try:
        return int(facts[key]) if key in facts else None
    except ValueError:
        return None


def _data_parallel_rank(facts: dict) -> int:
    """vLLM's rank for this node's first engine: given, start rank, else from the node rank."""
    for key in ("dp_rank_given", "dp_start_rank"):
        got = _rank(facts, key)
        if got is not None:
            return got
    nnodes, node_rank = _rank(facts, "nnodes") or 1, _rank(facts, "node_rank") or 0
    if nnodes <= 1:
        return 0
    within = (_rank(facts, "tp") or 1) * (_rank(facts, "pp") or 1)
    world = (_rank(facts, "dp") or 1) * within
    return (node_rank * (world // nnodes)) // within


def node_facts(processes, addresses: dict[str, str]) -> dict:
    """One node's facts: `role` (server, ray-head, ray-worker, idle) and, for a server, its
    rank options; addresses are written as the node name they belong to."""
    by_address = {addr: name for name, addr in addresses.items()}
    facts: dict = {"role": "idle"}
    for proc in processes:
        tokens = _tokens(proc.argv)
        serve = _serve_options(tokens)
        if serve is not None:
            facts.update(role="server", headless=serve["headless"],
                         dp_rank=_data_parallel_rank(serve), dp=_rank(serve, "dp") or 1)
            for key in ("nnodes", "node_rank"):
                if key in serve:
                    facts[key] = _rank(serve, key)
            if "dp_address" in serve:
                facts["dp_address"] = by_address.get(serve["dp_address"], serve["dp_address"])
            if "speculative_config" in serve:
                try:
                    spec = json.loads(serve["speculative_config"])
                except ValueError:
                    spec = {"unparsed": serve["speculative_config"]}
                facts["speculative"] = spec
            return facts
        if "ray" in tokens and "start" in tokens:
            if "--head" in tokens:
                facts["role"] = "ray-head"
            else:
                address = next((t.partition("=")[2] or tokens[i + 1]
                                for i, t in enumerate(tokens)
                                if t.startswith("--address") and i + 1 < len(tokens)), "")
                host = address.rsplit(":", 1)[0]
                facts.update(role="ray-worker", ray_address=by_address.get(host, host))
    return facts


def plan_facts(plan, lab) -> list[dict]:
    """Facts per planned node, in the plan's node order, each with its node `name`."""
    addresses = {n.name: n.host for n in lab.nodes}
    names = [n.name for n in plan.nodes]
    per_node: dict[str, list] = {name: [] for name in names}
    for stage in plan.stages:
        for node, proc in stage.processes:
            per_node.setdefault(node, []).append(proc)
    out = []
    for name in names:
        facts = node_facts(per_node[name], addresses)
        out.append({"name": name, **facts})
    return out


def _invariants(facts: list[dict], backend: str) -> list[str]:
    problems = []
    servers = [f for f in facts if f["role"] == "server"]
    if len(facts) > 1 and backend != "ray":
        ranks = [f["dp_rank"] for f in servers]
        wanted = min(max(f["dp"] for f in servers), len(servers)) if servers else 0
        if len(set(ranks)) != wanted:
            problems.append(f"argv: data-parallel ranks {ranks} on {[f['name'] for f in servers]}"
                            " (two engines claim the same rank)")
        apis = [f["name"] for f in servers if not f["headless"]]
        if len(apis) != 1:
            problems.append(f"argv: {len(apis)} API server(s) planned ({apis}); one node serves "
                            "the API, the others run --headless")
    if backend == "ray" and len(facts) > 1:
        if [f["name"] for f in servers] != [facts[0]["name"]]:
            problems.append(f"argv: under Ray only the head runs the server, planned on "
                            f"{[f['name'] for f in servers]}")
    return problems


def check_argv(want: dict, facts: list[dict], backend: str) -> list[str]:
    """The plan's argv facts against `argv_nodes` (each listed key must match exactly; keys a
    node's entry leaves out are not asserted), plus the multi-node invariants."""
    problems = _invariants(facts, backend)
    expected = want.get("argv_nodes")
    if expected is None:
        return problems
    if len(expected) != len(facts):
        return problems + [f"argv: {len(facts)} node(s) planned, argv_nodes lists "
                           f"{len(expected)}"]
    for index, (exp, got) in enumerate(zip(expected, facts)):
        for key, value in exp.items():
            have = got.get(key, "absent")
            if isinstance(value, dict) and isinstance(have, dict):
                have = {k: have.get(k, "absent") for k in value}  # the keys listed
            if have != value:
                problems.append(f"argv: node {index} ({got['name']}) {key} {have!r}, "
                                f"expected {value!r}")
    return problems
