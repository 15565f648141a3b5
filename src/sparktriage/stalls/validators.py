"""Validators of the rule set, run by `sparktriage rules check` and by the tests alike.

Each validator is a small class (pySigma style) with a `name`, a `description` and
`validate(ruleset) -> list[Problem]`; it reports every offender with file:line instead of
stopping at the first. Layers, cheapest first: YAML and schema (loader.py), then these, then
the fixtures (fixtures.py).
"""

from __future__ import annotations

import re
from pathlib import Path

from sparktriage.errors import SourceLocation
from sparktriage.logs.catalog import PHASES
from sparktriage.stalls.markers import SERVING
from sparktriage.stalls import expr
from sparktriage.stalls.loader import LoadedRule, Problem, RuleSet
from sparktriage.stalls.schema import Condition, is_evidence
from sparktriage.stalls.signals import SIGNALS

# design.md §5: the stable root-cause ids. Ids never change meaning; new causes get new ids.
TAXONOMY = (
    "mmap-fault-crawl", "mmap-dma-wedge", "cold-storage", "uma-memory-pressure", "ray-oom-kill",
    "loader-backend", "post-load-processing", "nccl-hang", "rendezvous-interface",
    "ray-placement-wait", "compile-jit", "cuda-graph-capture", "download-or-lock",
    "uma-memory-accounting", "toolchain-mismatch",
)
_SOURCE_OF_TEST = {"log": "log", "log_match": "log", "phase": "log", "frames": "stacks",
                   "dmesg": "dmesg", "children": "procs"}


def _walk(condition: Condition, path: tuple):
    yield condition, path
    for key in ("all", "any"):
        for i, child in enumerate(getattr(condition, key) or []):
            yield from _walk(child, path + (key, i))


def _conditions(loaded: LoadedRule):
    for name, condition in loaded.rule.conditions.items():
        yield from _walk(condition, ("conditions", name))


def _sources(condition: Condition, ruleset: RuleSet, depth: int = 0) -> set[str]:
    """Evidence sources a condition reads (through shared conditions too)."""
    out: set[str] = set()
    for node, _ in _walk(condition, ()):
        if node.test == "signal" and node.signal in SIGNALS:
            out.add(SIGNALS[node.signal].source)
        elif node.test == "use" and ruleset.vocabulary and depth < 5:
            shared = ruleset.vocabulary.shared.get(node.use)
            if shared is not None:
                out |= _sources(shared, ruleset, depth + 1)
        elif node.test in _SOURCE_OF_TEST:
            out.add(_SOURCE_OF_TEST[node.test])
    return out


class Validator:
    name = "validator"
    description = ""
    severity = "error"

    def validate(self, ruleset: RuleSet) -> list[Problem]:
        out: list[Problem] = []
        for loaded in ruleset.rules.values():
            out += [Problem(loc, msg, self.name, self.severity)
                    for loc, msg in self.check(loaded, ruleset)]
        return out + self.finalize(ruleset)

    def check(self, loaded: LoadedRule, ruleset: RuleSet):
        return []

    def finalize(self, ruleset: RuleSet) -> list[Problem]:
        return []


class IdMatchesFile(Validator):
    name, description = "id-matches-file", "a rule lives in rules/<id>.yaml"

    def check(self, loaded, ruleset):
        if loaded.path.stem != loaded.rule.id:
            yield loaded.location("id"), f"id {loaded.rule.id} but file {loaded.path.name}"


class TitleFirst(Validator):
    name, description = "title-first", "title is the first key (Sigma's convention)"

    def check(self, loaded, ruleset):
        top = {k[0]: v for k, v in loaded.lines.items() if len(k) == 1}
        if top and top.get("title") != min(top.values()):
            yield loaded.location("title"), "title must be the first key of a rule"


class Taxonomy(Validator):
    name, description = "taxonomy", "ids come from design.md §5, and all of them are covered"

    def check(self, loaded, ruleset):
        if loaded.rule.id not in TAXONOMY:
            yield loaded.location("id"), (f"id {loaded.rule.id} is not in the taxonomy; new "
                                          f"causes need a new id added to design.md §5 first")

    def finalize(self, ruleset):
        missing = [i for i in TAXONOMY if i not in ruleset.rules]
        if missing:
            return [Problem(SourceLocation(str(ruleset.directory)),
                            f"no rule for {', '.join(missing)}", self.name)]
        return []


class Decision(Validator):
    name, description = "decision", "the decision parses and names only defined conditions"

    def check(self, loaded, ruleset):
        rule = loaded.rule
        try:
            tree = expr.parse(rule.decision)
        except expr.ExprError as exc:
            yield loaded.location("decision"), f"decision: {exc}"
            return
        known = list(rule.conditions)
        used = set(rule.support)
        for name in rule.support:
            if name not in rule.conditions:
                yield loaded.location("support"), f"support names unknown condition {name}"
        for node in _leaves(tree):
            if isinstance(node, expr.Name):
                if node.name not in rule.conditions:
                    yield loaded.location("decision"), f"decision names unknown condition {node.name}"
                used.add(node.name)
            else:
                found = expr.expand(node.pattern, known)
                if not found:
                    yield loaded.location("decision"), f"pattern {node.pattern} matches no condition"
                used.update(found)
        for name in rule.conditions:
            if name not in used:
                yield loaded.location("conditions", name), f"condition {name} is never used"


def _leaves(node):
    if isinstance(node, (expr.Name, expr.Of)):
        yield node
    elif isinstance(node, expr.Not):
        yield from _leaves(node.operand)
    else:
        for child in node.operands:
            yield from _leaves(child)


