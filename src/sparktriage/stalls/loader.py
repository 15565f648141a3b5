"""Load `rules/`: every rule file and the vocabulary, collecting ALL problems with file:line.

YAML is read by the one loader, `sparktriage.yamldoc` (bounded by `sparktriage.yamlsafe`: safe
constructor only; size, depth, node count and aliases), which keeps the line of every key, so
that a schema error in a nested condition points at its own line. Duplicate keys, which YAML
silently lets the last one win, are errors.
"""

from __future__ import annotations

from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

import yaml
from pydantic import ValidationError

from sparktriage import yamldoc, yamlsafe
from sparktriage.errors import ConfigError, InputError, SourceLocation
from sparktriage.stalls.schema import Rule, Vocabulary

VOCABULARY_FILE = "_vocabulary.yaml"


@dataclass(frozen=True)
class Problem:
    """One thing wrong with the rule set."""

    location: SourceLocation
    message: str
    check: str  # "yaml", "schema" or a validator's name
    severity: str = "error"  # "error" or "warning"

    def __str__(self) -> str:
        return f"{self.location}: {self.severity}: {self.message} [{self.check}]"


@dataclass(frozen=True)
class LoadedRule:
    rule: Rule
    path: Path
    lines: dict[tuple, int]  # key path -> 1-based line

    def location(self, *keys) -> SourceLocation:
        """The line of the deepest key of `keys` that the file has."""
        return SourceLocation(str(self.path), yamldoc.key_line(self.lines, keys) or 1)


@dataclass
class RuleSet:
    directory: Path
    vocabulary: Vocabulary | None
    vocabulary_lines: dict[tuple, int] = field(default_factory=dict)
    rules: dict[str, LoadedRule] = field(default_factory=dict)


def read_yaml(path: Path) -> tuple[Any, dict[tuple, int], list[Problem]]:
    """The document, the line of every key path, and YAML-level problems."""
    try:
        document = yamldoc.parse(yamlsafe.read_text(path, "rule"), str(path))
    except InputError as exc:  # unreadable, not UTF-8, or past a limit (docs/limits.md)
        return None, {}, [Problem(exc.location or SourceLocation(str(path)), exc.message,
                                  "yaml")]
    except yaml.YAMLError as exc:
        mark = getattr(exc, "problem_mark", None)
        line = mark.line + 1 if mark is not None else None
        reason = getattr(exc, "problem", None) or str(exc)
        return None, {}, [Problem(SourceLocation(str(path), line), f"invalid YAML: {reason}",
                                  "yaml")]
    problems = [Problem(SourceLocation(str(path), d.line),
                        f"duplicate key {'.'.join(map(str, d.path))}", "yaml")
                for d in document.duplicates]
    return document.data, document.lines, problems


def _schema_problems(exc: ValidationError, path: Path, lines: dict[tuple, int]) -> list[Problem]:
    out = []
    for loc, message in yamldoc.located(exc):
        where = ".".join(str(p) for p in loc) or "(document)"
        out.append(Problem(SourceLocation(str(path), yamldoc.key_line(lines, loc)),
                           f"{where}: {message}", "schema"))
    return out


def load_vocabulary(path: Path) -> tuple[Vocabulary | None, dict[tuple, int], list[Problem]]:
    data, lines, problems = read_yaml(path)
    if problems:
        return None, lines, problems
    try:
        return Vocabulary.model_validate(data), lines, []
    except ValidationError as exc:
        return None, lines, _schema_problems(exc, path, lines)


def load_rule(path: Path) -> tuple[LoadedRule | None, list[Problem]]:
    data, lines, problems = read_yaml(path)
    if problems:
        return None, problems
    if not isinstance(data, dict):
        return None, [Problem(SourceLocation(str(path), 1), "a rule is a YAML mapping", "schema")]
    try:
        return LoadedRule(Rule.model_validate(data), path, lines), []
    except ValidationError as exc:
        return None, _schema_problems(exc, path, lines)


def load_directory(directory: Path) -> tuple[RuleSet, list[Problem]]:
    """Parse every `*.yaml` of a rules folder; problems are collected, never raised."""
    problems: list[Problem] = []
    if not directory.is_dir():
        raise ConfigError(f"{directory}: no such rules folder")
    vocab_path = directory / VOCABULARY_FILE
    vocabulary, vocab_lines = None, {}
    if vocab_path.exists():
        vocabulary, vocab_lines, found = load_vocabulary(vocab_path)
        problems += found
    else:
        problems.append(Problem(SourceLocation(str(vocab_path)), "missing vocabulary file",
                                "schema"))
    ruleset = RuleSet(directory, vocabulary, vocab_lines)
    for path in sorted(directory.glob("*.y*ml")):
        if path.name == VOCABULARY_FILE:
            continue
        loaded, found = load_rule(path)
        problems += found
        if loaded is None:
            continue
        if loaded.rule.id in ruleset.rules:
            other = ruleset.rules[loaded.rule.id].path
            problems.append(Problem(loaded.location("id"),
                                    f"duplicate rule id {loaded.rule.id} (also in {other})",
                                    "schema"))
            continue
        ruleset.rules[loaded.rule.id] = loaded
    return ruleset, problems


def require_clean(problems: list[Problem], what: str) -> None:
    """Raise one ConfigError listing every error (warnings pass)."""
    errors = [p for p in problems if p.severity == "error"]
    if errors:
        first = errors[0]
        more = f" (and {len(errors) - 1} more)" if len(errors) > 1 else ""
        raise ConfigError(f"{what}: {first.message}{more}", location=first.location,
                          errors=[str(p) for p in errors],
                          hint="`sparktriage rules check` lists every problem")
