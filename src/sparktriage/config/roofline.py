"""Roofline profiles as configuration: hardware, model, and the deployment's `roofline:` block.

The shipped profiles and their loading live in `sparktriage.roofline.profiles`; the formula in
`sparktriage.roofline.ceiling` (docs/roofline.md).
"""

from __future__ import annotations

from typing import Union

from pydantic import Field

from sparktriage.config.lab import Strict


class HardwareProfile(Strict):
    """One node's memory and its links to the other nodes."""

    name: str = "custom"
    description: str = ""
    memory_bandwidth_gbs: float = Field(gt=0, description="Memory bandwidth per node, GB/s (10^9 bytes/s).")
    memory_gib: float | None = Field(None, gt=0, description="Memory per node, GiB.")
    interconnect_latency_us: float = Field(0.0, ge=0, description="Latency of one small-message hop between nodes, µs.")
    interconnect_bandwidth_gbs: float | None = Field(None, gt=0, description="Link bandwidth per node, GB/s.")


class ModelProfile(Strict):
    """What one decoded token reads: active parameters, their width, the layer structure."""

    name: str = "custom"
    description: str = ""
    total_params_b: float | None = Field(None, gt=0, description="All parameters, billions.")
    active_params_b: float = Field(gt=0, description="Parameters read per token (MoE: routed + shared), billions.")
    layers: int = Field(ge=1, description="Decoder layers.")
    hidden_size: int | None = Field(None, ge=1, description="Hidden size (bytes per all-reduce = hidden × 2).")
    bits_per_weight: float = Field(gt=0, le=32, description="Bits per stored weight (FP4: 4).")
    scale_overhead: float = Field(0.0, ge=0, le=1, description="Extra bytes for block scales, as a fraction of the weight bytes.")


class RooflineSpec(Strict):
    """`roofline:` in a deployment: which profiles, and the layout when it differs from `parallelism`."""

    hardware: Union[str, HardwareProfile] = Field(description="Hardware profile: shipped name, YAML path, or inline.")
    model: Union[str, ModelProfile] = Field(description="Model profile: shipped name, YAML path, or inline.")
    nodes: int | None = Field(None, ge=1, description="Nodes on the decode path; default: the deployment's nodes.")
    pipeline_stages: int | None = Field(None, ge=1, description="Pipeline stages; default: parallelism.pp.")
    allreduces_per_layer: int = Field(2, ge=0, description="Tensor/expert-parallel all-reduces per layer (attention, MoE).")
