"""The importers' one seam (importers/protocol.py, importers/registry.py): every kind of input
has exactly one importer, each has the protocol's shape, and the kind of each input is decided
by the registry alone (no other reproduce module compares an input's kind)."""

from __future__ import annotations

import inspect
import re
import typing
from pathlib import Path

import pytest

from sparktriage.errors import InputError
from sparktriage.reproduce import model
from sparktriage.reproduce.importers.protocol import ReadInput
from sparktriage.reproduce.importers.registry import REGISTRY, Refusal, decide

IMPORTERS = [entry for entry in REGISTRY if not isinstance(entry, Refusal)]
SRC = Path(model.__file__).parent


def test_every_kind_has_one_importer_of_the_protocols_shape() -> None:
    kinds = [importer.kind for importer in IMPORTERS]
    assert sorted(kinds) == sorted(typing.get_args(model.Kind))
    for importer in IMPORTERS:
        assert importer.role in ("values", "script", "unit", "compose", "alone")
        assert list(inspect.signature(importer.claims).parameters) == ["source"]
        assert list(inspect.signature(importer.read).parameters) == ["source", "ctx"]
        assert inspect.getdoc(type(importer)), type(importer).__name__


@pytest.mark.parametrize("text, kind", [
    ("[Service]\nExecStart=/usr/bin/vllm serve /m\n", "systemd"),
    ("apiVersion: v1\nkind: Pod\nspec: {}\n", "kubernetes"),
    ("#!/bin/bash\n#SBATCH -N 2\nsrun vllm serve /m\n", "slurm"),
    ("services:\n  a:\n    image: x\n", "compose"),
    ("schema_version: 1\nmodel: {path: /m}\n", "deployment"),
    ("model: /m\ntensor_parallel_size: 2\n", "recipe"),
    ("vLLM Version: 0.11.0\nPyTorch version: 2.8\n=====\n", "collect-env"),
    ("docker run --gpus all img vllm serve /m\n", "docker"),
    ("vllm serve /m --port 8001\n", "serve"),
    ("A=1\nB=2\n", "env"),
])
def test_the_first_importer_that_claims_an_input_decides_its_kind(text: str, kind: str) -> None:
    source = ReadInput(Path("input"), text)
    assert decide(source).kind == kind
    claiming = [i.kind for i in IMPORTERS if _claims(i, source)]
    assert claiming[0] == kind


def _claims(importer, source: ReadInput) -> bool:
    try:
        return importer.claims(source)
    except InputError:
        return True  # a refusal is a claim of the shape


@pytest.mark.parametrize("text, named", [
    ("image:\n  repository: vllm/vllm-openai\nreplicaCount: 1\nservice: {}\nresources: {}\n",
     "Helm values"),
    ("a: 1\nb: 2\n", "not a compose file, a deployment"),
    ("just words\n", "cannot tell what kind of input this is"),
])
def test_refused_shapes_are_named(text: str, named: str) -> None:
    with pytest.raises(InputError, match=named):
        decide(ReadInput(Path("input"), text))


def test_no_other_module_switches_on_the_input_kind() -> None:
    """Only the registry and the importers' own `kind =` declare kinds; no module compares
    an input's kind (`input.kind == ...`, `kind in (...)` over input kinds); a server
    command's own kind (meaning/servers.py: serve, container, ray) is another thing."""
    kinds = "|".join(re.escape(k) for k in typing.get_args(model.Kind))
    switch = re.compile(rf"(?<!server\.)kind\s*(?:==|!=|in)\s*[\(\[{{]?\s*[\"'](?:{kinds})[\"']")
    found = [f"{path.relative_to(SRC)}:{number}" for path in SRC.rglob("*.py")
             for number, line in enumerate(path.read_text().splitlines(), 1)
             if switch.search(line)]
    assert found == []
