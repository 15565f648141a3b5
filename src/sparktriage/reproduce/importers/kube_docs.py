"""The documents of a Kubernetes manifest file, read bounded; and Helm inputs, which are refused.

`kubectl apply -f` takes a file of several YAML documents separated by `---` lines. Each document
is parsed on its own by the project's bounded reader (yamldoc/yamlsafe), with the line of every
key counted from the top of the whole file, so that errors and rows name the file's own lines.
At most YAML_MAX_DOCUMENTS documents are read; the file as a whole is already bounded in size.
A `kind: List` document (what `kubectl get -o yaml` prints) stands for its items.

Helm is not Kubernetes YAML: a chart template holds `{{ ... }}` actions and a values file holds
the chart's inputs, neither of which is what runs. Both are refused with one line that names Helm
and the command that renders the chart (`helm template`), whose output is read here.
"""

from __future__ import annotations

import re
from dataclasses import dataclass

import yaml

from sparktriage.errors import InputError
from sparktriage.limits import YAML_MAX_DOCUMENTS, limit_hit
from sparktriage.yamldoc import parse

_SEPARATOR = re.compile(r"---(?:[ \t].*)?\Z")
_END = re.compile(r"\.\.\.[ \t]*\Z")
_API = re.compile(r"(?m)^apiVersion:[ \t]*['\"]?[A-Za-z0-9.-]*/?v[0-9][A-Za-z0-9]*['\"]?[ \t]*$")
_KIND = re.compile(r"(?m)^kind:[ \t]*['\"]?[A-Z][A-Za-z0-9]*['\"]?[ \t]*$")
_HELM_ACTION = re.compile(r"\{\{-?\s*(?:\.Values|\.Release|\.Chart|include\s|template\s|"
                          r"toYaml\s|if\s|range\s|with\s|end\b|\$)")
# top-level keys of Helm values files: the vLLM production-stack chart's, and the keys `helm
# create` writes for every chart
_STACK_KEYS = {"servingEngineSpec", "routerSpec", "cacheserverSpec", "loraController"}
_CHART_KEYS = {"replicaCount", "image", "imagePullSecrets", "nameOverride", "fullnameOverride",
               "serviceAccount", "podAnnotations", "podSecurityContext", "securityContext",
               "service", "ingress", "resources", "autoscaling", "nodeSelector", "tolerations",
               "affinity"}


@dataclass(frozen=True)
class Doc:
    """One document: its data, the line of every key path (in the whole file), its first line."""

    data: object
    lines: dict
    first: int

    def line(self, *path) -> int:
        """The line of the deepest key of `path` the document has."""
        for end in range(len(path), -1, -1):
            found = self.lines.get(tuple(path[:end]))
            if found is not None:
                return found
        return self.first


def templated(text: str) -> bool:
    """A Helm chart template: Helm's own values (`.Values`, `.Release`, `.Chart`) in `{{ }}`,
    or a Kubernetes `kind:` line beside any template action."""
    return bool(re.search(r"\{\{-?[^}]*\.(?:Values|Release|Chart)\b", text)) or (
        bool(re.search(r"(?m)^kind:[ \t]*\S", text)) and bool(_HELM_ACTION.search(text)))


def looks_like(text: str) -> bool:
    """Kubernetes YAML: a top-level `apiVersion: group/vN` and a `kind: Name`."""
    return bool(_API.search(text) and _KIND.search(text))


def _chunks(text: str) -> list[tuple[int, str]]:
    """(first line, text) of each non-empty document, split at `---` / `...` lines."""
    out: list[tuple[int, str]] = []
    start, current = 1, []
    for number, line in enumerate(text.splitlines(), 1):
        if _SEPARATOR.match(line) or _END.match(line):
            out.append((start, "\n".join(current)))
            start, current = number + 1, []
        else:
            current.append(line)
    out.append((start, "\n".join(current)))
    return [(first, chunk) for first, chunk in out if chunk.strip()]


def read_documents(text: str, origin: str) -> list[Doc]:
    """Every non-empty document of `text`, parsed bounded; InputError naming the line of the
    first one that is not YAML, LimitError past a bound."""
    chunks = _chunks(text)
    if len(chunks) > YAML_MAX_DOCUMENTS:
        raise limit_hit("documents in one YAML input", str(YAML_MAX_DOCUMENTS), origin)
    docs = []
    for first, chunk in chunks:
        try:
            document = parse(chunk, origin)
        except yaml.MarkedYAMLError as exc:
            mark = exc.problem_mark or exc.context_mark
            line = first + (mark.line if mark else 0)
            raise InputError(f"{origin}:{line}: not valid YAML ({exc.problem or exc})") from None
        except yaml.YAMLError as exc:
            raise InputError(f"{origin}:{first}: not valid YAML ({exc})") from None
        lines = {path: first + number - 1 for path, number in document.lines.items()}
        docs += _items(Doc(document.data, lines, first))
    return docs


def _items(doc: Doc) -> list[Doc]:
    """A `kind: List` (what `kubectl get -o yaml` prints) as its items, else the document."""
    data = doc.data
    if not (isinstance(data, dict) and data.get("kind") == "List" and
            isinstance(data.get("items"), list)):
        return [doc]
    out = []
    for index, item in enumerate(data["items"][:YAML_MAX_DOCUMENTS]):
        prefix = ("items", index)
        lines = {path[2:]: line for path, line in doc.lines.items() if path[:2] == prefix}
        out.append(Doc(item, lines, lines.get((), doc.first)))
    return out


def helm_refusal(text: str, data) -> str | None:
    """The one-line refusal for a Helm chart template or values file, else None."""
    action = _HELM_ACTION.search(text)
    if action is not None:
        line = text.count("\n", 0, action.start()) + 1
        return (f"line {line}: a Helm chart template (`{action.group(0)}...`): what runs is the "
                "template filled with the chart's values; render it with `helm template RELEASE "
                "CHART -f values.yaml > manifests.yaml` and give manifests.yaml")
    if not isinstance(data, dict):
        return None
    keys = {str(k) for k in data}
    stack = sorted(keys & _STACK_KEYS)
    chart = sorted(keys & _CHART_KEYS)
    image = data.get("image")
    chart_image = isinstance(image, dict) and ("repository" in image or "tag" in image)
    if not stack and not (len(chart) >= 3 and chart_image):
        return None
    named = ", ".join(stack or chart)
    which = "the vLLM production-stack chart (vllm/vllm-stack)" if stack else "a Helm chart"
    return (f"line 1: Helm values for {which} (keys {named}): they are the chart's inputs, "
            "not what runs; render the chart with `helm template RELEASE CHART -f "
            "THIS_FILE > manifests.yaml` and give manifests.yaml")
