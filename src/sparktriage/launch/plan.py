"""Launch plans: from a deployment, exactly what runs on which node, with which environment.

Pure functions (no I/O, no clock), golden-tested. A plan is a list of stages; each stage
starts processes on nodes and may wait for a log marker before the next stage starts:

- mp, one node:      serve:        head `vllm serve MODEL ...`
- mp, N nodes:       serve:        head `... --nnodes N --node-rank 0 --master-addr HEAD`,
                                   node i `... --node-rank i --headless` (vLLM 0.14+)
- ray:               ray-head:     head `ray start --head --block` (wait "Ray runtime started"),
                                   and the Ray watcher (`ray status`, Ray's logs: launch/ray.py)
                     ray-workers:  others `ray start --address HEAD:PORT --block` (same wait),
                                   and their watchers
                     serve:        head `vllm serve ... --distributed-executor-backend ray`
                                   (RAY_ADDRESS=HEAD:PORT: this cluster, never another)
                     teardown:     `ray stop --force` on every node after the processes end

With `engine.image`, every process runs in a container (`docker run --rm --name ...
--network host`), and teardown removes the containers by name. Every value is an argv element
or an environment value: no shell ever parses them.

The deployment's client steps (recipe `pre_exec` text: client code) that can run are run in
each server or Ray container before its program, by a fixed `bash -c` driver that takes each
step's text as an argument and runs it with `bash -c` in turn, as the recipe tool does; the
plan lists every step (`client_steps`) and launch starts nothing while any is listed
(docs/reproduce.md, "Client steps").
"""

from __future__ import annotations

import json
import posixpath
import re
import sys
from dataclasses import asdict, dataclass

from sparktriage.collect.plan import CollectPlan, default_plan
from sparktriage.config.client_code import ClientCode, client_code
from sparktriage.config.speculative import spec_dict
from sparktriage.config.deployment import Deployment
from sparktriage.config.lab import Lab, LabNode
from sparktriage.launch import ray
from sparktriage.launch.transport import Transport

DEFAULT_ENV = {"PYTHONUNBUFFERED": "1"}  # line records need lines as they are printed


@dataclass(frozen=True)
class ProcessSpec:
    name: str  # log name on the node: server, ray-head, ray-worker
    argv: tuple[str, ...]
    env: tuple[tuple[str, str], ...]  # set by the plan, on top of the node's own environment
    marker: str | None = None  # log marker that tells this process is up (stage gate)

    def to_agent(self) -> dict:
        return {"name": self.name, "argv": list(self.argv), "env": dict(self.env)}


@dataclass(frozen=True)
class NodePlan:
    name: str
    host: str
    rank: int
    role: str  # head / worker
    transport: Transport
    python: str | None  # the agent's interpreter on the node; None: sparktriage's own (local)
    collect: CollectPlan


@dataclass(frozen=True)
class Stage:
    name: str
    processes: tuple[tuple[str, ProcessSpec], ...]  # (node name, process)


@dataclass(frozen=True)
class LaunchPlan:
    deployment: str
    backend: str
    nodes: tuple[NodePlan, ...]
    stages: tuple[Stage, ...]
    endpoint: str
    ready: str  # api / log
    startup_timeout_s: float
    stage_timeout_s: float
    grace_s: float
    link_timeout_s: float
    teardown: tuple[tuple[str, tuple[str, ...]], ...]  # (node, argv) run after the processes end
    observe_failure_s: float = 0.0  # after a failure before ready: keep collecting, then stop
    client_code: tuple[ClientCode, ...] = ()  # what runs by the client's choice: to accept
    client_steps: tuple[dict, ...] = ()  # the deployment's steps: name, kind, runnable, why

    def node(self, name: str) -> NodePlan:
        return next(n for n in self.nodes if n.name == name)

    @property
    def head(self) -> NodePlan:
        return self.nodes[0]

    def to_json(self) -> dict:
        """The plan as data (what --dry-run --json prints; what golden tests pin)."""
        doc = asdict(self)
        if not doc["client_steps"]:  # a deployment with no client steps: the plan as before
            del doc["client_steps"]
        for node in doc["nodes"]:
            transport = next(n.transport for n in self.nodes if n.name == node["name"])
            node["transport"] = {"kind": "local" if transport.local else "ssh",
                                 **{k: v for k, v in asdict(transport).items() if v is not None}}
        for stage in doc["stages"]:
            stage["processes"] = [{"node": node, **proc, "argv": list(proc["argv"]),
                                   "env": dict(proc["env"])} for node, proc in stage["processes"]]
        doc["teardown"] = [{"node": n, "argv": list(a)} for n, a in self.teardown]
        doc["client_code"] = [c.model_dump() for c in self.client_code]
        return doc


