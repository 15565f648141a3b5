"""Compare a planned deployment's per-node serve argv with what sparkrun rendered for the same
recipe (tests/reproduce/recipes_rendered/*.json, written by scripts/sparkrun_render.py).

Both sides are reduced to the serve command's options, flag by flag: each option with the values
that follow it, `--opt=value` read as `--opt value` and an alias (`-tp`) as its long name, as
vLLM's parser reads them; the model positional kept. Node addresses are written as the node's
index in its own list (sparkrun's --hosts, the plan's node order), so the plan's lab addresses
and sparkrun's documentation addresses compare. Under Ray sparkrun renders the serve command on
the head only (the workers run `ray start`): the head is compared and the planned workers must
run no server.
"""

from __future__ import annotations

import json
import re
import shlex
from pathlib import Path

from sparktriage.reproduce import flags as F

RENDERED = Path(__file__).parent / "recipes_rendered"


def fixture(name: str) -> dict:
    return json.loads((RENDERED / name).read_text())


def _serve_words(words: list[str]) -> list[str] | None:
    """The words after `serve` of a vLLM server (`vllm serve`, or a container whose entrypoint
    is vllm running `IMAGE serve`), else None."""
    vllm_entry = any(words[i] == "--entrypoint" and words[i + 1].rsplit("/", 1)[-1] == "vllm"
                     for i in range(len(words) - 1))
    for i, word in enumerate(words):
        if word == "serve" and i and (vllm_entry or words[i - 1].rsplit("/", 1)[-1] == "vllm"):
            return words[i + 1:]
    return None


def _shell_words(text: str) -> list[str]:
    """The serve command of a rendered recipe text (continuations joined; of several lines,
    the one running `vllm serve`; `;`-ended export lines before it are other commands)."""
    joined = text.replace("\\\n", " ")
    for line in joined.splitlines():
        for part in line.split(";"):
            words = shlex.split(part) if "serve" in part else []
            if _serve_words(words) is not None:
                return words
    raise AssertionError(f"no vllm serve in the rendered text: {text[:200]!r}")


def groups(options: list[str], hosts: list[str]) -> list[tuple[str, ...]]:
    """Options as (canonical flag, values...) groups, the positional model first; sorted, so
    order does not count but every flag and value does (vLLM's parser reads them so)."""
    out: list[tuple[str, ...]] = []
    current: list[str] | None = None
    positional: list[str] = []
    for word in options:
        if word.startswith("-") and not _number(word):
            name, eq, value = word.partition("=")
            if current:
                out.append(tuple(current))
            current = [F.canonical(name)] + ([value] if eq else [])
        elif current is None:
            positional.append(word)
        else:
            current.append(_address(word, hosts))
    if current:
        out.append(tuple(current))
    return [("<model>",) + tuple(positional)] + sorted(_as_vllm_reads(out))


# Spellings vLLM reads as its own default, so writing them or not is the same run: a size of 1,
# and the mp executor under --nnodes > 1 (vllm/config/parallel.py picks mp there itself).
_DEFAULTS = {("tensor-parallel-size", "1"), ("pipeline-parallel-size", "1"),
             ("data-parallel-size", "1")}


def _as_vllm_reads(found: list[tuple[str, ...]]) -> list[tuple[str, ...]]:
    """JSON values as the objects they are (vLLM parses them), dotted options folded into
    their option's JSON (`--compilation-config.mode 0` is `{"mode": 0}`), defaults dropped."""
    nnodes = next((int(g[1]) for g in found if g[0] == "nnodes" and len(g) > 1), 1)
    merged: dict[str, dict] = {}
    out: list[tuple[str, ...]] = []
    for group in found:
        name, values = group[0], list(group[1:])
        if name == "distributed-executor-backend" and values == ["mp"] and nnodes > 1:
            continue
        if len(group) == 2 and group in _DEFAULTS:
            continue
        head, dot, path = name.partition(".")
        if dot and len(values) == 1:
            node = merged.setdefault(head, {})
            keys = path.split(".")
            for key in keys[:-1]:
                node = node.setdefault(key, {})
            node[keys[-1]] = _json(values[0])
            continue
        parsed = _json(values[0]) if len(values) == 1 else None
        if isinstance(parsed, dict):
            merged.setdefault(name, {}).update(parsed)
            continue
        out.append(group)
    out += [(name, json.dumps(value, sort_keys=True)) for name, value in merged.items()]
    return out


def _json(text: str):
    try:
        return json.loads(text)
    except ValueError:
        return text


