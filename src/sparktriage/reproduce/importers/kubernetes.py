"""Kubernetes manifests: the vLLM container of each workload, read as the cluster would run it.

A manifest file (one or several documents) is read by kube_docs.py; each workload is read down
to its pods by kube_pods.py. In each pod the container that runs vLLM or Ray is the one read
(others are sidecars, noted): its `command`/`args` after `$(VAR)` expansion and its `env` go
through the container reader the compose and docker importers use (container.py: a `sh -c`
string is read by the container-script reader, never run). The pods of the workload are the
client's nodes: a LeaderWorkerSet group's leader and its workers, a KubeRay head and its worker
replicas (Ray workers), each pod with the GPUs it asks for (`nvidia.com/gpu`), so that the
ranks and a refusal name the shape: "a Kubernetes LeaderWorkerSet running tp 8 x pp 2 = 16
GPUs". A Deployment's replicas and a LeaderWorkerSet's groups are copies of one server behind a
Service: one is reproduced and the count is a row. Several workloads that serve are independent
servers (apart.py). vLLM's own `multi-node-serving.sh leader|worker` (the script its image ships
for Ray clusters) is read as the `ray start --head` / `--address` it runs. A KubeRay RayService
whose vLLM lives in a Ray Serve application (Python code the manifest does not hold) is refused
with the application's line.
"""

from __future__ import annotations

import re
from dataclasses import dataclass

from sparktriage.errors import InputError
from sparktriage.reproduce.importers import apart
from sparktriage.reproduce.importers.cluster import Member, alone, assemble_cluster
from sparktriage.reproduce.importers.common import Ctx
from sparktriage.reproduce.importers.container import container_program
from sparktriage.reproduce.importers.kube_docs import (Doc, helm_refusal, looks_like,
                                                     read_documents, templated)
from sparktriage.reproduce.importers.kube_pods import (PodGroup, container_env, expand, gpus,
                                                       pod_groups)
from sparktriage.reproduce.importers.nodes import env_block
from sparktriage.reproduce.importers.ray_start import RayStart
from sparktriage.reproduce.importers.protocol import ReadInput
from sparktriage.reproduce.model import Imported

_MULTI_NODE = re.compile(r"multi-node-serving\.sh['\"]?\s+(leader|worker)\b")
_ENGINE_WORDS = re.compile(r"\bvllm\b|\bray\b|multi-node-serving")
_STARTS_ENGINE = re.compile(r"\bvllm\s+serve\b|vllm\.entrypoints|\bray\s+start\b")
_IMPORT_PATH = re.compile(r"(?m)^\s*-?\s*import_path:\s*(\S+)")
HANDLED = {"name", "image", "command", "args", "env", "envFrom", "resources"}


@dataclass
class Workload:
    """One workload that runs vLLM: its node members, the serve container's engine, shape."""

    title: str
    kind: str
    members: list[Member]
    engine: dict
    pods: int
    gpus: int
    line: int | None

    @property
    def serve_member(self) -> Member | None:
        return next((m for m in self.members if m.serve is not None), None)


def _command_line(container: dict, doc: Doc, path: tuple) -> int:
    """The line of the command/args item that holds the server, else of `command`/`args`."""
    for key in ("command", "args"):
        items = container.get(key)
        if isinstance(items, list):
            for index, item in enumerate(items):
                if _ENGINE_WORDS.search(str(item)) or "serve" in str(item):
                    return doc.line(*path, key, index)
    return doc.line(*path, "command" if "command" in container else "args")


def _words(container: dict, key: str, env: dict[str, str], doc: Doc, path: tuple,
           ctx: Ctx) -> list[str]:
    """A container's `command` or `args`: a list of strings, as Kubernetes takes it."""
    value = container.get(key)
    if value is None:
        return []
    if not isinstance(value, list) or any(isinstance(w, (dict, list)) for w in value):
        raise InputError(f"{ctx.source}:{doc.line(*path, key)}: {key} is not a list of strings "
                         "(Kubernetes would refuse the manifest)")
    return [expand(str(w), env) for w in value if w is not None]


def _program(container: dict, env: dict[str, str], doc: Doc, path: tuple,
             ctx: Ctx) -> tuple[str | None, list[str]]:
    """(entrypoint, words): `command` replaces the image's ENTRYPOINT, `args` its CMD."""
    command = _words(container, "command", env, doc, path, ctx)
    args = _words(container, "args", env, doc, path, ctx)
    if command:
        return command[0], command[1:] + args
    return None, args


