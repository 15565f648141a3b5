"""The catalogue of FP4 dispatch bugs, each applied where real ones live: in dequantization.

A `Reader` says how a (possibly wrong) kernel reads a correct FP4 tensor: nibble order, scale
layout and byte format, block offset, global scale, packing axis. A `Variant` combines a format,
a reader, the structural mistakes of an MoE dispatch (expert index shifted, gate/up halves
swapped) and a scope (some layers or experts only). `severity` is what the bug is expected to do
to the model, set from its mechanism before any measurement (docs/garbage.md): `control`
(correct round trip: must never be called garbage), `gross` (a whole-tensor misread: must be
called garbage) or `subtle` (a placement or partial bug: must be at least suspect against a
baseline).
"""

from __future__ import annotations

from dataclasses import dataclass, field

import numpy as np

from sparktriage.testbed.garbage import fp4


@dataclass(frozen=True)
class Reader:
    """How the dequantizer reads one FP4 tensor (the defaults are the correct reading)."""

    low_nibble_first: bool = True
    scale_format: str | None = None  # read scale bytes as e4m3 / e5m2 / ue8m0 (None: correct)
    scales_as_swizzled: bool = False  # linear scales read through the 128x4 swizzle
    scale_block_shift: int = 0  # block j reads the scale of block j + shift; past the end, padding (0)
    global_scale: str = "ok"  # ok / missing (taken as 1) / inverted (the divisor multiplied)
    transposed_packing: bool = False  # bytes read as if packed along the output axis


CORRECT = Reader()


def dequantize(t: fp4.FP4Tensor, reader: Reader = CORRECT) -> np.ndarray:
    """The float32 weight [N, K] that a kernel reading `t` with `reader` computes with."""
    n, k = t.shape
    packed, scales = t.packed, t.scales
    if reader.transposed_packing:
        packed = packed.reshape(-1).reshape(k, n // 2)
        scales = scales.reshape(-1).reshape(k, n // t.block)
    codes = fp4.unpack_nibbles(packed, low_first=reader.low_nibble_first)
    rows, cols = scales.shape
    if reader.scales_as_swizzled:
        padded, pr, pc = fp4._padded(scales)
        scales = fp4.unswizzle(padded.reshape(-1), rows, cols)
    if reader.scale_block_shift:
        # Off by one block (vllm#48898): each block reads its neighbour's scale and the last one
        # reads the zero-filled padding column of the kernel layout.
        shift = reader.scale_block_shift
        padded = np.zeros((rows, cols + shift), dtype=scales.dtype)
        padded[:, :cols] = scales
        scales = padded[:, shift:]
    multipliers = fp4.decode_scales(t, scales, reader.scale_format)
    values = fp4.e2m1_decode(codes).reshape(rows, cols, t.block) * multipliers[..., None]
    values = values.reshape(rows, cols * t.block)
    if t.fmt == "nvfp4":
        g = np.float32(t.global_scale)
        factor = {"ok": g, "missing": np.float32(1.0), "inverted": np.float32(1.0) / g}[reader.global_scale]
        values = values * factor
    if reader.transposed_packing:
        values = values.T
    return np.ascontiguousarray(values, dtype=np.float32)


@dataclass(frozen=True)
class Variant:
    """One served model: the trained checkpoint, FP4 round-tripped with or without a bug."""

    name: str
    fmt: str | None  # None: the trained checkpoint as it is (no FP4)
    severity: str  # control / gross / subtle
    description: str
    reader: Reader = CORRECT
    expert_shift: int = 0  # expert e computes with the weights of expert e + shift
    gate_up_swap: bool = False
    layers: tuple[int, ...] | None = None  # None: every layer; else only these (negative ok)
    experts: tuple[int, ...] | None = None  # None: every expert; else only these
    tags: tuple[str, ...] = field(default_factory=tuple)

    def touches(self, layer: int, expert: int, num_layers: int) -> bool:
        """Whether the bug applies to this expert of this layer."""
        if self.layers is not None and layer not in {l % num_layers for l in self.layers}:
            return False
        return self.experts is None or expert in self.experts


CATALOGUE: tuple[Variant, ...] = (
    Variant("bf16", None, "control", "the trained checkpoint, no FP4"),
    Variant("nvfp4", "nvfp4", "control", "NVFP4 round trip, read correctly"),
    Variant("mxfp4", "mxfp4", "control", "MXFP4 round trip, read correctly"),
    Variant("nvfp4-nibble-swap", "nvfp4", "gross", "high nibble read as the even element",
            Reader(low_nibble_first=False)),
    Variant("mxfp4-nibble-swap", "mxfp4", "gross", "high nibble read as the even element",
            Reader(low_nibble_first=False)),
    Variant("nvfp4-scale-as-e5m2", "nvfp4", "gross", "E4M3 block scales decoded as E5M2",
            Reader(scale_format="e5m2")),
    Variant("nvfp4-scale-as-ue8m0", "nvfp4", "gross", "E4M3 block scales decoded as UE8M0",
            Reader(scale_format="ue8m0")),
    Variant("mxfp4-scale-as-e4m3", "mxfp4", "gross", "E8M0 block scales decoded as E4M3",
            Reader(scale_format="e4m3")),
    Variant("nvfp4-global-scale-missing", "nvfp4", "gross", "per-tensor FP32 scale ignored",
            Reader(global_scale="missing")),
    Variant("nvfp4-global-scale-inverted", "nvfp4", "gross",
            "per-tensor scale used as a divisor (compressed-tensors convention not inverted)",
            Reader(global_scale="inverted")),
    Variant("nvfp4-wrong-pack-axis", "nvfp4", "gross", "bytes read as packed along the output axis",
            Reader(transposed_packing=True)),
    Variant("nvfp4-expert-shift", "nvfp4", "gross", "expert index off by one in every layer",
            expert_shift=1),
    Variant("nvfp4-swizzle-as-linear", "nvfp4", "subtle",
            "linear block scales read through the 128x4 kernel swizzle", Reader(scales_as_swizzled=True)),
    Variant("nvfp4-scale-block-shift", "nvfp4", "subtle",
            "each block reads the next block's scale, the last one the zero padding",
            Reader(scale_block_shift=1)),
    Variant("nvfp4-gate-up-swap", "nvfp4", "subtle", "w1/w3 (gate/up) halves swapped",
            gate_up_swap=True),
    Variant("nvfp4-nibble-swap-one-expert", "nvfp4", "subtle", "nibble order swapped in expert 3 only",
            Reader(low_nibble_first=False), experts=(3,)),
    Variant("nvfp4-nibble-swap-last-layer", "nvfp4", "subtle", "nibble order swapped in the last layer only",
            Reader(low_nibble_first=False), layers=(-1,)),
    Variant("nvfp4-swizzle-last-layer", "nvfp4", "subtle", "scale swizzle bug in the last layer only",
            Reader(scales_as_swizzled=True), layers=(-1,)),
)


def by_name(name: str) -> Variant:
    for variant in CATALOGUE:
        if variant.name == name:
            return variant
    known = ", ".join(v.name for v in CATALOGUE)
    raise KeyError(f"unknown variant {name!r} (known: {known})")
