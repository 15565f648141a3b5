"""Typed results of `reproduce`: what each input gave, and the whole result (docs/reproduce.md).

`Imported` is one input's contribution: fragments of a deployment (plain data in the shape of
the deployment YAML), the client nodes it describes, environment facts, unknown items and
notes. `ReproduceResult` is what `reproduce()` returns and what `reproduce.json` holds.
"""

from __future__ import annotations

from typing import Any, Literal, Optional

from pydantic import BaseModel, ConfigDict, Field

from sparktriage.config.client_code import ClientCode

Kind = Literal["serve", "docker", "compose", "collect-env", "env", "deployment", "recipe",
               "systemd", "kubernetes", "slurm"]
Severity = Literal["high", "medium", "low", "info"]


class _Data(BaseModel):
    model_config = ConfigDict(extra="forbid")


class InputRef(_Data):
    path: str
    kind: Kind


class Unknown(_Data):
    input: str = Field(description="the input file the item came from")
    text: str = Field(description="the setting as written (secrets replaced)")
    note: str = Field(description="what happened to it")


class Facts(_Data):
    """One node's software and settings, from collect-env, an env dump or a lab capture."""

    source: str
    node: Optional[str] = None
    versions: dict[str, Optional[str]] = Field(default_factory=dict)  # vllm, torch, nccl, ...
    system: dict[str, Optional[str]] = Field(default_factory=dict)  # os, kernel, arch
    gpu: dict[str, Optional[str]] = Field(default_factory=dict)  # model, count, interconnect
    build: dict[str, Optional[str]] = Field(default_factory=dict)  # cuda_archs
    env: dict[str, str] = Field(default_factory=dict)
    interfaces: list[str] = Field(default_factory=list)  # network interfaces (lab captures)


class ClientNode(_Data):
    """One node of the client's deployment, as its command line (or the input order) says."""

    name: str
    rank: int
    input: str
    headless: bool = False
    master_addr: Optional[str] = None
    env: dict[str, str] = Field(default_factory=dict)  # the node's own command environment
    argv_differs: list[str] = Field(default_factory=list)
    assumed: bool = Field(False, description="implied by --nnodes, no command of its own given")


class Imported(_Data):
    """What one input contributed."""

    input: InputRef
    deployment: dict[str, Any] = Field(default_factory=dict)
    nodes: list[ClientNode] = Field(default_factory=list)
    facts: list[Facts] = Field(default_factory=list)
    unknown: list[Unknown] = Field(default_factory=list)
    notes: list[str] = Field(default_factory=list)
    mapped: list[str] = Field(default_factory=list)  # "--max-num-seqs -> serve.max_num_seqs"
    line: Optional[int] = Field(None, description="the line of the command whose options "
                                                  "`deployment` holds, where the input has one")
    shape: Optional[str] = Field(None, description="what runs the server, where the input "
                                 "says more than a command line: `a Kubernetes LeaderWorkerSet`, "
                                 "`a SLURM job` (named in refusals)")
    shape_detail: Optional[str] = Field(None, description="its pods or nodes and their GPUs")
    gpus_per_node: Optional[int] = Field(None, description="the GPUs each node of the job asks "
                                         "for (`#SBATCH --gres=gpu:4`, an `srun` line's own)")
    gpus_asked: Optional[str] = Field(None, description="the option that asks for them, as "
                                      "written (`--gres=gpu:4`), named in rows and traps")
    command_at: Optional[str] = Field(None, description="FILE:LINE of the server command where "
                                      "it is in another file than the input (a script it runs)")
    client_lab: Optional[str] = Field(None, description="the `lab:` a client deployment YAML "
                                      "names, as `lab: NAME` (never used: clientcode.py)")
    others: list["Imported"] = Field(default_factory=list, description="independent servers "
                                     "of the same input, each as it would be reproduced alone "
                                     "(importers/apart.py); placed beside the first by "
                                     "reproduce/place/beside.py")


class DiffItem(_Data):
    key: str
    client: Any = None
    lab: Any = None
    why: str
    severity: Severity
    client_node: Optional[str] = None
    lab_node: Optional[str] = None
    source: str = ""


class TrapHit(_Data):
    id: str
    setting: str
    why: str
    fix: str
    severity: Severity
    source: str = ""
    needs_lab: bool = False
    status: Literal["fires", "possible"] = "fires"
    unknown_facts: list[str] = Field(default_factory=list)  # what would decide a possible trap


class NodeAssignment(_Data):
    client: Optional[str]
    lab: str
    argv: list[str]
    env: dict[str, str]


class LabPlan(_Data):
    lab: str
    nodes: list[NodeAssignment] = Field(default_factory=list)
    statements: list[str] = Field(default_factory=list)
    launchable: bool = True
    client_code: list[ClientCode] = Field(default_factory=list, description=(
        "what the launch runs by the client's choice (runs client code): launch and session "
        "refuse until each is accepted by name"))


class ReproduceResult(_Data):
    schema_version: Literal[1] = 1
    inputs: list[InputRef]
    deployment: dict[str, Any]
    unknown: list[Unknown] = Field(default_factory=list)
    diff: list[DiffItem] = Field(default_factory=list)
    traps: list[TrapHit] = Field(default_factory=list)
    placeholders: list[str] = Field(default_factory=list)
    mapped: list[str] = Field(default_factory=list)
    notes: list[str] = Field(default_factory=list)
    plan: Optional[LabPlan] = None
    client_nodes: list[ClientNode] = Field(default_factory=list)
    lab_capture: dict[str, Any] = Field(default_factory=dict)  # node -> "live"/"file"/error
    out_dir: Optional[str] = None

    def to_json(self) -> dict:
        return self.model_dump(mode="json", exclude={"out_dir"})
