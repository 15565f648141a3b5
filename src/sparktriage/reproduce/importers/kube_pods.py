"""The pods a Kubernetes workload runs, and what one of its containers runs, by Kubernetes' rules.

A workload is read down to its pod groups: each a pod template with how many pods run it and the
role they play (a Deployment's or StatefulSet's replicas, a Job's parallelism, a LeaderWorkerSet
group's leader and its `size - 1` workers, a KubeRay head group and each worker group's
replicas (a RayJob's `entrypoint` run on its head), a KServe InferenceService's predictor
containers). A container runs `command` (the
image's ENTRYPOINT replaced) followed by `args` (its CMD replaced); in both, `$(VAR)` is the value of the container's variable VAR (those of `env`,
and those the controller sets, such as a LeaderWorkerSet's LWS_GROUP_SIZE, LWS_LEADER_ADDRESS
and LWS_WORKER_INDEX), `$$` is a `$`, and a reference to a variable not defined is left as
written. An `env` entry's `valueFrom` is a value the cluster gives at run time: a Secret's key
is a placeholder to supply, a field the controller knows is filled in, others are placeholders
with an unknowns row. Nothing is contacted and nothing is run.
"""

from __future__ import annotations

import re
from dataclasses import dataclass, field

from sparktriage.reproduce.importers.common import Ctx
from sparktriage.reproduce.importers.kube_docs import Doc
from sparktriage.reproduce.secrets import placeholder

MAX_PODS = 256  # pods of one group read (a group holds this many nodes at most)
_REF = re.compile(r"\$\$|\$\(([A-Za-z_][A-Za-z0-9_]*)\)")
GPU_KEYS = ("nvidia.com/gpu", "amd.com/gpu")


@dataclass
class PodGroup:
    """Pods that run one template: `count` of them, in `role` (server, leader, worker, head)."""

    workload: str  # "Deployment mistral-7b"
    kind: str  # the workload's kind
    role: str
    count: int
    spec: dict
    path: tuple  # key path of the pod spec in its document
    controller_env: dict[str, str] = field(default_factory=dict)
    indexed: str | None = None  # a variable that holds each pod's index (LWS_WORKER_INDEX)
    first_index: int = 0
    # what a RayJob submits to its head (`spec.entrypoint`, a shell command) and its line
    submitted: tuple[str, int] | None = None


def _count(value, default: int = 1) -> int:
    try:
        return max(0, min(int(value), MAX_PODS)) if value is not None else default
    except (TypeError, ValueError):
        return default


def _template(spec, *keys) -> tuple[dict, tuple]:
    node, path = spec, ()
    for key in keys:
        node = node.get(key) if isinstance(node, dict) else None
        path += (key,)
    return (node if isinstance(node, dict) else {}), path


def pod_groups(doc: Doc) -> list[PodGroup]:
    """The pod groups of one document (none for a kind that runs no pods of its own)."""
    data = doc.data if isinstance(doc.data, dict) else {}
    kind = str(data.get("kind") or "")
    name = str((data.get("metadata") or {}).get("name") or "") if isinstance(
        data.get("metadata"), dict) else ""
    spec = data.get("spec") if isinstance(data.get("spec"), dict) else {}
    title = f"{kind} {name}".strip()
    if kind == "Pod":
        return [PodGroup(title, kind, "server", 1, spec, ("spec",))]
    if kind in ("Deployment", "StatefulSet", "ReplicaSet", "ReplicationController", "DaemonSet"):
        pod, path = _template(spec, "template", "spec")
        return [PodGroup(title, kind, "server", _count(spec.get("replicas")), pod,
                         ("spec",) + path)]
    if kind == "Job":
        pod, path = _template(spec, "template", "spec")
        return [PodGroup(title, kind, "server", _count(spec.get("parallelism")), pod,
                         ("spec",) + path)]
    if kind == "InferenceService":  # KServe: the predictor is a pod spec of its own
        predictor = spec.get("predictor") if isinstance(spec.get("predictor"), dict) else {}
        return [PodGroup(title, kind, "server", _count(predictor.get("minReplicas"), 1) or 1,
                         predictor, ("spec", "predictor"))] if predictor.get("containers") \
            else []
    if kind == "LeaderWorkerSet":
        return _leader_workers(title, spec)
    if kind in ("RayCluster", "RayService", "RayJob"):
        key = {"RayCluster": None, "RayService": "rayClusterConfig", "RayJob": "rayClusterSpec"}
        cluster = spec.get(key[kind]) if key[kind] else spec
        base = ("spec", key[kind]) if key[kind] else ("spec",)
        groups = _ray_groups(title, kind, cluster if isinstance(cluster, dict) else {}, base)
        if kind == "RayJob" and isinstance(spec.get("entrypoint"), str):
            groups[0].submitted = (spec["entrypoint"], doc.line("spec", "entrypoint"))
        return groups
    return []


