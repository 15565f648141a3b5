"""The typed speculative-depth sweep record (`sweep.json`, built by sweep/document.py for
`sparktriage sweep`, `sweep --rebuild`, the session and the demo, and read by the report;
docs/formats.md, docs/sweep.md). The parts are open (they carry the statistics, gate and
acceptance details documented in docs/formats.md).

One schema, two levels: `SweepDocument` is what every reader accepts (the report reads a
sweep.json written by another producer too: the synthetic run's has no statistics); `SweepJson`
is the same document with the issue's JSON contract required (per launch its status and
acceptance length, per depth its interval, gate and roofline share, the decision's state and
candidates): the sweep builds its record as a `SweepJson`, so what it writes is checked by
construction.

The record is the file: `to_dict()` gives back the JSON object it was made from with the same
keys in the same order and every integer still an integer (docs/formats.md is a public contract,
so a record read and written again is the same bytes; `Faithful` keeps what pydantic would
otherwise reorder or widen). `read()` is the one place a file becomes a record: an older
producer's sweep.json without per-depth statistics is upgraded there (the statistics summarised
from its launches), so that no renderer derives them again. What an upgrade adds is not part of
the file: `to_dict()` still writes only what the file said.
"""

from __future__ import annotations

from typing import Any, Literal

from pydantic import BaseModel, PrivateAttr, model_serializer, model_validator

from sparktriage.stats.summary import summarize
from sparktriage.store.typed import Document, OpenPart, parse

# The states a sweep's decision can be in (the file's contract); each has one word, given in
# sweep.policy.words, that every rendering uses.
DecisionState = Literal["best", "tied", "insufficient"]


def _has_int(value: Any) -> bool:
    if isinstance(value, list):
        return any(_has_int(v) for v in value)
    return isinstance(value, int) and not isinstance(value, bool)


class Faithful(BaseModel):
    """A part that serializes as the JSON object it was read from: its keys in the file's order
    (pydantic puts declared fields before extra ones and adds unset defaults) and integers kept
    where a `float` field widened them (`500` must not come back as `500.0`). Fields a copy
    adds (`model_copy(update=...)` for an upgrade) are not written."""

    _order: tuple[str, ...] | None = PrivateAttr(default=None)
    _ints: dict[str, Any] = PrivateAttr(default_factory=dict)

    @model_validator(mode="wrap")
    @classmethod
    def _remember(cls, data: Any, handler):
        made = handler(data)
        if isinstance(data, dict):
            made._order = tuple(data)
            made._ints = {k: v for k, v in data.items() if _has_int(v)}
        return made

    @model_serializer(mode="wrap")
    def _as_read(self, handler) -> dict:
        out = handler(self)
        if self._order is None:
            return out
        ints = self._ints
        return {k: ints[k] if k in ints and out[k] == ints[k] else out[k]
                for k in self._order if k in out}

    def to_dict(self) -> dict:
        """The JSON object of this part, as it was read (class doc)."""
        return self.model_dump(mode="python")


class SweepPart(Faithful, OpenPart):
    """A nested object of sweep.json: typed, open, serialized as read."""


class SweepLaunch(SweepPart):
    label: str
    delivered_tok_s: float | None
    e2e_tok_s: float | None = None
    acceptance_length: float | None = None


class SweepGate(SweepPart):
    state: Literal["pass", "fail", "unchecked"]
    reason: str
    source: Literal["greedy requests", "protocol streams"] | None = None


class SweepSpeculative(SweepPart):
    source: str | None = None
    left_out: dict[str, Any] = {}


class SweepDepth(SweepPart):
    """One depth over its launches: the statistics are the sweep's (over launch means); a file
    without them has them summarised from its launches by `read()`."""

    depth: int
    launches: list[SweepLaunch]
    gate: SweepGate | None = None
    status: str | None = None
    n: int | None = None
    mean_tok_s: float | None = None
    ci95_low: float | None = None
    ci95_high: float | None = None
    acceptance_length: float | None = None
    per_position: list[float] = []
    roofline_pct: float | None = None
    stability_reasons: list[str] = []


class ModelCheck(SweepPart):
    name: str
    passed: bool | None
    reason: str


class ModelPrediction(SweepPart):
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
    verify_step_ratio: float | None = None  # the verify step's own cost, plain steps left out


class SweepModel(SweepPart):
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
    rejection: str | None = None  # why the model was rejected, in words


class Decision(SweepPart):
    depth: int | None
    reason: str
    state: DecisionState | None = None
    rule: Literal["model", "black-box"] | None = None
    gate_note: str | None = None
    candidates: list[int] | None = None
    provisional: bool | None = None
    basis: Literal["decode", "e2e"] | None = None
    comparison: dict[str, Any] | None = None


class LaunchEntry(SweepPart):
    label: str
    depth: int | None
    status: Literal["ok", "failed"]
    delivered_tok_s: float | None
    acceptance_length: float | None
    step_ratio: dict[str, Any] | None = None  # verify over plain step time inside the launch
    pair_ratio: dict[str, Any] | None = None  # two streams' step over one stream's, inside the launch


class WelchTest(SweepPart):
    """Welch's t-test of one depth's launch means against another's (stats.compare.Comparison;
    its other fields, the means and counts, stay open)."""

    difference: float | None
    p_value: float | None
    significant: bool
    verdict: str


class SweepComparison(SweepPart):
    """The chosen depth's Welch test (over launch means) against another depth."""

    depth: int
    versus: int
    test: WelchTest


class SweepDocument(Faithful, Document):
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

    @property
    def basis(self) -> Literal["decode", "e2e"]:
        """Which rate the sweep compared: end-to-end where a launch delivered its responses in
        bursts (no decode interval), else decode."""
        return "e2e" if self.decision.basis == "e2e" else "decode"

    def rate(self, launch: SweepLaunch) -> float | None:
        """A launch's rate on the sweep's basis."""
        return launch.e2e_tok_s if self.basis == "e2e" else launch.delivered_tok_s


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


# ---- a file becomes a record -----------------------------------------------------------------
def _upgraded(doc: SweepDocument, depth: SweepDepth) -> SweepDepth:
    """A depth as the sweep would have written it: where the file has no statistics (another
    producer's), its launches' count, mean and t-interval on the sweep's basis, and their mean
    acceptance length. A file's own statistics are kept as they are."""
    given = depth.model_fields_set
    update: dict[str, Any] = {}
    rates = [r for r in (doc.rate(l) for l in depth.launches) if r is not None]
    if "mean_tok_s" not in given:
        s = summarize(rates)
        update.update(n=s.n, mean_tok_s=s.mean, ci95_low=s.ci95_low, ci95_high=s.ci95_high)
    elif "n" not in given:
        update["n"] = len(rates)
    if "acceptance_length" not in given:
        accept = [l.acceptance_length for l in depth.launches if l.acceptance_length is not None]
        update["acceptance_length"] = sum(accept) / len(accept) if accept else None
    return depth.model_copy(update=update) if update else depth


def read(document: dict, name: str = SweepDocument.FILE) -> SweepDocument:
    """The record of a sweep.json object (InputError naming the file and field when it is not
    one), upgraded where an older producer left statistics out (module doc)."""
    doc = parse(SweepDocument, document, name)
    return doc.model_copy(update={"depths": [_upgraded(doc, d) for d in doc.depths]})
