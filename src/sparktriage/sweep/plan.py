"""The declared plan of a sweep: what is swept, on which deployment, with which budget.

A `SweepPlan` is data (pydantic, JSON): it is written to `sweep-state.json` when the sweep
starts and read back by `--resume`, so a resumed sweep runs exactly the plan it started with.
The deployment is referred to by its file (absolute path), never copied with its environment,
so that no secret from `env:` is written; each launch folder gets the redacted deployment it ran.

Depths: depth 0 (no speculative config at all) is always swept, as the gate's reference and the
baseline of every gain. The method defaults to the deployment's speculative method (from
`speculative:`, or the JSON of a `--speculative-config` kept in `serve.flags` or
`serve.extra_args`: config/speculative.py), else `ngram`; with the deployment's own method its
other speculative keys (draft model, extra) are kept at every depth, with another method none
are, except that an ngram launch then looks up prompt n-grams of 2 to 4 tokens (`NGRAM_EXTRA`,
what `session run` always used). Every launch runs exactly one speculative config, at its depth: a batch-size schedule of
the depth (`num_speculative_tokens_per_batch_size`) is left out and recorded in the plan
(`speculative_left_out`), since at one stream it would run its own depth for batch size 1.
"""

from __future__ import annotations

import hashlib
import json
import os
from pathlib import Path
from typing import Optional

from pydantic import BaseModel, ConfigDict, Field

from sparktriage.bench.workload import Workload, load_workloads
from sparktriage.config import speculative as spec_source
from sparktriage.config.speculative_flag import same_method, split_schedule
from sparktriage.config.deployment import Deployment, Speculative, load_deployment
from sparktriage.errors import UsageError
from sparktriage.redact.detect import secret_name

MAX_DEPTH = 16
DEFAULT_MARGIN = 0.02
# prompt lookup of an ngram launch when the deployment gives no ngram config of its own
NGRAM_EXTRA = {"prompt_lookup_max": 4, "prompt_lookup_min": 2}


class SweepPlan(BaseModel):
    """Everything `run_sweep` needs (and `--resume` reads back)."""

    model_config = ConfigDict(extra="forbid", frozen=True)

    schema_version: int = 1
    deployment_path: str = Field(description="The deployment YAML, absolute path.")
    lab_path: Optional[str] = Field(None, description="--lab override, absolute path.")
    depths_requested: tuple[int, ...]
    depths: tuple[int, ...] = Field(description="Swept depths, sorted, 0 always included.")
    method: str
    speculative_model: Optional[str] = None
    speculative_extra: dict = Field(default_factory=dict)
    speculative_source: Optional[str] = Field(None, description="Where the deployment gives its speculative config (speculative, serve.flags.speculative-config, serve.extra_args); None: it has none.")
    speculative_left_out: dict = Field(default_factory=dict, description="Keys of the deployment's speculative config that no launch of the sweep runs (a batch-size schedule of the depth).")
    max_launches: int = Field(ge=1)
    min_launches_per_depth: int = Field(1, ge=1)
    budget_minutes: Optional[float] = Field(None, gt=0)
    requests: int = Field(15, ge=1)
    max_tokens: int = Field(256, ge=1)
    workloads: tuple[str, ...] = ("code",)
    first_launch_workloads: tuple[str, ...] = Field((), description="Extra workloads measured on the very first launch only (the demo's prose).")
    baseline: Optional[str] = Field(None, description="Probe baseline: the probe's differential verdict joins the gate.")
    margin: float = Field(DEFAULT_MARGIN, gt=0, lt=1)
    gate_tokens: int = Field(64, ge=1, description="Greedy tokens compared per prompt by the gate.")
    retries: int = Field(1, ge=0, description="Retries of a failed launch before its depth is failed.")
    model: bool = Field(True, description="Decide with the depth model while it holds (sweep.policy.rule); False: the black-box rule only.")
    pairs: int = Field(2, ge=0, le=64, description="Pairs of concurrent requests after each launch's protocol (sweep.running.pair_phase); 0: none.")

    @property
    def deciding_workload(self) -> str:
        """The workload whose delivered rate decides (the first one given)."""
        return self.load_workloads()[0].name

    def load_deployment(self) -> Deployment:
        return load_deployment(Path(self.deployment_path),
                               Path(self.lab_path) if self.lab_path else None)

    def load_workloads(self, first: bool = False) -> tuple[Workload, ...]:
        names = list(self.workloads) + (list(self.first_launch_workloads) if first else [])
        return tuple(w.model_copy(update={"requests": self.requests, "max_tokens": self.max_tokens})
                     for w in load_workloads([",".join(names)]))

    def speculative(self, depth: int) -> Speculative | None:
        """The speculative config of one depth (None at depth 0)."""
        if depth == 0:
            return None
        return Speculative(method=self.method, num_speculative_tokens=depth,
                           model=self.speculative_model, extra=dict(self.speculative_extra))

    def deployment_at(self, deployment: Deployment, depth: int) -> Deployment:
        """The deployment a launch at `depth` runs: one speculative config, at that depth."""
        return spec_source.at_depth(deployment, self.speculative(depth)).deployment