def _leader_workers(title: str, spec: dict) -> list[PodGroup]:
    lwt = spec.get("leaderWorkerTemplate") if isinstance(spec.get("leaderWorkerTemplate"),
                                                         dict) else {}
    size = max(1, _count(lwt.get("size")))
    base = ("spec", "leaderWorkerTemplate")
    worker, worker_path = _template(lwt, "workerTemplate", "spec")
    leader, leader_path = _template(lwt, "leaderTemplate", "spec")
    if not leader:  # without a leaderTemplate the leader runs the worker template
        leader, leader_path = worker, worker_path
    env = {"LWS_GROUP_SIZE": str(size), "LWS_LEADER_ADDRESS": placeholder("LWS_LEADER_ADDRESS")}
    groups = [PodGroup(title, "LeaderWorkerSet", "leader", 1, leader, base + leader_path,
                       {**env, "LWS_WORKER_INDEX": "0"})]
    if size > 1:
        groups.append(PodGroup(title, "LeaderWorkerSet", "worker", size - 1, worker,
                               base + worker_path, env, indexed="LWS_WORKER_INDEX",
                               first_index=1))
    return groups


def _ray_groups(title: str, kind: str, cluster: dict, base: tuple) -> list[PodGroup]:
    head, head_path = _template(cluster, "headGroupSpec", "template", "spec")
    groups = [PodGroup(title, kind, "head", 1, head, base + head_path)]
    workers = cluster.get("workerGroupSpecs")
    for index, group in enumerate(workers if isinstance(workers, list) else []):
        if not isinstance(group, dict):
            continue
        pod, path = _template(group, "template", "spec")
        groups.append(PodGroup(title, kind, "worker", _count(group.get("replicas")), pod,
                               base + ("workerGroupSpecs", index) + path))
    return groups


def gpus(container: dict) -> int:
    """The GPUs a container asks for (`resources.limits`, else `requests`)."""
    resources = container.get("resources") if isinstance(container.get("resources"), dict) else {}
    for part in ("limits", "requests"):
        table = resources.get(part) if isinstance(resources.get(part), dict) else {}
        for key in GPU_KEYS:
            if key in table:
                return _count(table[key], 0)
    return 0


def expand(value: str, env: dict[str, str]) -> str:
    """Kubernetes' `$(VAR)` expansion of a command, args or env value."""
    def one(match: re.Match) -> str:
        if match.group(0) == "$$":
            return "$"
        return env.get(match.group(1), match.group(0))
    return _REF.sub(one, value)


def container_env(container: dict, controller: dict[str, str], doc: Doc, path: tuple,
                  ctx: Ctx) -> dict[str, str]:
    """The container's variables: the controller's, then `env` in order (each may refer to
    those before it), `valueFrom` as run-time values."""
    env = dict(controller)
    entries = container.get("env") if isinstance(container.get("env"), list) else []
    for index, entry in enumerate(entries):
        if not isinstance(entry, dict) or not entry.get("name"):
            continue
        name = str(entry["name"])
        line = doc.line(*path, "env", index)
        if "value" in entry:
            env[name] = expand(str(entry.get("value") if entry.get("value") is not None
                                   else ""), env)
        elif isinstance(entry.get("valueFrom"), dict):
            env[name] = _value_from(name, entry["valueFrom"], controller, line, ctx)
    if container.get("envFrom"):
        ctx.flag_unknown("envFrom", f"line {doc.line(*path, 'envFrom')}: variables of a whole "
                         "ConfigMap/Secret, not in the manifest; give them in an env dump input")
    return env


def _value_from(name: str, source: dict, controller: dict[str, str], line: int,
                ctx: Ctx) -> str:
    secret = source.get("secretKeyRef")
    if isinstance(secret, dict):
        ctx.mapped.append(f"line {line}: env {name} valueFrom secretKeyRef "
                          f"{secret.get('name')}/{secret.get('key')} -> a value to supply")
        return ctx.secrets.declare(name, f"line {line}: env {name} from Secret "
                                         f"{secret.get('name')} key {secret.get('key')}")
    ref = source.get("fieldRef") if isinstance(source.get("fieldRef"), dict) else {}
    path = str(ref.get("fieldPath") or "")
    if "leaderworkerset.sigs.k8s.io/size" in path and "LWS_GROUP_SIZE" in controller:
        ctx.mapped.append(f"line {line}: env {name} fieldRef {path} -> the group size")
        return controller["LWS_GROUP_SIZE"]
    what = path or next(iter(source), "valueFrom")
    ctx.flag_unknown(f"{name} valueFrom {what}", f"line {line}: a value the cluster gives at run "
                     "time; written as a placeholder to supply")
    return ctx.secrets.declare(name, f"line {line}: env {name} valueFrom {what}")