def _flag_args(flags: dict) -> list[str]:
    out = []
    for name, value in flags.items():
        if value is True:
            out.append(f"--{name}")
        elif value is not None and value is not False:
            out += [f"--{name}", str(value)]
    return out


def serve_argv(dep: Deployment) -> list[str]:
    """`vllm serve` argv shared by every node (multi-node flags are added per node)."""
    m, s, p, load = dep.model, dep.serve, dep.parallelism, dep.load
    argv = list(dep.engine.vllm) + ["serve", m.path, "--host", s.host, "--port", str(s.port)]
    if m.name:
        argv += ["--served-model-name", m.name]
    for flag, value in (("--tokenizer", m.tokenizer), ("--quantization", m.quantization),
                        ("--tensor-parallel-size", p.tp if p.tp > 1 else None),
                        ("--pipeline-parallel-size", p.pp if p.pp > 1 else None),
                        ("--data-parallel-size", p.dp if p.dp > 1 else None),
                        ("--max-model-len", s.max_model_len),
                        ("--gpu-memory-utilization", s.gpu_memory_utilization),
                        ("--dtype", s.dtype), ("--kv-cache-dtype", s.kv_cache_dtype),
                        ("--max-num-seqs", s.max_num_seqs),
                        ("--max-num-batched-tokens", s.max_num_batched_tokens),
                        ("--load-format", load.format),
                        ("--safetensors-load-strategy", load.strategy),
                        ("--download-dir", load.download_dir)):
        if value is not None:
            argv += [flag, str(value)]
    if load.extra_config is not None:
        argv += ["--model-loader-extra-config", json.dumps(load.extra_config, separators=(",", ":"))]
    if p.ep:
        argv.append("--enable-expert-parallel")
    if m.trust_remote_code:
        argv.append("--trust-remote-code")
    if s.enforce_eager:
        argv.append("--enforce-eager")
    if dep.speculative is not None:
        argv += ["--speculative-config",
                 json.dumps(spec_dict(dep.speculative), separators=(",", ":"))]
    return argv + _flag_args(s.flags) + list(s.extra_args)


def _nodes(dep: Deployment) -> list[LabNode]:
    lab = dep.lab
    assert isinstance(lab, Lab), "load_deployment resolves the lab"
    chosen = [lab.node(n) for n in dep.nodes] if dep.nodes else list(lab.nodes)
    heads = [n for n in chosen if n.role == "head"]
    head = heads[0] if heads else chosen[0]
    return [head] + [n for n in chosen if n is not head]


def _env(dep: Deployment, node: LabNode, extra: dict | None = None) -> dict[str, str]:
    env = dict(DEFAULT_ENV)
    env.update(dep.env)
    env.update(node.env)
    env.update(dep.node_env.get(node.name, {}))
    env.update(extra or {})
    return env


# Runs N step texts (its first argument, then the texts), each with `bash -c`, stopping at the
# first failure, then execs the rest of its arguments: the step texts never become part of
# this script, so nothing of the deployment is parsed by it.
STEP_DRIVER = ('n=$1; shift; while [ "$n" -gt 0 ]; do bash -c "$1" || exit $?; shift; '
               'n=$((n-1)); done; exec "$@"')
STEPPED = ("server", "ray-head", "ray-worker")


def _container(dep: Deployment, node: LabNode, name: str, argv: list[str],
               env: dict[str, str]) -> tuple[tuple[str, ...], tuple[tuple[str, str], ...], str]:
    engine = dep.engine
    cname = re.sub(r"[^A-Za-z0-9_.-]+", "-", f"sparktriage-{dep.name}-{node.name}-{name}")[:120]
    run = [engine.runtime, "run", "--rm", "--name", cname, "--network", "host", "--ipc", "host"]
    if (node.gpu or "").lower() not in ("none", "cpu"):
        run += ["--gpus", "all"]
    texts = [t for step in dep.steps if step.runnable and step.when == "before-serve"
             for t in step.run] if name in STEPPED else []
    args = list(engine.container_args)
    if texts:
        entry = [args[i + 1] for i in range(len(args) - 1) if args[i] == "--entrypoint"]
        args = [a for i, a in enumerate(args) if a != "--entrypoint"
                and (i == 0 or args[i - 1] != "--entrypoint")] + ["--entrypoint", "bash"]
        argv = ["-c", STEP_DRIVER, "steps", str(len(texts))] + texts + entry[-1:] + argv
    run += args
    for key, value in env.items():
        run += ["-e", f"{key}={value}"]
    return tuple(run + [engine.image] + argv), (), cname


