"""The importers, in the order they are asked, and the one decision of an input's kind.

Order matters where shapes overlap: a systemd unit is never YAML or shell; Kubernetes YAML
(one or several documents) before anything else YAML, a Helm chart template refused there; a
SLURM batch script before a plain script; a YAML mapping with `services` is compose, one with
`model` (and `schema_version`, `lab` or `serve`) our deployment, a recipe or a vLLM
`--config`; collect-env output; Helm values and any other YAML mapping are refused (never read
as a shell script, unless most of its lines read as shell); a shell text running `docker|podman
run` is docker, one running `vllm serve`, the api_server module, `ray start` or a script is
serve; `NAME=value` lines are an env dump. The kind is decided here, once, from the content
(the file name is not trusted); nothing else switches on it.
"""

from __future__ import annotations

import re
from dataclasses import dataclass
from typing import Callable

from sparktriage.errors import InputError
from sparktriage.reproduce.importers.collect_env import CollectEnvImporter
from sparktriage.reproduce.importers.compose import ComposeImporter
from sparktriage.reproduce.importers.deployment import DeploymentImporter
from sparktriage.reproduce.importers.envdump import EnvImporter
from sparktriage.reproduce.importers.kube_docs import helm_refusal
from sparktriage.reproduce.importers.kubernetes import KubernetesImporter
from sparktriage.reproduce.importers.protocol import Importer, ReadInput
from sparktriage.reproduce.importers.recipe import RecipeImporter
from sparktriage.reproduce.importers.scripts import DockerImporter, ServeImporter, SlurmImporter
from sparktriage.reproduce.importers.systemd import UnitImporter

_SHELL_LINE = re.compile(r"(?m)^\s*(?:export\s+[A-Za-z_]|[A-Za-z_][A-Za-z0-9_]*=|#!|if\s|for\s|"
                         r"(?:sudo\s+)?(?:\S*/)?(?:vllm|docker|podman|python3?|ray|nohup)\s)")
_YAML_KEY_LINE = re.compile(r"(?m)^\s*[A-Za-z_][A-Za-z0-9_.-]*:(?:\s|$)")


@dataclass(frozen=True)
class Refusal:
    """A shape no importer reads, refused at its place in the order, naming what to give."""

    name: str
    refuses: Callable[[ReadInput], str | None]


def _helm_values(source: ReadInput) -> str | None:
    return helm_refusal(source.text, source.data) if isinstance(source.data, dict) else None


def _shell_like(text: str) -> bool:
    """More lines that read as shell (assignments, commands) than YAML `key:` lines."""
    return len(_SHELL_LINE.findall(text)) > len(_YAML_KEY_LINE.findall(text))


def _other_mapping(source: ReadInput) -> str | None:
    data = source.data
    if not isinstance(data, dict) or len(data) < 2 or _shell_like(source.text):
        return None
    return ("a YAML mapping that is not a compose file, a deployment, a vLLM recipe or a vLLM "
            "--config file (keys: " + ", ".join(str(k) for k in list(data)[:6]) + "); not "
            "read as a shell script")


REGISTRY: tuple[Importer | Refusal, ...] = (
    UnitImporter(), KubernetesImporter(), SlurmImporter(), ComposeImporter(),
    DeploymentImporter(), RecipeImporter(), CollectEnvImporter(),
    Refusal("Helm values", _helm_values), Refusal("another YAML mapping", _other_mapping),
    DockerImporter(), ServeImporter(), EnvImporter())

UNKNOWN = ("cannot tell what kind of input this is (expected a vllm serve line or script, "
           "docker/podman run, a compose file, Kubernetes manifests, a SLURM batch script, "
           "vllm collect-env output, an env dump or a deployment YAML)")


def decide(source: ReadInput) -> Importer:
    """The importer of `source`: the first in order that claims it; InputError (without the
    path) for a shape that is refused or that none claims."""
    for entry in REGISTRY:
        if isinstance(entry, Refusal):
            message = entry.refuses(source)
            if message:
                raise InputError(message)
        elif entry.claims(source):
            return entry
    raise InputError(UNKNOWN)
