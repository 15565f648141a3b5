"""`reproduce(inputs, lab, node_map, out_dir)`: read, normalize, plan, diff, check, write.

Writes `out_dir/deployment.yaml` (launchable) and `out_dir/reproduce.json` (docs/reproduce.md
has the contract), both with secrets replaced by placeholders and checked for leaks before
they are written. Returns the typed result; rendering is reproduce/render.py.
"""

from __future__ import annotations

import json
import os
from pathlib import Path
from typing import TYPE_CHECKING, Any

import yaml
from pydantic import ValidationError

from sparktriage.config.client_code import client_code
from sparktriage.config.deployment import Deployment
from sparktriage.config.lab import Lab
from sparktriage.errors import ConfigError, SourceLocation, UsageError, InputError
from sparktriage.yamldoc import load_model
from sparktriage.reproduce.place import beside
from sparktriage.reproduce.check import diff as diffing
from sparktriage.reproduce.check import facts as trapfacts
from sparktriage.reproduce.check import traps as trapcheck
from sparktriage.reproduce.place.devices import asked_gpus, map_devices
from sparktriage.reproduce.check.envcheck import unknown_vllm_env
from sparktriage.reproduce.check.kvcheck import unshipped_connectors
from sparktriage.reproduce.read.readall import import_all, import_input  # noqa: F401 (API)
from sparktriage.reproduce.check.labfacts import read_capture
from sparktriage.reproduce.place.labplan import Shape, place_ranks, plan_for
from sparktriage.reproduce.clientcode import ignored_labs, loader_rows, recorded_client_code
from sparktriage.reproduce.model import ClientNode, Facts, Imported, LabPlan, ReproduceResult
from sparktriage.reproduce.place.nodemap import assign
from sparktriage.reproduce.normalize import combine, origin
from sparktriage.reproduce.secrets import Placeholders
from sparktriage.reproduce.place.site import Localized, localize
from sparktriage.reproduce.supply import header, settle
from sparktriage.validation_words import plain

if TYPE_CHECKING:
    from sparktriage.launch.plan import LaunchPlan

LOCAL_LAB = {"name": "this-machine", "nodes": [{"name": "local", "host": "127.0.0.1"}]}
LOCAL_STATEMENT = ("no --lab given: the plan and the live capture are of this machine only "
                   "(a lab named in a client file is never used)")


def _load_lab(lab: Path | None) -> tuple[Any, Lab, str]:
    """(the deployment's `lab` value, the Lab, a name for statements): the `--lab` file, else
    this machine. A lab a client file names is never read (clientcode.ignored_labs)."""
    if lab is not None:
        model = load_model(Lab, lab)
        return os.path.abspath(lab), model, model.name or str(lab)
    return LOCAL_LAB, Lab.model_validate(LOCAL_LAB), "this machine (no --lab given)"


def _client_gpu(client: dict[str, Facts]) -> str | None:
    return next((f.gpu.get("model") for f in client.values() if f.gpu.get("model")), None)


