"""The rule language: pydantic models of `rules/<id>.yaml` and `rules/_vocabulary.yaml`.

A rule is Sigma-shaped: metadata (id, title, status, references), named conditions over the
evidence, one `decision` expression over those names, the look-alikes it must beat and the
fix. Unknown keys fail (`extra="forbid"`) so that a typo is an error, not a silent no-op.
docs/rules.md is the authoring guide.
"""

from __future__ import annotations

import re
from typing import Literal

from pydantic import BaseModel, ConfigDict, Field, field_validator, model_validator

SOURCE_NAMES = ("log", "host", "disk", "net", "procs", "gpu", "stacks", "dmesg")
Source = Literal["log", "host", "disk", "net", "procs", "gpu", "stacks", "dmesg"]
Scope = Literal["last", "before", "during", "end", "until_end", "anywhere"]
Status = Literal["experimental", "test", "stable", "deprecated"]
Kind = Literal["stall", "failure"]
ID_PATTERN = r"^[a-z][a-z0-9]*(-[a-z0-9]+)*$"
# named groups a marker pattern may use: how long the line says it has waited (seconds or
# milliseconds: vLLM's shm broadcast and placement-group waits, torch's watchdog and store),
# and how long the work it reports took (a warmup run, a graph compile)
# (a digit may follow, `wait_s2`, where one pattern needs the same unit twice)
STATED_GROUPS = ("wait_s", "wait_ms", "took_s")
STATED_GROUP = re.compile(r"^(wait_s|wait_ms|took_s)\d?\Z")
TEST_KEYS = ("signal", "log", "log_match", "frames", "dmesg", "children", "phase", "all", "any",
             "use")


class _Strict(BaseModel):
    model_config = ConfigDict(extra="forbid", frozen=True)


def _check_regexes(values: list[str]) -> list[str]:
    for value in values:
        try:
            re.compile(value)
        except re.error as exc:
            raise ValueError(f"invalid regular expression {value!r}: {exc}") from exc
    return values


class Condition(_Strict):
    """One named test. Exactly one test key is set; the others refine it."""

    signal: str | None = Field(None, description="a signal name (sparktriage.stalls.signals)")
    above: float | None = Field(None, description="signal > value")
    below: float | None = Field(None, description="signal < value")
    equals: bool | None = Field(None, description="boolean signal == value")
    log: str | None = Field(None, description="a marker name from _vocabulary.yaml")
    log_match: str | None = Field(None, description="a regular expression on log messages")
    where: Scope = Field("until_end", description="which log lines the log test reads")
    nodes: Literal["same", "any"] = Field("same", description="this node's log, or any node's")
    frames: list[str] | None = Field(None, description="regexes on py-spy frame function/file")
    dmesg: list[str] | None = Field(None, description="regexes on kernel ring buffer lines")
    children: list[str] | None = Field(None, description="regexes on child process names/argv")
    min_share: float = Field(0.25, ge=0.0, le=1.0,
                             description="frames/children: share of snapshots that must match")
    phase: list[str] | None = Field(None, description="the stall's phase is one of these")
    all: list["Condition"] | None = None
    any: list["Condition"] | None = None
    use: str | None = Field(None, description="a shared condition of _vocabulary.yaml")
    weight: float = Field(1.0, gt=0, le=10, description="how much this test counts in the score")
    gate: bool = Field(False, description="a precondition of the cause (several ranks, Ray in "
                       "use): it must hold for the decision but is no evidence for the cause, "
                       "so it adds no support")
    silence: bool = Field(False, description="the test reads an absence (nothing read, idle "
                          "processes, a flat network): it may decide and support a cause "
                          "beside evidence for it, never name the cause alone")
    explain: str | None = Field(None, description="what a match means, shown as evidence")

    @model_validator(mode="after")
    def _one_test(self) -> "Condition":
        keys = [k for k in TEST_KEYS if getattr(self, k) is not None]
        if len(keys) != 1:
            raise ValueError(f"a condition needs exactly one of {', '.join(TEST_KEYS)}; "
                             f"got {', '.join(keys) or 'none'}")
        comparisons = [k for k in ("above", "below", "equals") if getattr(self, k) is not None]
        if keys[0] == "signal":
            if len(comparisons) != 1:
                raise ValueError("a signal test needs exactly one of above, below, equals")
        elif comparisons:
            raise ValueError(f"{comparisons[0]} only goes with signal")
        if keys[0] in ("all", "any") and not getattr(self, keys[0]):
            raise ValueError(f"{keys[0]} needs at least one condition")
        return self

    @field_validator("frames", "dmesg", "children")
    @classmethod
    def _regex_list(cls, value: list[str] | None) -> list[str] | None:
        if value is not None:
            if not value:
                raise ValueError("needs at least one pattern")
            _check_regexes(value)
        return value

    @field_validator("log_match")
    @classmethod
    def _regex(cls, value: str | None) -> str | None:
        if value is not None:
            _check_regexes([value])
        return value

    @property
    def test(self) -> str:
        return next(k for k in TEST_KEYS if getattr(self, k) is not None)


