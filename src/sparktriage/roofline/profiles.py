"""Hardware and model profiles for the roofline: shipped YAML by name, or user YAML files.

A profile reference is a shipped name (`gb10`, `kimi-k2`, `deepseek-v3`, `qwen3-235b`,
`gpt-oss-120b`), a path to a YAML file of the same shape (a value ending in `.yaml`/`.yml`),
or an inline mapping. Files are read through the project's YAML loader (safe_load, unknown keys
are errors, line numbers in messages).
"""

from __future__ import annotations

from importlib import resources
from pathlib import Path
from typing import Literal, TypeVar, Union

from pydantic import Field

from sparktriage.config.lab import Strict
from sparktriage.config.yamlload import load_model
from sparktriage.errors import ConfigError


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


P = TypeVar("P", HardwareProfile, ModelProfile)
_KIND: dict[type, str] = {HardwareProfile: "hardware", ModelProfile: "models"}


def shipped(kind: Literal["hardware", "models"]) -> list[str]:
    """Names of the shipped profiles of one kind."""
    folder = resources.files("sparktriage.roofline") / "profiles" / kind
    return sorted(p.name.rsplit(".", 1)[0] for p in folder.iterdir() if p.name.endswith(".yaml"))


def load_profile(model: type[P], ref: Union[str, P], base: Path | None = None) -> P:
    """Resolve a profile reference (name, YAML path, or an already validated profile)."""
    if not isinstance(ref, str):
        return ref
    kind = _KIND[model]
    if ref.endswith((".yaml", ".yml")):
        path = Path(ref)
        if not path.is_absolute() and base is not None:
            path = base / path
        if not path.is_file():
            raise ConfigError(f"roofline {kind} profile {ref}: no such file")
        return load_model(model, path)
    if ref not in shipped(kind):  # type: ignore[arg-type]
        raise ConfigError(f"roofline {kind} profile {ref!r} is not shipped (shipped: "
                          f"{', '.join(shipped(kind))}); give a YAML path for your own")  # type: ignore[arg-type]
    with resources.as_file(resources.files("sparktriage.roofline") / "profiles" / kind
                           / f"{ref}.yaml") as path:
        return load_model(model, path)
