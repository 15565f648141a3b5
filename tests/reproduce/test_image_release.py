"""The vLLM release a Kubernetes manifest or a compose file runs, from its container image's
tag, chooses the option table the serve argv is read with (importers/container.image_release,
the one function docker run uses too); an image whose tag is its own numbering (NGC's
`nvcr.io/nvidia/vllm:25.09-py3`) names no release, and the newest covered table reads it."""

from __future__ import annotations

from pathlib import Path

import pytest
from reproduce_helpers import gb10_lab, run

from sparktriage.errors import InputError
from sparktriage.reproduce import vllm_options as V

DEPLOYMENT = """\
apiVersion: apps/v1
kind: Deployment
metadata: {{name: qwen}}
spec:
  replicas: 1
  template:
    spec:
      containers:
        - name: vllm
          image: {image}
          command: ["vllm", "serve"]
          args: ["/models/m", "--port", "8000", {args}]
          resources: {{limits: {{nvidia.com/gpu: "1"}}}}
"""

COMPOSE = """\
services:
  vllm:
    image: {image}
    command: ["/models/m", {args}]
"""


def _write(tmp: Path, kind: str, image: str, args: str) -> Path:
    path = tmp / f"{kind}.yaml"
    path.write_text((DEPLOYMENT if kind == "kube" else COMPOSE).format(image=image, args=args))
    return path


@pytest.mark.parametrize("kind", ["kube", "compose"])
@pytest.mark.parametrize("tag", ["v0.10.1.1", "v0.11.0"])
def test_the_tag_chooses_the_release_the_argv_is_read_with(tmp_path: Path, kind: str,
                                                           tag: str) -> None:
    image = f"vllm/vllm-openai:{tag}"
    release = tag.removeprefix("v")
    # an option that release lacks: a row naming the release and the image that says so
    src = _write(tmp_path, kind, image, '"--cudagraph-capture-sizes", "1", "2"')
    result = run([src], tmp_path, gb10_lab(tmp_path, 1))
    rows = [u.note for u in result.unknown if u.text == "--cudagraph-capture-sizes 1 2"]
    assert len(rows) == 1
    assert rows[0].startswith(f"not an option of vLLM {release} (the image {image})")
    # a value that release refuses (`auto` came in 0.14.0): refused, naming both
    src = _write(tmp_path, kind, image, '"--max-model-len", "auto"')
    with pytest.raises(InputError) as caught:
        run([src], tmp_path, gb10_lab(tmp_path, 1), out="b")
    assert f"vLLM {release} (the image {image}) accepts an integer" in caught.value.one_line()


@pytest.mark.parametrize("kind", ["kube", "compose"])
def test_an_ngc_tag_names_no_release_and_the_newest_table_reads(tmp_path: Path,
                                                                kind: str) -> None:
    src = _write(tmp_path, kind, "nvcr.io/nvidia/vllm:25.09-py3",
                 '"--max-model-len", "auto", "--cudagraph-capture-sizes", "1", "2"')
    if kind == "compose":  # NGC's image runs no server by default: the command says which
        src.write_text(src.read_text().replace('["/models/m"', '["vllm", "serve", "/models/m"'))
    result = run([src], tmp_path, gb10_lab(tmp_path, 1))
    assert V.newest() == "0.32.0"
    assert not [u for u in result.unknown if "--cudagraph-capture-sizes" in u.text]
    argv = result.plan.nodes[0].argv
    assert argv[argv.index("--max-model-len") + 1] == "auto"
    assert argv[argv.index("--cudagraph-capture-sizes") + 1:][:2] == ["1", "2"]
