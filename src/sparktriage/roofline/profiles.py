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


from sparktriage.config.roofline import HardwareProfile, ModelProfile, RooflineSpec
from sparktriage.yamldoc import load_model
from sparktriage.errors import ConfigError


P = TypeVar("P", HardwareProfile, ModelProfile)
__all__ = ["HardwareProfile", "ModelProfile", "RooflineSpec", "load_profile", "shipped"]
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
