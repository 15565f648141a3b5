"""YAML to validated pydantic models, with every problem reported at its file:line.

Loading goes through the one bounded reader, `sparktriage.yamlsafe` (safe constructor only;
size, depth, node count and aliases bounded): it composes the node tree (which keeps each
node's line), the safe constructor turns it into plain data, and a walk over the tree records
the line of every key path. Pydantic then validates the data; each of its errors is mapped back
to the line of the deepest key path it names. All problems are collected before failing
(duplicate keys included, which YAML itself would silently let the last one win).
"""

from __future__ import annotations

from pathlib import Path
from typing import Any, TypeVar

import yaml
from pydantic import BaseModel, ValidationError

from sparktriage import yamlsafe
from sparktriage.errors import ConfigError, SourceLocation
from sparktriage.validation_words import plain

M = TypeVar("M", bound=BaseModel)
Marks = dict[tuple, int]


def _walk(node: yaml.Node, path: tuple, marks: Marks, problems: list[tuple[int, str]]) -> None:
    marks.setdefault(path, node.start_mark.line + 1)
    if isinstance(node, yaml.MappingNode):
        seen: dict[str, int] = {}
        for key_node, value_node in node.value:
            key = key_node.value if isinstance(key_node, yaml.ScalarNode) else str(key_node)
            line = key_node.start_mark.line + 1
            if key in seen:
                problems.append((line, f"{_dotted(path + (key,))}: duplicate key (first at line "
                                       f"{seen[key]})"))
            seen[key] = line
            marks[path + (key,)] = line
            _walk(value_node, path + (key,), marks, problems)
    elif isinstance(node, yaml.SequenceNode):
        for index, item in enumerate(node.value):
            _walk(item, path + (index,), marks, problems)


def _dotted(loc: tuple) -> str:
    text = ""
    for part in loc:
        text += f"[{part}]" if isinstance(part, int) else (f".{part}" if text else str(part))
    return text or "(top level)"


def load_yaml(path: Path) -> tuple[Any, Marks]:
    """Parse a YAML file safely; return (data, {key path: line})."""
    text = yamlsafe.read_text(path, "YAML")  # InputError (exit 2) when unreadable or too big
    try:
        node = yamlsafe.compose(text, str(path))
        if node is None:
            raise ConfigError(f"{path}: empty document", location=SourceLocation(str(path), 1))
        data = yamlsafe.construct(node)
    except yaml.MarkedYAMLError as exc:
        mark = exc.problem_mark or exc.context_mark
        line = mark.line + 1 if mark else None
        raise ConfigError(f"not valid YAML: {exc.problem or exc}",
                          location=SourceLocation(str(path), line)) from None
    except yaml.YAMLError as exc:
        raise ConfigError(f"{path}: not valid YAML ({exc})") from None
    marks: Marks = {}
    problems: list[tuple[int, str]] = []
    _walk(node, (), marks, problems)
    if problems:
        _fail(path, problems)
    return data, marks


def _line(marks: Marks, loc: tuple) -> int:
    for end in range(len(loc), -1, -1):
        if loc[:end] in marks:
            return marks[loc[:end]]
    return 1


def _message(error: dict) -> str:
    return plain(error)


def merge_errors(*errors: ConfigError) -> ConfigError:
    """One ConfigError listing the problems of several (same file), in line order."""
    problems = []
    path = None
    for error in errors:
        for line in error.errors:
            where, _, text = line.partition(": ")
            file, _, number = where.rpartition(":")
            path = path or file
            problems.append((int(number), text))
    try:
        _fail(Path(path or "?"), problems)
    except ConfigError as merged:
        return merged
    return errors[0]


def _fail(path: Path, problems: list[tuple[int, str]]) -> None:
    problems.sort()
    lines = [f"{path}:{line}: {text}" for line, text in problems]
    first_line, first = problems[0]
    more = f" (and {len(problems) - 1} more problem{'s' * (len(problems) > 2)})" \
        if len(problems) > 1 else ""
    raise ConfigError(first + more, errors=lines, location=SourceLocation(str(path), first_line))


def validate(model: type[M], data: Any, marks: Marks, path: Path, prefix: tuple = (),
             context: dict | None = None) -> M:
    """Validate `data` as `model`; on failure raise ConfigError listing every problem."""
    try:
        return model.model_validate(data, context=context)
    except ValidationError as exc:
        problems = []
        for error in exc.errors():
            loc = prefix + tuple(error["loc"])
            problems.append((_line(marks, loc), f"{_dotted(loc)}: {_message(error)}"))
        _fail(path, problems)
        raise AssertionError("unreachable")  # _fail always raises


def load_model(model: type[M], path: Path, context: dict | None = None) -> M:
    """Read, parse and validate a YAML file as `model`."""
    data, marks = load_yaml(path)
    if not isinstance(data, dict):
        raise ConfigError("expected a mapping at the top level",
                          location=SourceLocation(str(path), 1))
    return validate(model, data, marks, path, context=context)