def reproduce(inputs: list[Path], lab: Path | None, node_map: dict[str, str] | None,
              out_dir: Path, lab_capture: Path | None = None,
              capture_live: bool = True) -> ReproduceResult:
    """Import the client's inputs, plan them on the lab, diff, check traps, write DIR."""
    if not inputs:
        raise UsageError("give at least one input")
    secrets = Placeholders()
    imported = import_all(inputs, secrets)
    client_dep, client_nodes, client_facts = combine(imported)
    if "model" not in client_dep or not (client_dep.get("model") or {}).get("path"):
        raise InputError("no input names a model to serve (give the serve line, docker run, "
                         "compose file or deployment YAML besides environment captures)")
    lab_value, lab_model, lab_name = _load_lab(lab)
    client_nodes, rank_statements = place_ranks(
        client_dep, client_nodes, lab_model, lab_value is not LOCAL_LAB,
        _client_gpu(client_facts), str(inputs[0]), _shape(imported))
    lab_names = _lab_order(lab_model)
    pairs = assign([n.name for n in client_nodes], lab_names, node_map or {})
    used = [lab_node for _, lab_node in pairs]
    client_gpu = _client_gpu(client_facts)
    site = localize(client_dep.get("env") or {}, client_nodes, pairs, lab_model,
                    client_dep.get("serve") or {}, str(inputs[0]), client_dep.get("engine"))
    pinned = map_devices(site, client_nodes, pairs, lab_model, str(inputs[0]))
    asked_gpus(pinned, site, _gpu_ask(imported), pairs, lab_model, str(inputs[0]))
    statements = rank_statements + _statements(client_nodes, client_gpu, lab_model, lab_names,
                                               used) + [s for s in (site.statement(),
                                                                    pinned.statement()) if s] \
        + ([LOCAL_STATEMENT] if lab is None else [])
    dep = _lab_deployment(client_dep, site, pairs, lab_value)
    dep["client_code"] = recorded_client_code(dep)
    if not dep["client_code"]:
        dep.pop("client_code")
    model, normalized = _validated(dep, secrets, imported)
    out_dir.mkdir(parents=True, exist_ok=True)
    dep_path = out_dir / "deployment.yaml"
    text = yaml.safe_dump(normalized, sort_keys=False, allow_unicode=True)
    supply = secrets.used_in(text)  # only what the deployment holds is asked for
    _write(dep_path, header(supply) + text, secrets)
    lab_plan, launch = plan_for(dep_path, lab_name, pairs, statements)

    def build(part_dep: dict, part_site: Localized, part_pairs: list, value: Any,
              parts: list[Imported]) -> dict:
        return _validated(_lab_deployment(part_dep, part_site, part_pairs, value), secrets,
                          parts)[1]
    lab_plan.statements.extend(beside.place(imported, lab_model, lab_value, lab_names, used,
                                            secrets, out_dir, build, _write))
    lab_plan.client_code = list(launch.client_code) if launch else client_code(model)
    lab_facts, capture_status = _lab_facts(lab_capture, capture_live, launch, lab_model, used,
                                           secrets)
    lab_plan.statements.extend(_captured_hardware(client_gpu, lab_facts))
    client_env = _client_env(client_nodes, client_facts, client_dep)
    differences = diffing.compare(client_facts, lab_facts, pairs, client_env,
                                  _lab_env(lab_plan, lab_facts), len(client_nodes), len(used),
                                  trapcheck.load_why())
    facts = trapfacts.build(normalized, client_facts, lab_facts,
                            _lab_nodes_info(lab_model, used, lab_facts), client_env, pairs)
    facts.update(pinned.facts())
    unknown, unneeded = settle([u for i in imported for u in i.unknown] + site.unknown
                               + ignored_labs(imported) + loader_rows(client_dep, client_nodes,
                                                                      imported)
                               + unknown_vllm_env({n.name: {**(client_dep.get("env") or {}),
                                                            **n.env} for n in client_nodes}
                                                  or {"node0": client_dep.get("env") or {}},
                                                  imported)
                               + unshipped_connectors(imported), secrets.supply, supply)
    result = ReproduceResult(
        inputs=[i.input for i in imported], deployment=normalized, unknown=unknown,
        diff=differences, traps=trapcheck.check(facts), placeholders=supply,
        mapped=[m for i in imported for m in i.mapped],
        notes=[n for i in imported for n in i.notes] + unneeded, plan=lab_plan,
        client_nodes=client_nodes,
        lab_capture=capture_status, out_dir=str(out_dir))
    result = ReproduceResult.model_validate(secrets.deep(result.model_dump(mode="json")))
    _write(out_dir / "reproduce.json", json.dumps(result.to_json(), indent=2) + "\n", secrets)
    return result.model_copy(update={"out_dir": str(out_dir)})


def _shape(imported: list[Imported]) -> Shape | None:
    """The shape of the input whose server is reproduced (a Kubernetes workload, a SLURM job),
    at its server command's line."""
    for part in imported:
        if part.shape and part.deployment.get("serve"):
            if part.command_at:
                path, _, line = part.command_at.rpartition(":")
                where = SourceLocation(path, int(line) if line.isdigit() else None)
            else:
                where = SourceLocation(part.input.path, part.line)
            return Shape(part.shape, part.shape_detail, where)
    return None


