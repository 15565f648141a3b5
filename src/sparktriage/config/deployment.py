"""The deployment: what to serve, how, on which lab nodes (docs/launch.md has the reference).

Units are in the field descriptions. Relative paths: `lab` (a file), `lab.ssh_config` and
`identity_file` are relative to the YAML file; `model.path`, `engine.vllm` and `pyspy` are
paths on the nodes and are taken as written, except that a value starting with `./` or `../`
is resolved against the YAML file's folder (useful for a local test bed).
"""

from __future__ import annotations

import os
import re
from pathlib import Path
from typing import Any, Literal, Union

from pydantic import Field, field_validator, model_validator

from sparktriage.config.client_code import ClientCode
from sparktriage.config.lab import Lab, Strict, env_mapping
from sparktriage.yamldoc import load_model, load_with_lines, merge_errors, validate
from sparktriage.errors import ConfigError, SourceLocation
from sparktriage.config.roofline import RooflineSpec
from sparktriage.config import speculative_legacy
from sparktriage.config.speculative_flag import places as speculative_places

FLAG_NAME = re.compile(r"^[a-z0-9][a-z0-9-]*\Z")
Scalar = Union[str, int, float, bool, None]


class ModelSpec(Strict):
    path: str = Field(description="Model folder or hub id as vLLM takes it (first argument of vllm serve).")
    name: str | None = Field(None, description="Served model name (--served-model-name).")
    size_gib: float | None = Field(None, ge=0, description="Checkpoint size in GiB (informational).")
    quantization: str | None = Field(None, description="--quantization, e.g. modelopt_fp4.")
    tokenizer: str | None = None
    trust_remote_code: bool = False


class Parallelism(Strict):
    tp: int = Field(1, ge=1, description="Tensor-parallel size.")
    pp: int = Field(1, ge=1, description="Pipeline-parallel size.")
    dp: int = Field(1, ge=1, description="Data-parallel size.")
    ep: bool = Field(False, description="Expert parallelism (--enable-expert-parallel).")
    nodes: int | None = Field(None, ge=1, description="Nodes used; default: all nodes listed.")


class Engine(Strict):
    backend: Literal["mp", "ray"] = Field("mp", description="Executor: native multi-node (mp) or Ray.")
    vllm: Union[str, list[str]] = Field("vllm", description="Command that runs the vLLM CLI on the nodes (a path, or an argv prefix).")
    version: str | None = Field(None, description="Expected vLLM version (checked against the capture).")
    image: str | None = Field(None, description="Container image; set: every process runs in it.")
    runtime: Literal["docker", "podman"] = "docker"
    container_args: list[str] = Field(default_factory=list, description="Extra arguments for the container run.")
    ray: str = Field("ray", description="Ray CLI on the nodes (Ray backend).")
    ray_port: int = Field(6379, ge=1, le=65335, description="Ray's GCS port; the other Ray ports follow it (docs/launch.md, Ray backend).")
    ray_object_store_mb: int | None = Field(None, ge=76, description="Ray object store per node in MB (Ray's minimum is 75 MiB); default: Ray's choice.")
    ray_temp_dir: str | None = Field(None, description="Ray's temp folder; each node uses RAY_TEMP_DIR/NODE (nodes sharing a filesystem). Default: Ray's /tmp/ray.")
    ray_args: list[str] = Field(default_factory=list, description="Extra `ray start` arguments on every node.")
    ray_node_args: dict[str, list[str]] = Field(default_factory=dict, description="Extra `ray start` arguments per node name (e.g. --resources on one node).")
    master_port: int = Field(29501, ge=1, le=65535, description="torch.distributed port (mp multi-node).")


class Serve(Strict):
    host: str = Field("0.0.0.0", description="--host the API binds to.")
    port: int = Field(8000, ge=1, le=65535, description="--port of the API.")
    max_model_len: int | None = Field(None, ge=1)
    gpu_memory_utilization: float | None = Field(None, gt=0, le=1)
    dtype: str | None = None
    kv_cache_dtype: str | None = None
    enforce_eager: bool | None = None
    max_num_seqs: int | None = Field(None, ge=1)
    max_num_batched_tokens: int | None = Field(None, ge=1)
    flags: dict[str, Scalar] = Field(default_factory=dict, description="Any other vllm serve option: name (without --) to value; true = bare flag, false/null = left out.")
    extra_args: list[str] = Field(default_factory=list, description="Appended to the argv as given.")

    @field_validator("flags")
    @classmethod
    def _flags(cls, value: dict) -> dict:
        for name in value:
            if not FLAG_NAME.match(name):
                raise ValueError(f"{name!r} is not an option name (lowercase, digits, dashes)")
        return value


