"""Roofline profiles as configuration: hardware, model, and the deployment's `roofline:` block.

The shipped profiles and their loading live in `sparktriage.roofline.profiles`; the formula in
`sparktriage.roofline.ceiling` (docs/roofline.md).
"""

from __future__ import annotations

from typing import Union

from pydantic import Field, model_validator

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
    experts: int | None = Field(None, ge=1, description="Routed experts per MoE layer (absent: a dense model).")
    experts_per_token: int | None = Field(None, ge=1, description="Routed experts each token goes to (top-k).")
    shared_experts: int = Field(0, ge=0, description="Experts every token uses (counted in the dense bytes).")
    routed_share: float | None = Field(None, ge=0, lt=1, description="Share of the active bytes per token that are routed experts.")
    routing_correlation: float = Field(0.0, ge=0, lt=1, description="Share of a further token's routed experts that repeat the previous token's (0: independent routing, the upper bound on the union).")

    @model_validator(mode="after")
    def _moe_fields_together(self) -> "ModelProfile":
        given = [self.experts is not None, self.experts_per_token is not None, self.routed_share is not None]
        if any(given) and not all(given):
            raise ValueError("an MoE profile gives experts, experts_per_token and routed_share together")
        if self.experts is not None and self.experts_per_token > self.experts:
            raise ValueError("experts_per_token must not exceed experts")
        return self

    @property
    def is_moe(self) -> bool:
        return self.experts is not None


class RooflineSpec(Strict):
    """`roofline:` in a deployment: which profiles, and the layout when it differs from `parallelism`."""

    hardware: Union[str, HardwareProfile] = Field(description="Hardware profile: shipped name, YAML path, or inline.")
    model: Union[str, ModelProfile] = Field(description="Model profile: shipped name, YAML path, or inline.")
    nodes: int | None = Field(None, ge=1, description="Nodes on the decode path; default: the deployment's nodes.")
    pipeline_stages: int | None = Field(None, ge=1, description="Pipeline stages; default: parallelism.pp.")
    allreduces_per_layer: int = Field(2, ge=0, description="Tensor/expert-parallel all-reduces per layer (attention, MoE).")