def _gpu_ask(imported: list[Imported]) -> tuple[int, str, str] | None:
    """(GPUs per node, the option that asks for them, the shape) of the input whose server is
    reproduced, where its job launcher asks for GPUs (a SLURM job)."""
    for part in imported:
        if part.gpus_per_node is not None and part.deployment.get("serve"):
            return part.gpus_per_node, part.gpus_asked or "", part.shape or "the job"
    return None


def _lab_order(lab_model: Lab) -> list[str]:
    """The lab's node names, its head nodes first (client nodes are assigned in this order)."""
    lab_names = [n.name for n in lab_model.nodes]
    heads = [n.name for n in lab_model.nodes if n.role == "head"]
    if heads:
        lab_names = heads + [n for n in lab_names if n not in heads]
    return lab_names


def _statements(client_nodes: list[ClientNode], client_gpu: str | None, lab_model: Lab,
                lab_names: list[str], used: list[str]) -> list[str]:
    """What the plan says about the lab against the client: fewer nodes, other hardware."""
    statements = []
    if len(client_nodes) > len(lab_names):
        statements.append(f"the lab has {len(lab_names)} node(s), the client {len(client_nodes)}: "
                          f"the plan runs on {len(used)} lab node(s); client node(s) "
                          f"{', '.join(n.name for n in client_nodes[len(used):])} have no lab node")
    for node in lab_model.nodes:
        if node.name in used and client_gpu and node.gpu and \
                trapfacts.gpu_arch(client_gpu) != trapfacts.gpu_arch(node.gpu):
            statements.append(f"other hardware: the client runs {client_gpu}, lab node "
                              f"{node.name} has {node.gpu}")
    return statements


def _client_env(client_nodes: list[ClientNode], client_facts: dict[str, Facts],
                client_dep: dict) -> dict[str, dict[str, str]]:
    """Each client node's whole environment: captured, then the deployment's, then its own."""
    client_env = {}
    for n in client_nodes:
        base = dict(client_facts[n.name].env) if n.name in client_facts else {}
        base.update(client_dep.get("env") or {})
        base.update(n.env)
        client_env[n.name] = base
    return client_env


def _lab_deployment(client_dep: dict, site: Localized, pairs: list[tuple[str | None, str]],
                    lab_value: Any) -> dict:
    """The client's deployment placed on the lab nodes, the client's own addresses and
    interfaces replaced by the lab's or left out (reproduce/place/site.py)."""
    used = [lab_node for _, lab_node in pairs]
    node_env = {}
    for client, lab_node in pairs:
        own = {**site.own.get(client or "", {}), **site.node_env.get(lab_node, {})}
        if own:
            node_env[lab_node] = own
    dep = {**client_dep, "env": site.env}
    if site.serve:
        dep["serve"] = site.serve
    if site.engine:
        dep["engine"] = site.engine
    dep.pop("lab", None)
    dep.pop("nodes", None)
    dep["schema_version"] = 1
    dep.setdefault("name", _name(dep))
    dep["lab"] = lab_value
    dep["nodes"] = used
    par = dict(dep.get("parallelism") or {})
    if len(used) > 1 or par.get("nodes") is not None:
        par["nodes"] = len(used)
    dep["parallelism"] = par
    if node_env or dep.get("node_env"):
        dep["node_env"] = {**{k: v for k, v in (dep.get("node_env") or {}).items()
                              if k in used}, **node_env}
    return _prune(dep)


def _validated(dep: dict, secrets: Placeholders,
               imported: list[Imported]) -> tuple[Deployment, dict]:
    """(the deployment model, its JSON form with secrets replaced); a ConfigError naming
    every problem when the imported settings make no valid deployment."""
    try:
        model = Deployment.model_validate({**dep, "lab": dep["lab"] if isinstance(dep["lab"], str)
                                           else "lab.yaml"})
    except ValidationError as exc:
        raise _invalid(exc, imported) from None
    normalized = model.model_dump(mode="json")
    normalized["lab"] = dep["lab"]
    if not normalized.get("client_code"):  # nothing recorded: the section is left out
        normalized.pop("client_code", None)
    return model, secrets.deep(normalized)