class Speculative(Strict):
    method: str = Field(description="ngram, eagle, eagle3, mtp, draft_model, ...")
    num_speculative_tokens: int = Field(ge=1)
    model: str | None = None
    extra: dict[str, Any] = Field(default_factory=dict, description="Other speculative-config keys, as the JSON of --speculative-config has them.")

    @field_validator("extra")
    @classmethod
    def _extra(cls, value: dict) -> dict:
        named = sorted(set(value) & {"method", "model", "num_speculative_tokens"})
        if named:
            raise ValueError(f"{', '.join(named)} belong(s) in speculative itself, not in extra")
        return value


class Load(Strict):
    format: str | None = Field(None, description="--load-format (auto, safetensors, fastsafetensors, instanttensor, runai_streamer, ...).")
    strategy: str | None = Field(None, description="--safetensors-load-strategy (lazy, eager, prefetch).")
    extra_config: dict[str, Scalar] | None = Field(None, description="--model-loader-extra-config.")
    download_dir: str | None = None


class Timeouts(Strict):
    startup_s: float = Field(1800.0, gt=0, description="Deadline from launch to ready, seconds.")
    stage_s: float = Field(300.0, gt=0, description="Deadline for a launch stage's marker (Ray start), seconds.")
    teardown_grace_s: float = Field(20.0, ge=0, description="SIGTERM to SIGKILL, seconds.")
    link_s: float = Field(30.0, gt=0, description="Silence after which a node link counts as lost, seconds.")
    observe_failure_s: float = Field(0.0, ge=0, le=3600, description="After a failure before ready, keep collecting until no node logged a line for this long, then tear down (do the others hang?), seconds; 0: tear down at once.")


class CollectSettings(Strict):
    interval_s: float = Field(1.0, gt=0)
    stacks_interval_s: float | None = Field(15.0, gt=0, description="null: stacks only on demand and at the end.")
    disable: list[str] = Field(default_factory=list)


class ClientStep(Strict):
    """A step the client's recipe tool runs besides the server (docs/reproduce.md, "Client
    steps"): client code, which launch runs only where it can and once accepted."""

    name: str = Field(description="Stable name: `mod:NAME`, `pre_exec:N`, `post_exec:N`, `build:BUILDER`.")
    kind: Literal["mod", "pre_exec", "post_exec", "build"]
    when: Literal["image", "before-serve", "after-serve"] = Field(description="Building the image, in each server container before the server starts, or after it is up.")
    run: list[str] = Field(default_factory=list, description="Shell text, as the recipe writes it (a mod: its run.sh); empty where the recipe gives none.")
    source: str = Field("", description="Where the recipe says so (file:line).")
    runnable: bool = Field(False, description="Whether launch can run it as planned (in the server container, before the server).")
    why: str = Field("", description="Why launch cannot run it, where it cannot.")


