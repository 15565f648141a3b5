"""The typed speculative-depth sweep document (`sweep.json`, written by sweep/document.py for
`sparktriage sweep`, `sweep --rebuild`, the session and the demo; docs/formats.md,
docs/sweep.md). The parts are open (they carry the statistics, gate and acceptance details
documented in docs/formats.md).

One schema, two levels: `SweepDocument` is what every reader accepts (the report reads a
sweep.json written by another producer too: the synthetic run's has no statistics); `SweepJson`
is the same document with the issue's JSON contract required (per launch its status and
acceptance length, per depth its interval, gate and roofline share, the decision's state and
candidates): the sweep checks what it writes against it (store.typed.check) before writing."""

from __future__ import annotations

from typing import Any, Literal

from sparktriage.store.typed import Document, OpenPart

# The states a sweep's decision can be in (the file's contract); each has one word, given in
# sweep.policy.words, that every rendering uses.
DecisionState = Literal["best", "tied", "insufficient"]


class SweepLaunch(OpenPart):
    label: str
    delivered_tok_s: float | None
    e2e_tok_s: float | None = None
    acceptance_length: float | None = None


class SweepGate(OpenPart):
    state: Literal["pass", "fail", "unchecked"]
    reason: str
    source: Literal["greedy requests", "protocol streams"] | None = None


class SweepSpeculative(OpenPart):
    source: str | None = None
    left_out: dict[str, Any] = {}


class SweepDepth(OpenPart):
    depth: int
    launches: list[SweepLaunch]
    gate: SweepGate | None = None


class ModelCheck(OpenPart):
    name: str
    passed: bool | None
    reason: str


class ModelPrediction(OpenPart):
    depth: int
    tok_s: float
    ci95_low: float | None
    ci95_high: float | None
    acceptance_length: float
    acceptance_ci95: list[float]
    tokens_per_step: float
    step_ratio: float
    measured_launches: int
    measured_mean_tok_s: float | None


class SweepModel(OpenPart):
    """The depth model (docs/sweep.md "The depth model"): null with --no-model."""

    state: Literal["used", "rejected", "not-enough-data"]
    reason: str
    inputs: dict[str, Any]
    parameters: dict[str, Any] | None
    predicted: list[ModelPrediction]
    fit_test: ModelCheck | None
    checks: list[ModelCheck]
    decided: bool
    summary: str
    step_ratios: dict[str, Any] | None = None  # the slope from step times inside launches


class Decision(OpenPart):
    depth: int | None
    reason: str
    state: DecisionState | None = None
    rule: Literal["model", "black-box"] | None = None
    gate_note: str | None = None
    candidates: list[int] | None = None
    provisional: bool | None = None
    basis: Literal["decode", "e2e"] | None = None
    comparison: dict[str, Any] | None = None


class LaunchEntry(OpenPart):
    label: str
    depth: int | None
    status: Literal["ok", "failed"]
    delivered_tok_s: float | None
    acceptance_length: float | None
    step_ratio: dict[str, Any] | None = None  # verify over plain step time inside the launch
    pair_ratio: dict[str, Any] | None = None  # two streams' step over one stream's, inside the launch


class SweepComparison(OpenPart):
    """The chosen depth's Welch test (over launch means) against another depth."""

    depth: int
    versus: int
    test: dict[str, Any]


class SweepDocument(Document):
    """sweep.json: every launch, every depth over its launches, the decision."""

    NAME = "sweep"
    FILE = "sweep.json"
    kind: Literal["sweep"]
    method: str
    workload: str
    depths: list[SweepDepth]
    decision: Decision
    depths_requested: list[int] | None = None
    depths_swept: list[int] | None = None
    launches_used: int | None = None
    launches: list[LaunchEntry] | None = None
    max_launches: int | None = None
    budget_minutes: float | None = None
    wall_s: float | None = None
    margin: float | None = None
    roofline: dict[str, Any] | None = None
    model: SweepModel | None = None
    speculative: SweepSpeculative | None = None
    comparisons: list[SweepComparison] | None = None  # the chosen depth against depth 0, runner-up


# ---- the JSON contract: what the sweep itself writes ---------------------------------------
class ContractGate(SweepGate):
    source: Literal["greedy requests", "protocol streams"] | None


class ContractDepth(SweepDepth):
    mean_tok_s: float | None
    ci95_low: float | None
    ci95_high: float | None
    acceptance_length: float | None
    gate: ContractGate
    roofline_pct: float | None


class ContractDecision(Decision):
    state: DecisionState
    candidates: list[int]


class SweepJson(SweepDocument):
    """sweep.json as the sweep writes it: every field of the contract present."""

    depths_requested: list[int]
    launches_used: int
    launches: list[LaunchEntry]
    depths: list[ContractDepth]
    decision: ContractDecision
