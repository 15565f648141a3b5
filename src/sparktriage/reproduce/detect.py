"""Which kind of input a file is, from its content (the file name is not trusted), read bounded.

Order: a systemd unit (`[Service]` with `ExecStart=`) is systemd; Kubernetes YAML (`apiVersion:`
and `kind:` at the top level, one or several documents) is kubernetes, unless it holds Helm
template actions (`{{ .Values ... }}`), which are refused naming `helm template`, as are Helm
values files; a shell script with `#SBATCH` lines is a SLURM batch job; a YAML mapping with
`services` is a compose file and one with `model` (and `schema_version`, `lab` or `serve`) our
deployment; text framed like `vllm collect-env` is
collect-env; a YAML mapping of none of these kinds is refused (never read as a shell script,
unless most of its lines read as shell); a shell text running `docker|podman run` is docker,
one running `vllm serve`, the api_server module or `ray start` is serve (both are read by
reproduce/bash); `NAME=value` lines are an env dump.
"""

from __future__ import annotations

import re
from pathlib import Path

import yaml

from sparktriage.errors import InputError
from sparktriage import yamlsafe
from sparktriage.limits import check_lines
from sparktriage.reproduce.importers import (collect_env, deployment, envdump, kube_docs, recipe,
                                             systemd)
from sparktriage.reproduce.shell import MAX_INPUT_BYTES

_DOCKER = re.compile(r"(?m)^\s*(?:sudo\s+)?(?:\S*/)?(?:docker|podman)\s+(?:container\s+)?run\b")
_SBATCH = re.compile(r"(?m)^#SBATCH[ \t]+-")
_SERVE = re.compile(r"(?m)(?:^|[\s;&|'\"(])(?:\S*/)?vllm\s+serve\b"
                    r"|-m\s+vllm\.entrypoints\.(?:openai\.api_server|api_server|cli\.main)\b"
                    r"|(?:^|[\s;&|'\"])ray\s+start\b")


def read_input(path: Path) -> str:
    """The file's text: at most MAX_INPUT_BYTES, UTF-8, no NUL byte."""
    try:
        with open(path, "rb") as fh:
            data = fh.read(MAX_INPUT_BYTES + 1)
    except FileNotFoundError:
        raise InputError(f"{path}: no such file") from None
    except IsADirectoryError:
        raise InputError(f"{path}: is a folder, not an input file") from None
    except OSError as exc:
        raise InputError(f"{path}: cannot read ({exc.strerror or exc})") from None
    if len(data) > MAX_INPUT_BYTES:
        raise InputError(f"{path}: larger than {MAX_INPUT_BYTES // (1024 * 1024)} MiB; not a "
                         "config a client sends")
    if b"\x00" in data:
        raise InputError(f"{path}: contains a NUL byte; not a text file")
    check_lines(data, str(path))
    try:
        return data.decode("utf-8")
    except UnicodeDecodeError as exc:
        raise InputError(f"{path}: not UTF-8 text (byte {exc.start})") from None


def _yaml(text: str):
    if not re.search(r"(?m)^[A-Za-z_][A-Za-z0-9_-]*:\s", text + " "):
        return None
    try:
        return yamlsafe.load(text, "input")[0]  # bounded (anchors expand within the limit)
    except yaml.YAMLError:
        return None  # a LimitError (an alias bomb, too deep) is the input's one-line error


# a launch script that runs another script (`bash run_cluster.sh IMAGE IP --head ...`)
_RUNS_SCRIPT = re.compile(r"(?m)^\s*(?:sudo\s+)?(?:(?:bash|sh|source|\.)\s+\S+\.sh|\./\S+\.sh)\b")
_SHELL_LINE = re.compile(r"(?m)^\s*(?:export\s+[A-Za-z_]|[A-Za-z_][A-Za-z0-9_]*=|#!|if\s|for\s|"
                         r"(?:sudo\s+)?(?:\S*/)?(?:vllm|docker|podman|python3?|ray|nohup)\s)")


def _shell_like(text: str) -> bool:
    """More lines that read as shell (assignments, commands) than YAML `key:` lines."""
    shell = len(_SHELL_LINE.findall(text))
    yaml_keys = len(re.findall(r"(?m)^\s*[A-Za-z_][A-Za-z0-9_.-]*:(?:\s|$)", text))
    return shell > yaml_keys


def detect(text: str) -> str:
    if systemd.looks_like_unit(text):  # `[Service]` with `ExecStart=`: never YAML or shell
        return "systemd"
    if kube_docs.templated(text):  # a Helm chart template is not what runs
        raise InputError(kube_docs.helm_refusal(text, None) or "a Helm chart template: render "
                         "it with `helm template RELEASE CHART -f values.yaml > manifests.yaml` "
                         "and give manifests.yaml")
    if kube_docs.looks_like(text):  # one or several documents: read by kube_docs, not here
        return "kubernetes"
    if _SBATCH.search(text):
        return "slurm"
    data = _yaml(text)
    if isinstance(data, dict):
        if isinstance(data.get("services"), dict):
            return "compose"
        if deployment.looks_like(data):
            return "deployment"
        if recipe.looks_like_recipe(data):
            return "recipe"
    if collect_env.looks_like(text):
        return "collect-env"
    helm = kube_docs.helm_refusal(text, data) if isinstance(data, dict) else None
    if helm:
        raise InputError(helm)
    if isinstance(data, dict) and len(data) >= 2 and not _shell_like(text):
        # a YAML document is never read as a shell script (a recipe once was)
        raise InputError("a YAML mapping that is not a compose file, a deployment, a vLLM "
                         "recipe or a vLLM --config file (keys: "
                         + ", ".join(str(k) for k in list(data)[:6]) + "); not read as a shell "
                         "script")
    text = re.sub(r"\\\r?\n", " ", text)  # line continuations
    if _DOCKER.search(text):
        return "docker"
    if _SERVE.search(text) or _RUNS_SCRIPT.search(text):
        return "serve"
    if envdump.looks_like(text):
        return "env"
    raise InputError("cannot tell what kind of input this is (expected a vllm serve line or "
                     "script, docker/podman run, a compose file, Kubernetes manifests, a SLURM "
                     "batch script, vllm collect-env output, an env dump or a deployment YAML)")
