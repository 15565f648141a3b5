"""Load user-written YAML into pydantic models, with file:line in every error.

Files are read and parsed by the one bounded reader, `sparktriage.yamlsafe` (safe constructor
only, size, depth, node and alias bounds; configs are hostile input). Validation problems
are all collected; the error's one-line message names the first with its `file:line` and says
how many more there are, and `ConfigError.errors` lists every one with its own location.
"""

from __future__ import annotations

from pathlib import Path
from typing import TypeVar

import yaml
from pydantic import BaseModel, ValidationError

from sparktriage import yamlsafe
from sparktriage.errors import ConfigError, InputError
from sparktriage.validation_words import plain

Model = TypeVar("Model", bound=BaseModel)


def line_of(text: str, loc: tuple) -> int | None:
    """The 1-based line of a validation error location (keys and list indexes) in YAML text."""
    try:
        node = yamlsafe.compose(text, "<text>")
    except (yaml.YAMLError, yamlsafe.LimitError):
        return None
    if node is None:
        return None
    for key in loc:
        if isinstance(node, yaml.MappingNode):
            match = next(((k, v) for k, v in node.value if k.value == str(key)), None)
            if match is None:
                return node.start_mark.line + 1
            node = match[1] if isinstance(match[1], (yaml.MappingNode, yaml.SequenceNode)) else match[0]
        elif isinstance(node, yaml.SequenceNode) and isinstance(key, int) and key < len(node.value):
            node = node.value[key]
        else:
            break
    return node.start_mark.line + 1


def parse_yaml(text: str, origin: str, model: type[Model], what: str) -> Model:
    """Validate YAML (or JSON) text as `model`; raise ConfigError naming origin:line."""
    try:
        data, _ = yamlsafe.load(text, origin)
    except yaml.YAMLError as exc:
        mark = getattr(exc, "problem_mark", None)
        where = f"{origin}:{mark.line + 1}" if mark is not None else origin
        problem = getattr(exc, "problem", None) or str(exc).splitlines()[0]
        raise ConfigError(f"{where}: not valid YAML ({problem})", errors=[f"{where}: {problem}"]) from exc
    if not isinstance(data, dict):
        raise ConfigError(f"{origin}:1: {what} must be a mapping of keys to values")
    try:
        return model.model_validate(data)
    except ValidationError as exc:
        problems = []
        for error in exc.errors():
            loc = tuple(error["loc"])
            line = line_of(text, loc)
            where = f"{origin}:{line}" if line else origin
            field = ".".join(str(p) for p in loc) or "(top)"
            problems.append(f"{where}: {what} field '{field}': {plain(error)}")
        more = len(problems) - 1
        tail = f" (and {more} more problem{'s' if more > 1 else ''})" if more else ""
        raise ConfigError(problems[0] + tail, errors=problems) from exc


def load_yaml(path: Path, model: type[Model], what: str) -> Model:
    """Read and validate a YAML file; unreadable or oversized files raise InputError."""
    return parse_yaml(yamlsafe.read_text(path, what), str(path), model, what)