class Deployment(Strict):
    schema_version: Literal[1] = 1
    name: str = "deployment"
    lab: Union[str, Lab] = Field(description="Lab file (path) or an inline lab.")
    nodes: list[str] | None = Field(None, description="Lab nodes to use, head first; default: all.")
    model: ModelSpec
    parallelism: Parallelism = Parallelism()
    engine: Engine = Engine()
    serve: Serve = Serve()
    speculative: Speculative | None = None
    load: Load = Load()
    env: dict[str, str] = Field(default_factory=dict, description="Environment for every process.")
    node_env: dict[str, dict[str, str]] = Field(default_factory=dict, description="Per node name: environment added on that node.")
    ready: Literal["api", "log"] = Field("api", description="Ready when GET /health answers 200 (api) or when the log says so (log).")
    timeouts: Timeouts = Timeouts()
    collect: CollectSettings = CollectSettings()
    roofline: RooflineSpec | None = Field(None, description="Hardware and model profiles for the decode ceiling (docs/roofline.md).")
    client_code: list[ClientCode] = Field(default_factory=list, description="What the client's configuration runs that no other field shows (recipe mods, pre-launch scripts, the client's own program paths), as reproduce recorded it; launch and session refuse until each is accepted (docs/security.md).")
    steps: list[ClientStep] = Field(default_factory=list, exclude_if=lambda steps: not steps, description="The client's own steps around the server (recipe mods, pre_exec, image builds), in the order its tool runs them.")

    @field_validator("env", mode="before")
    @classmethod
    def _env(cls, value: object) -> dict[str, str]:
        return env_mapping(value)

    @field_validator("node_env", mode="before")
    @classmethod
    def _node_env(cls, value: object) -> dict:
        if not isinstance(value, dict):
            raise ValueError("must map node names to environment blocks")
        return {k: env_mapping(v) for k, v in value.items()}

    @model_validator(mode="after")
    def _shape(self) -> "Deployment":
        given = speculative_places(self.speculative, self.serve.flags, self.serve.extra_args)
        if len(given) > 1:
            raise ValueError(f"the speculative config is given {len(given)} times ({', '.join(given)}): "
                             "vLLM keeps only the last --speculative-config; keep one")
        legacy = speculative_legacy.named(self.serve.flags, self.serve.extra_args)
        if legacy:
            raise ValueError(f"{legacy[0]}: a speculative option of vLLM before 0.8, which vLLM "
                             "0.32 refuses; give speculative: (method, num_speculative_tokens) "
                             "instead (sparktriage reproduce translates a client's serve line)")
        p = self.parallelism
        world = p.tp * p.pp * p.dp
        if isinstance(self.lab, Lab):
            names = [n.name for n in self.lab.nodes]
            for name in (self.nodes or []) + list(self.node_env):
                if name not in names:
                    raise ValueError(f"node {name!r} is not in the lab ({', '.join(names)})")
            count = len(self.nodes or names)
            if p.nodes is not None and p.nodes != count:
                raise ValueError(f"parallelism.nodes is {p.nodes} but {count} nodes are used")
            if count > 1 and self.engine.backend == "mp" and world % count:
                raise ValueError(f"tp*pp*dp = {world} must be a multiple of the {count} nodes")
        return self


def _resolve(value: str | None, base: Path) -> str | None:
    if value and value.startswith(("./", "../")):
        return os.path.normpath(base / value)  # symlinks kept: the path the user wrote
    return value


def load_deployment(path: Path, lab_override: Path | None = None) -> Deployment:
    """Read a deployment YAML (and its lab file), resolve relative paths, validate it all."""
    data, marks = load_with_lines(path)
    if not isinstance(data, dict):
        raise ConfigError("expected a mapping at the top level",
                          location=SourceLocation(str(path), 1))
    base = Path(os.path.abspath(path)).parent
    lab_ref = str(lab_override) if lab_override else data.get("lab")
    if isinstance(lab_ref, str):
        lab_path = Path(lab_ref) if lab_override else (base / lab_ref)
        lab = load_model(Lab, lab_path)
        lab_base = Path(os.path.abspath(lab_path)).parent
        data = {**data, "lab": lab.model_dump()}
    elif isinstance(lab_ref, dict):
        lab_base = base
        try:
            lab = validate(Lab, lab_ref, marks, path, prefix=("lab",))
        except ConfigError as lab_error:  # report the deployment's own problems too
            try:
                validate(Deployment, {**data, "lab": "<inline>"}, marks, path)
            except ConfigError as dep_error:
                raise merge_errors(lab_error, dep_error) from None
            raise
    else:
        lab = None
        lab_base = base
    deployment = validate(Deployment, data, marks, path)
    if lab is not None:
        nodes = [n.model_copy(update={
            "identity_file": os.path.normpath(lab_base / n.identity_file) if n.identity_file else None,
            "pyspy": _resolve(n.pyspy, lab_base), "python": _resolve(n.python, lab_base) or n.python,
            "vllm_python": _resolve(n.vllm_python, lab_base),
        }) for n in lab.nodes]
        lab = lab.model_copy(update={
            "nodes": nodes,
            "ssh_config": os.path.normpath(lab_base / lab.ssh_config) if lab.ssh_config else None})
    engine = deployment.engine
    vllm = engine.vllm if isinstance(engine.vllm, list) else [engine.vllm]
    vllm = [_resolve(a, base) for a in vllm]
    roofline = deployment.roofline
    if roofline is not None:  # user profile files are relative to the deployment's folder
        roofline = roofline.model_copy(update={
            k: os.path.normpath(base / v) for k in ("hardware", "model")
            if isinstance(v := getattr(roofline, k), str) and v.endswith((".yaml", ".yml"))
            and not os.path.isabs(v)})
    return deployment.model_copy(update={
        "roofline": roofline,
        "lab": lab,
        "model": deployment.model.model_copy(update={"path": _resolve(deployment.model.path, base)}),
        "engine": engine.model_copy(update={"vllm": vllm}),
    })
