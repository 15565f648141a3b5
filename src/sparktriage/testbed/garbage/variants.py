"""Write a served copy of the trained model for one catalogue variant.

Only the expert MLP weights go through FP4, as in real NVFP4/MXFP4 MoE checkpoints (attention,
router, embeddings and the LM head stay in high precision). Each expert weight is quantized
correctly, then dequantized by the variant's reader (the bug), optionally with the expert
index shifted or gate/up swapped, and written as float32: an ordinary checkpoint vLLM serves.
"""

from __future__ import annotations

import json
import re
import shutil
from pathlib import Path

import numpy as np

from sparktriage.errors import InputError
from sparktriage.testbed.garbage import safetensors_io
from sparktriage.testbed.garbage.bugs import CORRECT, Variant, dequantize
from sparktriage.testbed.garbage.fp4 import quantize
from sparktriage.testbed.paths import repo_root

MODEL_FILES = ("tokenizer.json", "tokenizer_config.json", "chat_template.jinja", "generation_config.json")
_EXPERT = re.compile(r"model\.layers\.(\d+)\.mlp\.experts\.(\d+)\.(gate_proj|up_proj|down_proj)\.weight")


def trained_model() -> Path:
    """The committed tiny MoE checkpoint (provision/garbage/model in the source checkout)."""
    root = repo_root()
    path = root / "provision" / "garbage" / "model" if root else None
    if path is None or not (path / "model.safetensors").exists():
        raise InputError("the tiny MoE model is missing: give --model DIR, or put it at the test bed's "
                         "models/tiny-moe (provision/setup.sh copies provision/garbage/model there)")
    return path


def corrupt(tensors: dict[str, np.ndarray], variant: Variant, num_layers: int) -> dict[str, np.ndarray]:
    """The tensors of `variant`: expert weights round-tripped through FP4 (and the bug)."""
    if variant.fmt is None:
        return dict(tensors)
    out = dict(tensors)
    experts: dict[tuple[int, int, str], np.ndarray] = {}
    for name, weight in tensors.items():
        match = _EXPERT.fullmatch(name)
        if not match:
            continue
        layer, expert, proj = int(match[1]), int(match[2]), match[3]
        reader = variant.reader if variant.touches(layer, expert, num_layers) else CORRECT
        experts[(layer, expert, proj)] = dequantize(quantize(weight, variant.fmt), reader)
    num_experts = 1 + max(e for _, e, _ in experts)
    for (layer, expert, proj), weight in experts.items():
        source_expert, source_proj = expert, proj
        if variant.touches(layer, expert, num_layers):
            source_expert = (expert + variant.expert_shift) % num_experts
            if variant.gate_up_swap and proj != "down_proj":
                source_proj = "up_proj" if proj == "gate_proj" else "gate_proj"
        out[f"model.layers.{layer}.mlp.experts.{expert}.{proj}.weight"] = experts[(layer, source_expert, source_proj)]
    return out


def build_variant(variant: Variant, out_dir: Path, source: Path | None = None) -> Path:
    """Write `variant` of the trained model to `out_dir` (created); return it."""
    source = source or trained_model()
    out_dir.mkdir(parents=True, exist_ok=True)
    config = json.loads((source / "config.json").read_text())
    tensors = safetensors_io.read(source / "model.safetensors")
    with np.errstate(all="ignore"):  # bugs may overflow to inf/NaN, as the real ones do
        tensors = corrupt(tensors, variant, config["num_hidden_layers"])
    safetensors_io.write(out_dir / "model.safetensors", tensors)
    config["torch_dtype"] = "float32"
    (out_dir / "config.json").write_text(json.dumps(config, indent=2))
    for name in MODEL_FILES:
        if (source / name).exists():
            shutil.copyfile(source / name, out_dir / name)
    meta = {"variant": variant.name, "format": variant.fmt, "severity": variant.severity,
            "description": variant.description}
    (out_dir / "sparktriage-variant.json").write_text(json.dumps(meta, indent=2))
    return out_dir