def refuse_client_steps(plan: LaunchPlan) -> None:
    """No launch starts with a client step it cannot run (a mod whose folder the input lacks,
    an image the client's tool builds): whatever was accepted, the launch would not be the
    client's. Acceptance itself is checked where a command starts (launch/acceptance.py)."""
    blocked = [s for s in plan.client_steps if not s["runnable"]]
    if blocked:
        from sparktriage.errors import UsageError
        raise UsageError(f"deployment {plan.deployment}: " + "; ".join(
            f"client step {s['name']} cannot run: {s['why']}" for s in blocked))


def build_plan(dep: Deployment) -> LaunchPlan:
    """The launch plan of a loaded deployment (see the module doc for the shapes)."""
    lab = dep.lab
    assert isinstance(lab, Lab)
    nodes = _nodes(dep)
    head = nodes[0]
    multi = len(nodes) > 1
    engine = dep.engine
    node_plans = []
    for rank, node in enumerate(nodes):
        transport = Transport(destination=node.ssh, ssh_config=lab.ssh_config, port=node.port,
                              identity_file=node.identity_file, proxy_jump=node.proxy_jump)
        python = node.python if node.ssh else None
        collect = default_plan(node.name, interval_s=dep.collect.interval_s,
                               stacks_interval_s=dep.collect.stacks_interval_s, pyspy=node.pyspy,
                               disable=tuple(dep.collect.disable))
        node_plans.append(NodePlan(node.name, node.host, rank, "head" if rank == 0 else "worker",
                                   transport, python, collect))

    teardown: list[tuple[str, tuple[str, ...]]] = []

    def process(node: LabNode, name: str, argv: list[str], marker: str | None = None,
                extra_env: dict | None = None) -> ProcessSpec:
        env = _env(dep, node, extra_env)
        if engine.image:
            full, penv, cname = _container(dep, node, name, argv, env)
            teardown.append((node.name, (engine.runtime, "rm", "-f", cname)))
            return ProcessSpec(name, full, penv, marker)
        return ProcessSpec(name, tuple(argv), tuple(sorted(env.items())), marker)

    base = serve_argv(dep)
    stages: list[Stage] = []
    if engine.backend == "ray":
        address = f"{head.host}:{engine.ray_port}"
        ray_env = {"RAY_USAGE_STATS_ENABLED": "0"}

        def ray_stage(name: str, marker_nodes: list[LabNode]) -> Stage:
            procs = []
            for n in marker_nodes:
                procs.append((n.name, process(n, name if n is head else "ray-worker",
                                              ray.start_argv(engine, n, head), "ray-started",
                                              ray_env)))
                # the Ray CLI's own interpreter where its path is known (the node's environment
                # capture then reads that venv's packages), else the agent's
                python = (posixpath.join(posixpath.dirname(engine.ray), "python")
                          if posixpath.isabs(engine.ray) else n.python if n.ssh else sys.executable)
                procs.append((n.name, process(n, "ray-watch",
                                              ray.watch_argv(python, engine, n, head))))
            return Stage(name, tuple(procs))

        stages.append(ray_stage("ray-head", [head]))
        if multi:
            stages.append(ray_stage("ray-workers", nodes[1:]))
        stages.append(Stage("serve", ((head.name, process(
            head, "server", base + ["--distributed-executor-backend", "ray"],
            extra_env={**ray_env, "RAY_ADDRESS": address})),)))
        teardown += [(n.name, (engine.ray, "stop", "--force")) for n in nodes]
    elif multi:
        common = ["--distributed-executor-backend", "mp", "--nnodes", str(len(nodes)),
                  "--master-addr", head.host, "--master-port", str(engine.master_port)]
        procs = []
        for rank, node in enumerate(nodes):
            argv = base + common + ["--node-rank", str(rank)] + (["--headless"] if rank else [])
            procs.append((node.name, process(node, "server", argv)))
        stages.append(Stage("serve", tuple(procs)))
    else:
        stages.append(Stage("serve", ((head.name, process(head, "server", base)),)))

    api_host = head.host if head.host not in ("0.0.0.0", "::") else "127.0.0.1"
    if ":" in api_host and not api_host.startswith("["):
        api_host = f"[{api_host}]"
    t = dep.timeouts
    return LaunchPlan(
        deployment=dep.name, backend=engine.backend, nodes=tuple(node_plans),
        stages=tuple(stages), endpoint=f"http://{api_host}:{dep.serve.port}", ready=dep.ready,
        startup_timeout_s=t.startup_s, stage_timeout_s=t.stage_s, grace_s=t.teardown_grace_s,
        link_timeout_s=t.link_s, teardown=tuple(teardown), observe_failure_s=t.observe_failure_s,
        client_code=tuple(client_code(dep)),
        client_steps=tuple({"name": s.name, "kind": s.kind, "runnable": s.runnable,
                            "why": s.why} for s in dep.steps),
    )