def _container(group: PodGroup, index: int, container: dict, doc: Doc, path: tuple,
               controller: dict[str, str], ctx: Ctx) -> tuple[Member, dict] | None:
    """One container as a node member (None: it runs neither vLLM nor Ray)."""
    env = container_env(container, controller, doc, path, ctx)
    entry, words = _program(container, env, doc, path, ctx)
    line = _command_line(container, doc, path)
    if group.submitted and not (entry or words):
        # KubeRay runs a RayJob's entrypoint on the head once Ray is up there
        entry, words, line = "sh", ["-c", group.submitted[0]], group.submitted[1]
        ctx.mapped.append(f"line {line}: RayJob entrypoint -> the head's command")
    text = " ".join(([entry] if entry else []) + words)
    name = str(container.get("name") or f"container {index}")
    image = str(container.get("image") or "")
    # args alone run the image's own entrypoint (`vllm serve` in vLLM's images)
    image_runs_vllm = entry is None and "vllm" in image.lower()
    multi = _MULTI_NODE.search(text)
    if (entry or words) and not (_STARTS_ENGINE.search(text) or multi or image_runs_vllm):
        ctx.note(f"line {doc.line(*path)}: {group.workload} container {name} runs "
                 f"`{text[:60]}`, not a vLLM server or Ray; not reproduced")
        return None
    eng: dict = {"image": image, "runtime": "docker",
                 "container_args": []}
    ray_role = "head" if group.role in ("head", "leader") else "worker"
    if group.kind.startswith("Ray") and not (entry or words):
        # KubeRay starts Ray in every pod itself (rayStartParams); the image's command is Ray's
        serve, ray = None, None
    else:
        try:
            serve, ray = container_program(words, entry, eng, ctx, line, env)
        except InputError:
            if multi is None and not group.kind.startswith("Ray") and (
                    _STARTS_ENGINE.search(text) or image_runs_vllm):
                raise  # a server command that cannot be read: the input's error
            if multi is None and not group.kind.startswith("Ray"):
                # a container that only mentions vllm (a router, a benchmark client)
                ctx.note(f"line {doc.line(*path)}: {group.workload} container {name} runs "
                         f"`{text[:60]}`, not a vLLM server; not reproduced")
                return None
            serve, ray = None, None
    if ray is None and (multi is not None or group.kind.startswith("Ray")):
        ray = RayStart(role=ray_role, line=line)
        how = f"vLLM's multi-node-serving.sh {multi.group(1)}" if multi else \
            f"KubeRay {group.role} pod"
        ctx.mapped.append(f"line {line}: {how} -> ray start "
                          f"{'--head' if ray_role == 'head' else '--address (the head)'}")
    if serve is not None:
        serve.line = line
    own = _names(container)  # the controller's variables are the cluster's, not the client's
    env = {k: v for k, v in env.items() if k not in controller or k in own}
    env.update(eng.pop("_env", {}))
    extra = sorted(set(map(str, container)) - HANDLED)
    if extra:
        ctx.note(f"line {doc.line(*path)}: {group.workload} container {name}: "
                 f"{', '.join(extra)} not reproduced (the lab's plan sets its own)")
    member = Member(serve, ray, env_block(env, ctx, f"line {line}"), line, name=name)
    return member, eng


def _names(container: dict) -> set[str]:
    return {str(e.get("name")) for e in container.get("env") or [] if isinstance(e, dict)}


def _pod(group: PodGroup, doc: Doc, index: int | None,
         ctx: Ctx) -> tuple[Member, dict, int] | None:
    """The vLLM/Ray container of one pod of the group: (member, engine, its GPUs)."""
    controller = dict(group.controller_env)
    if group.indexed and index is not None:
        controller[group.indexed] = str(index)
    containers = group.spec.get("containers") if isinstance(group.spec.get("containers"),
                                                            list) else []
    for position, container in enumerate(containers):
        if not isinstance(container, dict):
            continue
        path = group.path + ("containers", position)
        found = _container(group, position, container, doc, path, controller, ctx)
        if found is not None:
            return found[0], found[1], gpus(container)
    return None


def _workload(doc: Doc, groups: list[PodGroup], ctx: Ctx) -> Workload | None:
    members: list[Member] = []
    engine: dict = {}
    pods, per_pod, first = 0, 0, groups[0]
    for group in groups:
        if group.count == 0:
            continue
        # pods that differ by their index variable are read one by one
        varies = bool(group.indexed) and f"$({group.indexed})" in str(group.spec)
        indices = range(group.first_index, group.first_index + group.count) if varies else [None]
        for index in indices:
            found = _pod(group, doc, index, ctx)
            if found is None:
                break
            member, eng, count = found
            if not varies and group.role != "server":
                member.replicas = group.count
            members.append(member)
            if member.serve is not None and not engine:
                engine = eng
            per_pod = max(per_pod, count)
        pods += 1 if group.role == "server" else group.count
    if not any(m.serve is not None for m in members):
        return None
    if first.role == "server" and first.count > 1:
        ctx.flag_unknown(f"{first.workload} replicas {first.count}", f"line "
                         f"{doc.line('spec', 'replicas')}: {first.count} copies of one server "
                         "(a Service spreads requests over them); one is reproduced")
    data = doc.data if isinstance(doc.data, dict) else {}
    groups_count = (data.get("spec") or {}).get("replicas") if first.kind == \
        "LeaderWorkerSet" else None
    if isinstance(groups_count, int) and groups_count > 1:
        ctx.flag_unknown(f"{first.workload} replicas {groups_count}", f"line "
                         f"{doc.line('spec', 'replicas')}: {groups_count} copies of one "
                         "leader/worker group (each a whole server); one group is reproduced")
    serve = next(m for m in members if m.serve is not None)
    return Workload(first.workload, first.kind, members, engine, max(pods, 1), per_pod,
                    serve.line)