_EVIDENCE_DEPTH = 8  # nested all/any/use; the YAML depth cap keeps real rules far below


def is_evidence(condition: Condition, shared: dict[str, Condition], depth: int = 0) -> bool:
    """Whether a true outcome of the condition is evidence for a cause: not a gate, not a
    silence, not the phase. `all:` is evidence when one of its parts is (the others only
    narrow it); `any:` only when every part is, since the part that held is not known."""
    if condition.gate or condition.silence or depth > _EVIDENCE_DEPTH:
        return False
    test = condition.test
    if test == "phase":
        return False
    if test == "use":
        target = shared.get(condition.use)
        return target is not None and is_evidence(target, shared, depth + 1)
    if test == "all":
        return any(is_evidence(c, shared, depth + 1) for c in condition.all)
    if test == "any":
        return all(is_evidence(c, shared, depth + 1) for c in condition.any)
    return True


class Lookalike(_Strict):
    """A cause this rule is confused with, and the conditions that tell them apart."""

    id: str
    told_apart_by: list[str] = Field(min_length=1, description="condition names of this rule")
    note: str | None = None


class Fix(_Strict):
    summary: str = Field(min_length=1)
    steps: list[str] = Field(default_factory=list)
    before_after: list[str] = Field(default_factory=list,
                                    description="measured effects, e.g. '452 s -> 34 s (L-01)'")


class Rule(_Strict):
    """One root cause: `rules/<id>.yaml`."""

    title: str = Field(min_length=1)
    id: str = Field(pattern=ID_PATTERN)
    status: Status
    description: str = Field(min_length=1)
    references: list[str] = Field(min_length=1)
    kinds: list[Kind] = Field(min_length=1, description="stall, failure or both")
    phases: list[str] = Field(min_length=1, description="phases where it occurs, or [any]")
    evidence: list[Source] = Field(min_length=1, description="sources the conditions read")
    conditions: dict[str, Condition] = Field(min_length=1)
    decision: str = Field(min_length=1)
    support: list[str] = Field(default_factory=list,
                               description="conditions that add support but never decide")
    lookalikes: list[Lookalike] = Field(default_factory=list)
    fix: Fix
    falsepositives: list[str] = Field(default_factory=list)
    confidence: float = Field(0.9, gt=0, le=0.99,
                              description="confidence when decided with every signal present")


class Marker(_Strict):
    """A named log pattern: what a line means for the startup."""

    pattern: str
    progress: bool = Field(True, description="false for 'still waiting' lines")
    after_import: bool = Field(False, description="the line follows a (sub)process import")
    ready: bool = Field(False, description="the startup is complete")
    failure: bool = Field(False, description="the startup failed")
    stopped: bool = Field(False, description="the server was stopped from outside")
    exclusive: bool = Field(False, description="a line it matches matches only exclusive "
                            "markers (lines quoted from another program, e.g. the Ray watcher)")
    budget: Literal["compile", "warmup", "weights"] | None = Field(
        None, description="a silence that ends at this line was work of this kind (vLLM says "
        "so, e.g. 'Initial profiling/warmup run took 94 s') and gets that budget; `weights` "
        "(a weight read that states its time) only makes a stall when past the crawl budget, "
        "it never widens a silence's budget")
    phase: str | None = Field(None, description="the startup phase a line it matches shows "
                              "running (a traceback through init_process_group: "
                              "distributed_init), for an error or a wait the log's own "
                              "phases leave earlier or unknown")
    description: str | None = None

    @field_validator("pattern")
    @classmethod
    def _regex(cls, value: str) -> str:
        _check_regexes([value])
        unknown = {g for g in re.compile(value).groupindex if not STATED_GROUP.match(g)}
        if unknown:
            raise ValueError(f"unknown named group(s) {', '.join(sorted(unknown))}: a marker "
                             f"may name only {', '.join(STATED_GROUPS)}")
        return value

    @property
    def states_wait(self) -> bool:
        """The line states how long something has waited (`wait_s`/`wait_ms` groups)."""
        return any(STATED_GROUP.match(g).group(1) in ("wait_s", "wait_ms")
                   for g in re.compile(self.pattern).groupindex)


class Vocabulary(_Strict):
    """`rules/_vocabulary.yaml`: log markers, shared conditions, advice per missing source."""

    schema_version: Literal[1]
    markers: dict[str, Marker] = Field(min_length=1)
    shared: dict[str, Condition] = Field(default_factory=dict,
                                         description="conditions rules reuse with `use: NAME`")
    advice: dict[Source, str] = Field(description="what to do when a source is missing")


Condition.model_rebuild()