class Vocabulary(Validator):
    name, description = "vocabulary", "signals, markers and phases exist"

    def check(self, loaded, ruleset):
        vocab = ruleset.vocabulary
        phases = set(PHASES) | {SERVING}  # the log parser's startup phases (docs/logs.md)
        markers = set(vocab.markers) if vocab else set()
        for phase in loaded.rule.phases:
            if phase != "any" and phase not in phases:
                yield loaded.location("phases"), f"unknown phase {phase}"
        for condition, path in _conditions(loaded):
            if condition.signal is not None and condition.signal not in SIGNALS:
                yield loaded.location(*path, "signal"), f"unknown signal {condition.signal}"
            if condition.signal is not None and condition.signal in SIGNALS:
                unit = SIGNALS[condition.signal].unit
                if (unit == "bool") != (condition.equals is not None):
                    yield loaded.location(*path, "signal"), (
                        f"{condition.signal} is {'a boolean: use equals' if unit == 'bool' else 'a number: use above or below'}")
            if condition.log is not None and vocab and condition.log not in markers:
                yield loaded.location(*path, "log"), f"unknown marker {condition.log}"
            for phase in condition.phase or []:
                if phase != "any" and phase not in phases:
                    yield loaded.location(*path, "phase"), f"unknown phase {phase}"
            if condition.use is not None and vocab and condition.use not in vocab.shared:
                yield loaded.location(*path, "use"), f"unknown shared condition {condition.use}"

    def finalize(self, ruleset):
        vocab = ruleset.vocabulary
        if vocab is None:
            return []
        out: list[Problem] = []
        vocab_file = str(ruleset.directory / "_vocabulary.yaml")
        for name, marker in vocab.markers.items():
            if marker.phase is not None and marker.phase not in set(PHASES) | {SERVING}:
                out.append(Problem(SourceLocation(vocab_file, ruleset.vocabulary_lines.get(
                    ("markers", name, "phase"))), f"marker {name}: unknown phase {marker.phase}",
                    self.name))
        for name, shared in vocab.shared.items():
            for condition, path in _walk(shared, ("shared", name)):
                line = ruleset.vocabulary_lines.get(path)
                if condition.signal is not None and condition.signal not in SIGNALS:
                    out.append(Problem(SourceLocation(vocab_file, line),
                                       f"shared {name}: unknown signal {condition.signal}",
                                       self.name))
                if condition.log is not None and condition.log not in vocab.markers:
                    out.append(Problem(SourceLocation(vocab_file, line),
                                       f"shared {name}: unknown marker {condition.log}", self.name))
                if condition.use is not None:
                    out.append(Problem(SourceLocation(vocab_file, line),
                                       f"shared {name}: shared conditions cannot `use` others",
                                       self.name))
        return out


class EvidenceDeclared(Validator):
    name, description = "evidence", "`evidence` lists exactly the sources the conditions read"

    def check(self, loaded, ruleset):
        read = set()
        for condition in loaded.rule.conditions.values():
            read |= _sources(condition, ruleset)
        declared = set(loaded.rule.evidence)
        for source in sorted(read - declared):
            yield loaded.location("evidence"), f"conditions read {source} but evidence omits it"
        for source in sorted(declared - read):
            yield loaded.location("evidence"), f"evidence lists {source} but no condition reads it"


class Grounded(Validator):
    name, description = "grounded", "some condition the rule tests for is evidence for its cause"
    severity = "warning"

    def check(self, loaded, ruleset):
        rule = loaded.rule
        shared = ruleset.vocabulary.shared if ruleset.vocabulary else {}
        try:
            tree = expr.parse(rule.decision)
        except expr.ExprError:
            return  # the decision validator reports it
        positive = [n for n, neg in expr.names(tree, list(rule.conditions)) if not neg]
        positive += [n for n in rule.support if n in rule.conditions]
        if not any(is_evidence(rule.conditions[n], shared) for n in positive
                   if n in rule.conditions):
            yield loaded.location("decision"), (
                "no condition the rule tests for is evidence for its cause (only gates, the "
                "phase and silences): the engine can never name it")


class Lookalikes(Validator):
    name, description = "lookalikes", "look-alikes exist and are told apart by defined conditions"

    def check(self, loaded, ruleset):
        for i, item in enumerate(loaded.rule.lookalikes):
            if item.id == loaded.rule.id:
                yield loaded.location("lookalikes", i), "a rule is not its own look-alike"
            elif item.id not in TAXONOMY:
                yield loaded.location("lookalikes", i), f"unknown look-alike {item.id}"
            for name in item.told_apart_by:
                if name not in loaded.rule.conditions:
                    yield loaded.location("lookalikes", i), (
                        f"told_apart_by names unknown condition {name}")


class References(Validator):
    name, description = "references", "each reference cites a field report item or a URL"
    _CITE = re.compile(r"(RC-\d+|L-\d+|L-F\d+|https?://)")

    def check(self, loaded, ruleset):
        for i, ref in enumerate(loaded.rule.references):
            if not self._CITE.search(ref):
                yield loaded.location("references", i), f"reference {ref!r} cites nothing checkable"


VALIDATORS: tuple[Validator, ...] = (IdMatchesFile(), TitleFirst(), Taxonomy(), Decision(),
                                     Vocabulary(), EvidenceDeclared(), Grounded(), Lookalikes(),
                                     References())


def validate(ruleset: RuleSet) -> list[Problem]:
    """Every validator's problems, in validator order."""
    out: list[Problem] = []
    for validator in VALIDATORS:
        out += validator.validate(ruleset)
    return out


def default_rules_dir() -> Path:
    """`rules/` of the source checkout, else the copy shipped inside the package."""
    here = Path(__file__).resolve()
    for parent in here.parents:
        candidate = parent / "rules"
        if (candidate / "_vocabulary.yaml").exists() and (parent / "pyproject.toml").exists():
            return candidate
    return here.parent / "rules"
