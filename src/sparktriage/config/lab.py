"""The lab: the machines a deployment runs on and how to reach them (docs/launch.md).

A node is reached over OpenSSH when `ssh` names a destination (a host, `user@host`, or an
alias of the ssh_config in use), and is this machine when `ssh` is absent. `host` is the
address other nodes and the collecting machine use for it (master address, API endpoint).
Names become folder names in bundles and are held to a strict pattern; SSH destinations and
jump hosts are checked so that no value can turn into an ssh option.
"""

from __future__ import annotations

import re
from typing import Literal

from pydantic import BaseModel, ConfigDict, Field, field_validator, model_validator

from sparktriage.errors import ConfigError
from sparktriage.config.ssh_names import check_destination, check_jump

NODE_NAME = re.compile(r"^[A-Za-z0-9_][A-Za-z0-9._-]{0,63}\Z")
ENV_NAME = re.compile(r"^[A-Za-z_][A-Za-z0-9_]*\Z")


def env_mapping(value: object) -> dict[str, str]:
    """An environment block: names checked, scalar values as strings (booleans refused)."""
    if value is None:
        return {}
    if not isinstance(value, dict):
        raise ValueError("must be a mapping of NAME: value")
    out = {}
    for name, item in value.items():
        if not isinstance(name, str) or not ENV_NAME.match(name):
            raise ValueError(f"{name!r} is not an environment variable name")
        if isinstance(item, bool):
            raise ValueError(f"{name}: write booleans as quoted strings (\"1\", \"true\")")
        if item is None or isinstance(item, (dict, list)):
            raise ValueError(f"{name}: value must be a string or a number")
        out[name] = str(item)
    return out


class Strict(BaseModel):
    model_config = ConfigDict(extra="forbid", frozen=True)


class LabNode(Strict):
    name: str = Field(description="Node name (bundle folder, log prefix).")
    host: str = Field("127.0.0.1", description="Address of the node as peers and the collecting machine reach it.")
    ssh: str | None = Field(None, description="SSH destination; absent: this machine.")
    port: int | None = Field(None, ge=1, le=65535, description="SSH port (else ssh_config's).")
    identity_file: str | None = Field(None, description="SSH private key (else ssh_config's).")
    proxy_jump: str | None = Field(None, description="Jump host(s) for ssh -J (else ssh_config's ProxyJump).")
    role: Literal["head", "worker"] | None = Field(None, description="head or worker; default: the first node is the head.")
    interfaces: list[str] = Field(default_factory=list, description="The fast network interfaces (informational).")
    gpu: str | None = Field(None, description="GPU kind, e.g. gb10, h200, none (informational).")
    gpus: int | None = Field(None, ge=0, le=64, description=(
        "GPUs on this node (count); default from `gpu`: 1 for gb10 / DGX Spark, 0 for none/cpu, "
        "else unknown. reproduce places tp x pp x dp ranks at this many per node."))
    python: str = Field("python3", description="Interpreter that runs the node agent on the node.")
    vllm_python: str | None = Field(None, description=(
        "The Python interpreter of the node's own vLLM: reproduce's live capture reads its "
        "packages. Default: on this machine, the interpreter of the `vllm` on sparktriage's "
        "PATH; on an SSH node, `python`."))
    pyspy: str | None = Field(None, description="py-spy executable on the node (else looked up).")
    env: dict[str, str] = Field(default_factory=dict, description="Environment for every process on this node.")

    def gpu_count(self) -> int | None:
        """GPUs on the node: `gpus`, else 1 for a GB10 / DGX Spark, 0 for none/cpu, else None."""
        if self.gpus is not None:
            return self.gpus
        kind = (self.gpu or "").lower()
        if re.search(r"gb10|spark|gx10", kind):
            return 1
        if kind in ("none", "cpu"):
            return 0
        return None

    @field_validator("name")
    @classmethod
    def _name(cls, value: str) -> str:
        if not NODE_NAME.match(value):
            raise ValueError("must be 1-64 of [A-Za-z0-9._-], not starting with '.' or '-'")
        return value

    @field_validator("ssh")
    @classmethod
    def _ssh(cls, value: str | None) -> str | None:
        if value is not None:
            try:
                check_destination(value)
            except ConfigError as exc:
                raise ValueError(exc.message) from None
        return value

    @field_validator("proxy_jump")
    @classmethod
    def _jump(cls, value: str | None) -> str | None:
        if value is not None:
            try:
                check_jump(value)
            except ConfigError as exc:
                raise ValueError(exc.message) from None
        return value

    @field_validator("env", mode="before")
    @classmethod
    def _env(cls, value: object) -> dict[str, str]:
        return env_mapping(value)


class Lab(Strict):
    schema_version: Literal[1] = 1
    name: str | None = None
    ssh_config: str | None = Field(None, description="ssh_config file for every node (ssh -F); default ~/.ssh/config.")
    nodes: list[LabNode] = Field(min_length=1)

    @model_validator(mode="after")
    def _unique(self) -> "Lab":
        names = [n.name for n in self.nodes]
        duplicates = sorted({n for n in names if names.count(n) > 1})
        if duplicates:
            raise ValueError(f"duplicate node names: {', '.join(duplicates)}")
        heads = [n.name for n in self.nodes if n.role == "head"]
        if len(heads) > 1:
            raise ValueError(f"more than one head node: {', '.join(heads)}")
        return self

    def node(self, name: str) -> LabNode:
        for n in self.nodes:
            if n.name == name:
                return n
        raise KeyError(name)