def parse_depths(text: str) -> tuple[int, ...]:
    """`0,1,2,4` -> (0, 1, 2, 4); UsageError for anything else."""
    try:
        depths = tuple(sorted({int(part) for part in text.split(",") if part.strip()}))
    except ValueError:
        raise UsageError(f"--depths: {text!r} is not a comma list of integers, e.g. 0,2,4") from None
    if not depths or depths[0] < 0 or depths[-1] > MAX_DEPTH:
        raise UsageError(f"--depths: give speculative depths between 0 and {MAX_DEPTH}, e.g. 0,2,4")
    return depths


def plan_sweep(deployment_path: Path, *, lab: Path | None = None, depths: tuple[int, ...] = (0, 1, 2, 3, 4),
               method: str | None = None, max_launches: int | None = None,
               min_launches_per_depth: int = 1, budget_minutes: float | None = None,
               requests: int = 15, max_tokens: int = 256, workloads: tuple[str, ...] = ("code",),
               first_launch_workloads: tuple[str, ...] = (), baseline: Path | None = None,
               margin: float = DEFAULT_MARGIN, gate_tokens: int = 64, model: bool = True,
               pairs: int = 2, deployment: Deployment | None = None) -> SweepPlan:
    """Validate the deployment and options; return the declared plan (nothing is started).
    `deployment`: the file already loaded (a session loads it once), else it is loaded here."""
    if deployment is None:
        deployment = load_deployment(deployment_path, lab)  # ConfigError (exit 2) when invalid
    found = spec_source.find(deployment)
    chosen = found.method_for(method)
    model_name, keys = found.keys_for(chosen)
    if chosen == "ngram" and not same_method(chosen, found.method):
        keys = dict(NGRAM_EXTRA)
    kept, left_out = split_schedule(keys)
    swept = tuple(sorted(set(depths) | {0}))
    if max_launches is None:
        max_launches = 3 * len(swept)
    if max_launches < min_launches_per_depth * len(swept):
        raise UsageError(f"--max-launches {max_launches} is fewer than the minimum "
                         f"{min_launches_per_depth} launch(es) on each of {len(swept)} depths")
    names = [n for w in workloads for n in w.split(",") if n.strip()]
    load_workloads([",".join(names + list(first_launch_workloads))])  # InputError now, not later
    if baseline is not None and not baseline.is_file():
        raise UsageError(f"--baseline {baseline}: no such file")
    return SweepPlan(
        deployment_path=os.path.abspath(deployment_path),
        lab_path=os.path.abspath(lab) if lab else None,
        depths_requested=tuple(sorted(set(depths))), depths=swept,
        method=chosen, speculative_model=model_name, speculative_extra=kept,
        speculative_source=found.where, speculative_left_out=left_out,
        max_launches=max_launches, min_launches_per_depth=min_launches_per_depth,
        budget_minutes=budget_minutes, requests=requests, max_tokens=max_tokens,
        workloads=tuple(_spec(n) for n in names) if names else ("code",),
        first_launch_workloads=tuple(first_launch_workloads),
        baseline=os.path.abspath(baseline) if baseline else None, margin=margin,
        gate_tokens=min(gate_tokens, max_tokens), model=model, pairs=pairs)


def _spec(name: str) -> str:
    """A workload spec as stored: shipped names as given, files as absolute paths."""
    return os.path.abspath(name) if os.path.isfile(name) else name


def _hashable(deployment: Deployment) -> dict:
    """The deployment with environment values of secret-looking names replaced by a constant:
    what the pooling hash sees (stable across processes; files are written through the
    redaction stage instead, `store.documents.write_yaml_document`)."""
    doc = deployment.model_dump(mode="json")
    doc["env"] = {k: ("***" if secret_name(k) else v) for k, v in (doc.get("env") or {}).items()}
    lab = doc.get("lab")
    for node in (lab.get("nodes") or []) if isinstance(lab, dict) else []:
        if isinstance(node.get("env"), dict):
            node["env"] = {k: ("***" if secret_name(k) else v) for k, v in node["env"].items()}
    doc["node_env"] = {n: {k: ("***" if secret_name(k) else v) for k, v in env.items()}
                       for n, env in (doc.get("node_env") or {}).items()}
    return doc


def deployment_hash(deployment: Deployment) -> str:
    """Hash of what must not change between pooled launches: the deployment less its
    speculative config (the swept factor), wherever the deployment gives it."""
    doc = _hashable(spec_source.at_depth(deployment, None).deployment)
    return hashlib.sha256(json.dumps(doc, sort_keys=True).encode()).hexdigest()[:16]