def _ray_serve_refusal(doc: Doc, ctx: Ctx) -> InputError | None:
    """A RayService whose vLLM is a Ray Serve application: refused at its import_path."""
    spec = doc.data.get("spec") if isinstance(doc.data, dict) else None
    config = spec.get("serveConfigV2") if isinstance(spec, dict) else None
    if not isinstance(config, str):
        return None
    found = _IMPORT_PATH.search(config)
    line = doc.line("spec", "serveConfigV2")
    if found is not None:
        line += config.count("\n", 0, found.start()) + 1
    app = found.group(1) if found else "(none given)"
    return InputError(f"{ctx.source}:{line}: a KubeRay RayService whose vLLM runs inside a Ray "
                      f"Serve application (import_path {app}: Python code this manifest does "
                      "not hold builds the engine); no vllm serve command to reproduce: give "
                      "the serve command with the engine arguments the application uses")


class KubernetesImporter:
    """Kubernetes manifests (one or several documents: kube_docs.py); a Helm chart template is
    refused here, naming `helm template`."""

    kind = "kubernetes"
    role = "alone"

    def claims(self, source: ReadInput) -> bool:
        if templated(source.text):  # a Helm chart template is not what runs
            raise InputError(helm_refusal(source.text, None) or "a Helm chart template: "
                             "render it with `helm template RELEASE CHART -f values.yaml > "
                             "manifests.yaml` and give manifests.yaml")
        return looks_like(source.text)

    def read(self, source: ReadInput, ctx: Ctx) -> Imported:
        return _import(source.text, ctx)


def _import(text: str, ctx: Ctx) -> Imported:
    docs = read_documents(text, ctx.source)
    found: list[Workload] = []
    refusal: InputError | None = None
    custom: list[str] = []  # kinds an operator turns into pods (not in the manifest)
    for doc in docs:
        data = doc.data if isinstance(doc.data, dict) else {}
        kind = str(data.get("kind") or "")
        groups = pod_groups(doc)
        if not groups:
            if kind == "Secret":
                _secret_values(data, doc, ctx)
            elif "." in str(data.get("apiVersion") or "").split("/")[0] and \
                    not str(data.get("apiVersion")).endswith(".k8s.io/v1"):
                custom.append(f"{kind} (line {doc.first}, {data.get('apiVersion')})")
            ctx.note(f"line {doc.first}: {kind or 'a document'} runs no pods; not reproduced")
            continue
        workload = _workload(doc, groups, ctx)
        if workload is not None:
            found.append(workload)
        elif kind == "RayService":
            refusal = refusal or _ray_serve_refusal(doc, ctx)
        else:
            ctx.note(f"line {doc.first}: {groups[0].workload} runs no vLLM server; not "
                     "reproduced")
    if not found:
        if refusal is not None:
            raise refusal
        if custom:
            raise InputError(f"{ctx.source}: a Kubernetes custom resource {custom[0]}: its "
                             "operator makes the pods that run vLLM, which the manifest does not "
                             "hold; give the pods it made (`kubectl get pods -o yaml`) or the "
                             "serve command")
        raise InputError(f"{ctx.source}: no container of the Kubernetes manifest runs vllm "
                         "serve (its command and args read with the env's $(VAR) values)")
    chosen = found[0]
    for other in found[1:]:
        apart.flag_other(ctx, chosen.serve_member.serve, chosen.title,
                         other.serve_member.serve, other.title)
        ctx.others.append(alone(other.members, other.engine, ctx))
    ctx.mapped.append(f"{chosen.title}: {chosen.pods} pod(s) x {chosen.gpus} GPU(s) -> client "
                      "nodes (one per pod)")
    result = assemble_cluster(chosen.members, ctx)
    deployment = dict(result.deployment)
    deployment["engine"] = {**deployment.get("engine", {}), **chosen.engine}
    shape = f"a Kubernetes {chosen.kind}"
    detail = f"{chosen.pods} pod(s) x {chosen.gpus} GPU(s)" if chosen.gpus else \
        f"{chosen.pods} pod(s)"
    return result.model_copy(update={"deployment": deployment, "shape": shape,
                                     "shape_detail": detail, "line": chosen.line})


def _secret_values(data: dict, doc: Doc, ctx: Ctx) -> None:
    """A Secret's values are never written: each becomes a placeholder the writer checks for."""
    name = str((data.get("metadata") or {}).get("name") or "secret") if isinstance(
        data.get("metadata"), dict) else "secret"
    for section in ("stringData", "data"):
        values = data.get(section)
        if isinstance(values, dict):
            for key, value in values.items():
                if value is not None:
                    ctx.secrets.named(f"{name}.{key}", str(value), f"line "
                                      f"{doc.line(section, key)}: Secret {name} key {key}")