def _number(word: str) -> bool:
    try:
        float(word)
        return True
    except ValueError:
        return False


def _address(word: str, hosts: list[str]) -> str:
    return f"<node {hosts.index(word)}>" if word in hosts else word


def rendered_nodes(record: dict) -> tuple[str, list[list[tuple[str, ...]]]]:
    """(runtime, per-node option groups) from a fixture: the per-node commands of a native
    cluster, else the one command (Ray head, or a single node)."""
    calls = record["calls"]
    per_node = [c for c in calls if c["method"] == "generate_node_command"]
    runtime = calls[0]["runtime"]
    chosen = sorted(per_node, key=lambda c: c["node_rank"]) if per_node else calls[-1:]
    nodes = [groups(_serve_words(_shell_words(c["text"])), record["hosts"]) for c in chosen]
    return runtime, nodes


def planned_nodes(plan, lab) -> list[list[tuple[str, ...]] | None]:
    """Per planned node, the option groups of its server process (None: it runs no server)."""
    addresses = [next(n.host for n in lab.nodes if n.name == name)
                 for name in (p.name for p in plan.nodes)]
    names = [n.name for n in plan.nodes]
    per_node: dict[str, list] = {name: [] for name in names}
    for stage in plan.stages:
        for node, proc in stage.processes:
            per_node.setdefault(node, []).append(proc)
    out: list[list[tuple[str, ...]] | None] = []
    for name in names:
        found = None
        for proc in per_node[name]:
            words = _expand(list(proc.argv))
            serve = _serve_words(words)
            if serve is not None:
                found = groups(serve, addresses)
        out.append(found)
    return out


def _expand(argv: list[str]) -> list[str]:
    """A container's `sh -c SCRIPT` split as the shell would (the plan quotes every word)."""
    out: list[str] = []
    for arg in argv:
        if " " in arg and "serve" in arg:
            out += _shell_words(arg)
        else:
            out.append(arg)
    return out


def differences(record: dict, plan, lab) -> list[str]:
    """What differs, node by node; empty when the plan runs what sparkrun renders."""
    runtime, want = rendered_nodes(record)
    got = planned_nodes(plan, lab)
    problems: list[str] = []
    solo = all(c.get("is_cluster") is False for c in record["calls"])
    if solo:  # one node: sparkrun runs the command as it is, whatever the runtime
        pass
    elif runtime in ("vllm-ray", "eugr-vllm"):
        if plan.backend != "ray":
            problems.append(f"sparkrun runs Ray, the plan {plan.backend}")
        if any(g is not None for g in got[1:]):
            problems.append("Ray: a worker node runs a server")
        got = got[:1]
    elif len(want) > 1 and plan.backend != "mp":
        problems.append(f"sparkrun runs vLLM's native multi-node, the plan {plan.backend}")
    if len(got) != len(want):
        return problems + [f"{len(got)} node(s) planned, sparkrun renders {len(want)}"]
    for index, (mine, theirs) in enumerate(zip(got, want)):
        if mine is None:
            problems.append(f"node {index}: no server planned")
            continue
        extra = [g for g in mine if g not in theirs]
        missing = [g for g in theirs if g not in mine]
        if extra or missing:
            problems.append(f"node {index}: planned but not rendered {extra}; rendered but not "
                            f"planned {missing}")
    return problems


_COPY = re.compile(r"pre_exec\[(\d+)\] copy \S*/mods/(\S+) -> ")
_EXEC = re.compile(r"pre_exec\[(\d+)\] on \S+ \(timeout [^)]*\): (.*)", re.S)


def rendered_steps(record: dict) -> list[tuple[str, str]]:
    """(step name, text run) of sparkrun's pre-launch hooks on the head, in its order: a mod's
    copy and the run.sh after it are one `mod:NAME` step, every other entry `pre_exec:N`."""
    out: list[tuple[str, str]] = []
    mod = None
    for line in record["pre_exec"]:
        copy = _COPY.match(line)
        if copy:
            mod = copy.group(2)
            continue
        done = _EXEC.match(line)
        assert done, line
        out.append((f"mod:{mod}" if mod else f"pre_exec:{done.group(1)}", done.group(2)))
        mod = None
    return out


def planned_steps(dep) -> list[tuple[str, str]]:
    """(step name, text) of the deployment's steps that sparkrun runs as pre-launch hooks."""
    return [(s.name, s.run[0] if s.run else "") for s in dep.steps
            if s.kind in ("pre_exec", "mod")]
