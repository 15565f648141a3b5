"""Every catalogue variant: controls stay close to the weights, bugs change what they claim."""

from __future__ import annotations

import json

import numpy as np
import pytest

from sparktriage.testbed.garbage import safetensors_io
from sparktriage.testbed.garbage.bugs import CATALOGUE, Reader, by_name, dequantize
from sparktriage.testbed.garbage.fp4 import quantize
from sparktriage.testbed.garbage.variants import build_variant, corrupt

LAYERS, EXPERTS, D = 2, 4, 128


def toy_tensors(seed=0) -> dict[str, np.ndarray]:
    rng = np.random.default_rng(seed)
    out = {"model.embed_tokens.weight": rng.normal(size=(50, D)).astype(np.float32)}
    for layer in range(LAYERS):
        out[f"model.layers.{layer}.mlp.gate.weight"] = rng.normal(size=(EXPERTS, D)).astype(np.float32)
        for e in range(EXPERTS):
            for proj in ("gate_proj", "up_proj", "down_proj"):
                out[f"model.layers.{layer}.mlp.experts.{e}.{proj}.weight"] = \
                    (rng.normal(size=(D, D)) * 0.02).astype(np.float32)
    return out


def expert(t, layer, e, proj="gate_proj"):
    return t[f"model.layers.{layer}.mlp.experts.{e}.{proj}.weight"]


def rel(a, b):
    with np.errstate(all="ignore"):
        return float(np.nanmean(np.abs(a - b)) / np.abs(b).mean())


def test_catalogue_covers_the_issue():
    names = {v.name for v in CATALOGUE}
    assert {"bf16", "nvfp4", "mxfp4"} <= names
    assert {v.severity for v in CATALOGUE} == {"control", "gross", "subtle"}
    assert sum(v.severity == "gross" for v in CATALOGUE) >= 8
    assert sum(v.severity == "subtle" for v in CATALOGUE) >= 5
    with pytest.raises(KeyError):
        by_name("no-such-bug")


@pytest.mark.parametrize("variant", CATALOGUE, ids=lambda v: v.name)
def test_variant_effect(variant):
    base = toy_tensors()
    with np.errstate(all="ignore"):
        out = corrupt(base, variant, LAYERS)
    assert out["model.embed_tokens.weight"] is base["model.embed_tokens.weight"]  # never quantized
    errors = {(l, e): rel(expert(out, l, e), expert(base, l, e)) for l in range(LAYERS) for e in range(EXPERTS)}
    if variant.severity == "control":
        assert max(errors.values()) < (0.2 if variant.fmt else 1e-12)
        return
    touched = {k for k in errors if variant.touches(*k, LAYERS)}
    untouched = set(errors) - touched
    assert all(errors[k] < 0.2 for k in untouched)  # the bug stays where it belongs
    assert all(errors[k] > 0.2 or not np.isfinite(errors[k]) for k in touched)


def test_gate_up_swap_and_expert_shift_move_whole_matrices():
    base = toy_tensors()
    swapped = corrupt(base, by_name("nvfp4-gate-up-swap"), LAYERS)
    assert rel(expert(swapped, 0, 1, "gate_proj"), expert(base, 0, 1, "up_proj")) < 0.2
    shifted = corrupt(base, by_name("nvfp4-expert-shift"), LAYERS)
    assert rel(expert(shifted, 1, 0), expert(base, 1, 1)) < 0.2
    assert rel(expert(shifted, 1, EXPERTS - 1), expert(base, 1, 0)) < 0.2


def test_e5m2_misread_of_scales_produces_nan_or_inf():
    w = toy_tensors()["model.layers.0.mlp.experts.0.up_proj.weight"]
    with np.errstate(all="ignore"):
        out = dequantize(quantize(w, "nvfp4"), Reader(scale_format="e5m2"))
    assert not np.isfinite(out).all()


def test_build_variant_writes_a_float32_checkpoint(tmp_path):
    src = tmp_path / "src"
    src.mkdir()
    safetensors_io.write(src / "model.safetensors", toy_tensors())
    (src / "config.json").write_text(json.dumps({"num_hidden_layers": LAYERS, "torch_dtype": "bfloat16"}))
    (src / "tokenizer.json").write_text("{}")
    out = build_variant(by_name("nvfp4-nibble-swap"), tmp_path / "out", source=src)
    tensors = safetensors_io.read(out / "model.safetensors")
    assert tensors["model.layers.1.mlp.experts.2.down_proj.weight"].dtype == np.float32
    assert json.loads((out / "config.json").read_text())["torch_dtype"] == "float32"
    assert json.loads((out / "sparktriage-variant.json").read_text())["severity"] == "gross"
    assert (out / "tokenizer.json").exists()
