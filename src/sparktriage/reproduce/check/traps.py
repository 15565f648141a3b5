"""Known traps in a client's config, as rules-as-data: `rules/config/<id>.yaml` (docs/reproduce.md).

Each rule has a stable id, named `conditions` on the flat facts of reproduce/check/facts.py, one
`decision` over those names (the stall rules' language, `sparktriage.stalls.expr`: and, or,
not, three-valued so that an unknown fact leaves a trap open rather than guessed), the setting
it is about, why, the fix, its source in the research notes, and positive and negative
fixtures (fact sets that must and must not fire). Files are read with the stall rules' YAML
reader (`stalls.loader.read_yaml`: safe loading, duplicate keys refused, lines kept) and
validated by `yamldoc.validate`: every problem in plain words at its file:line.
"""

from __future__ import annotations

import re
from pathlib import Path
from typing import Any, Literal, TypeVar

from pydantic import BaseModel, ConfigDict, Field, field_validator, model_validator

from sparktriage.yamldoc import validate
from sparktriage.errors import ConfigError
from sparktriage.reproduce.model import TrapHit
from sparktriage.stalls import expr
from sparktriage.stalls.loader import read_yaml
from sparktriage.stalls.schema import ID_PATTERN
from sparktriage.stalls.validators import default_rules_dir

WHY_FILE = "_why.yaml"
# facts that are the input's own settings (check/facts.py): what the input does not set is absent
# (known), unlike facts about hardware or the lab that may be unknown
SETTINGS = ("model.", "parallelism.", "engine.", "serve.", "speculative.", "load.", "env.")
M = TypeVar("M", bound=BaseModel)


class _Strict(BaseModel):
    model_config = ConfigDict(extra="forbid", frozen=True)


class FactTest(_Strict):
    fact: str
    equals: Any = None
    one_of: list[Any] | None = None
    above: float | None = None
    below: float | None = None
    matches: str | None = None
    present: bool | None = None

    @model_validator(mode="after")
    def _one(self) -> "FactTest":
        tests = [k for k in ("equals", "one_of", "above", "below", "matches", "present")
                 if getattr(self, k) is not None]
        if len(tests) != 1:
            raise ValueError(f"a condition needs exactly one test; got {', '.join(tests) or 'none'}")
        if self.matches is not None:
            re.compile(self.matches)
        return self

    def evaluate(self, facts: dict[str, Any]) -> bool | None:
        if self.present is not None:
            return (self.fact in facts) == self.present
        if self.fact not in facts:
            # a setting the input does not have is absent, not unknown: no test on it holds
            return False if self.fact.startswith(SETTINGS) else None
        value = facts[self.fact]
        if self.equals is not None:
            return value == self.equals
        if self.one_of is not None:
            return value in self.one_of
        if self.matches is not None:
            return re.search(self.matches, str(value)) is not None
        try:
            number = float(value)
        except (TypeError, ValueError):
            return None
        return number > self.above if self.above is not None else number < self.below


class Fixtures(_Strict):
    positive: list[dict[str, Any]] = Field(min_length=1)
    negative: list[dict[str, Any]] = Field(min_length=1)


class Trap(_Strict):
    id: str = Field(pattern=ID_PATTERN)
    title: str = Field(min_length=1)
    severity: Literal["high", "medium", "low", "info"]
    setting: str = Field(min_length=1, description="the setting the trap is about")
    conditions: dict[str, FactTest] = Field(min_length=1)
    decision: str
    why: str = Field(min_length=1)
    fix: str = Field(min_length=1)
    source: str = Field(min_length=1, description="where in the research notes")
    peer: list[str] = Field(default_factory=list, description="the same trap in peer catalogues")
    needs_lab: bool = Field(False, description="only a tool that knows the lab can say it")
    fixtures: Fixtures

    @field_validator("decision")
    @classmethod
    def _decision(cls, value: str) -> str:
        expr.parse(value)
        return value

    def values(self, facts: dict[str, Any]) -> dict[str, bool | None]:
        return {name: test.evaluate(facts) for name, test in self.conditions.items()}

    def fires(self, facts: dict[str, Any]) -> bool | None:
        return expr.evaluate(expr.parse(self.decision), self.values(facts))


class WhyRow(_Strict):
    key: str = Field(description="a diff key or an fnmatch pattern of keys")
    severity: Literal["high", "medium", "low", "info"]
    why: str
    source: str


class WhyTable(_Strict):
    schema_version: Literal[1]
    rows: list[WhyRow] = Field(min_length=1)


def config_rules_dir() -> Path:
    return default_rules_dir() / "config"


def _read(path: Path, model: type[M]) -> M:
    """One rule file as `model`; every problem in plain words at its file:line."""
    data, lines, problems = read_yaml(path)
    if problems:
        raise ConfigError(f"{path}: {problems[0].message}", errors=[str(p) for p in problems])
    if not isinstance(data, dict):
        raise ConfigError(f"{path}: a rule is a YAML mapping")
    return validate(model, data, lines, path)


def load_traps(directory: Path | None = None) -> list[Trap]:
    directory = directory or config_rules_dir()
    traps: list[Trap] = []
    for path in sorted(directory.glob("*.yaml")):
        if path.name.startswith("_"):
            continue
        trap = _read(path, Trap)
        if path.stem != trap.id:
            raise ConfigError(f"{path}: id {trap.id} does not match the file name")
        traps.append(trap)
    return traps


def load_why(directory: Path | None = None) -> WhyTable:
    return _read((directory or config_rules_dir()) / WHY_FILE, WhyTable)


def check(facts: dict[str, Any], traps: list[Trap] | None = None) -> list[TrapHit]:
    hits = []
    for trap in traps if traps is not None else load_traps():
        values = trap.values(facts)
        decided = expr.evaluate(expr.parse(trap.decision), values)
        # open (unknown) with some evidence for it: reported as possible, naming the unknowns
        possible = decided is None and any(v is True for v in values.values())
        if decided is True or possible:
            setting = trap.setting
            value = facts.get(trap.setting)
            if value is not None:
                setting = f"{trap.setting} = {value}"
            if trap.id == "ifname-not-on-node" and facts.get("lab.ifname_missing_list"):
                setting = facts["lab.ifname_missing_list"]
            if trap.id == "device-index-not-on-node" and \
                    facts.get("lab.device_index_missing_list"):
                setting = facts["lab.device_index_missing_list"]
            hits.append(TrapHit(id=trap.id, setting=setting, why=" ".join(trap.why.split()),
                                fix=" ".join(trap.fix.split()), severity=trap.severity,
                                source=trap.source, needs_lab=trap.needs_lab,
                                status="fires" if decided else "possible",
                                unknown_facts=sorted(trap.conditions[n].fact for n, v in
                                                     values.items() if v is None)
                                if decided is None else []))
    return hits