def _invalid(exc: ValidationError, imported: list[Imported]) -> ConfigError:
    """Every problem in plain words (validation_words), each at the input (and the line of
    its command) that gave the setting; the first one is the message."""
    problems = []
    for error in exc.errors():
        part = origin(tuple(error["loc"]), imported)
        where = SourceLocation(part.input.path, part.line) if part else None
        problems.append((where, f"{'.'.join(map(str, error['loc']))}: {plain(error)}"))
    where, first = problems[0]
    more = f" (and {len(problems) - 1} more problem{'s' * (len(problems) > 2)})" \
        if len(problems) > 1 else ""
    return ConfigError(f"the imported settings do not make a valid deployment: {first}{more}",
                       location=where, errors=[f"{w}: {text}" if w else text
                                               for w, text in problems])


def _lab_facts(lab_capture: Path | None, capture_live: bool, launch: LaunchPlan | None,
               lab: Lab, used: list[str],
               secrets: Placeholders) -> tuple[dict[str, Facts], dict[str, str]]:
    """The lab's side of the diff: from a saved capture, captured live, or none; and how each
    used lab node was captured."""
    lab_facts: dict[str, Facts] = {}
    capture_status: dict[str, str] = {}
    if lab_capture is not None:
        lab_facts = read_capture(lab_capture, used, secrets)
        capture_status = {n: f"file {lab_capture}" for n in lab_facts}
    elif capture_live and launch is not None:
        from sparktriage.reproduce.check.capture import capture_lab
        lab_facts, capture_status = capture_lab(launch, lab, secrets, used)
    for node in used:
        capture_status.setdefault(node, "not captured")
    return lab_facts, capture_status


def _captured_hardware(client_gpu: str | None, lab_facts: dict[str, Facts]) -> list[str]:
    """Other hardware than the client's, as the lab capture shows it."""
    statements = []
    for node, captured in lab_facts.items():
        model = captured.gpu.get("model")
        if client_gpu and model and trapfacts.gpu_arch(client_gpu) != trapfacts.gpu_arch(model):
            statements.append(f"other hardware: the client runs {client_gpu}, lab node "
                              f"{node} has {model} (captured)")
    return statements


def _lab_env(lab_plan: LabPlan, lab_facts: dict[str, Facts]) -> dict[str, dict[str, str]]:
    """Each lab node's environment: captured, then what the plan sets."""
    lab_env = {}
    for assignment in lab_plan.nodes:
        env = dict(lab_facts[assignment.lab].env) if assignment.lab in lab_facts else {}
        env.update({k: v for k, v in assignment.env.items() if k != "PYTHONUNBUFFERED"})
        lab_env[assignment.lab] = env
    return lab_env


def _lab_nodes_info(lab_model: Lab, used: list[str], lab_facts: dict[str, Facts]) -> list[dict]:
    """The used lab nodes as the trap facts read them (with their captured interfaces)."""
    lab_nodes_info = []
    for node in lab_model.nodes:
        if node.name in used:
            info = node.model_dump(mode="json")
            captured = lab_facts.get(node.name)
            info["nics"] = list(captured.interfaces) if captured else []
            lab_nodes_info.append(info)
    return lab_nodes_info


def _name(dep: dict) -> str:
    name = (dep.get("model") or {}).get("name") or os.path.basename(
        str((dep.get("model") or {}).get("path") or "deployment").rstrip("/")) or "deployment"
    import re
    return re.sub(r"[^A-Za-z0-9._-]+", "-", name)[:60] or "deployment"


def _prune(dep: dict) -> dict:
    """Drop empty sections the importers created (the model fills its defaults)."""
    out = {}
    for key, value in dep.items():
        if isinstance(value, dict) and key not in ("env", "node_env", "lab"):
            inner = {k: v for k, v in value.items() if v is not None and v != {}
                     and (v != [] or (key, k) == ("engine", "vllm"))}
            if inner or key in ("model",):
                out[key] = inner
        elif value is not None:
            out[key] = value
    if "speculative" in dep and dep["speculative"] is None:
        out.pop("speculative", None)
    return out


def _write(path: Path, text: str, secrets: Placeholders) -> None:
    text = secrets.scrub_blob(text)
    leaked = secrets.leaked(text)
    if leaked:  # scrub_blob removes them all; this guards the guard
        raise ConfigError(f"refusing to write {path.name}: it would contain a secret")
    tmp = path.with_name(path.name + ".tmp")
    tmp.write_text(text, encoding="utf-8")
    os.replace(tmp, path)
