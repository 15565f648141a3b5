"""The one loader of user YAML with file:line errors: data, the line of every key, and models.

Files are read and parsed by the one bounded reader, `sparktriage.yamlsafe` (safe constructor
only; size, depth, node and alias bounds; configs are hostile input). `parse` composes the node
tree once and walks it once (`_walk`), recording the line of every key path and every key a
mapping gives twice (YAML itself silently lets the last one win). Pydantic then validates the
data and each of its errors is mapped back to a line; every problem is collected before failing.

Three families of callers word their problems their own way (tests pin every message):

- `parse_yaml` / `load_yaml` (simulator scenarios, workloads): one `ConfigError` whose message is
  `file:line: WHAT field 'a.b': ...`; a nested mapping's error points at the mapping's first
  line (`value_line`);
- `load_model` / `validate` / `load_with_lines` / `merge_errors` (deployments, labs, roofline
  profiles, `reproduce` inputs): `ConfigError` with a `SourceLocation` at the deepest key the
  file has (`key_line`); duplicate keys are errors;
- `stalls.loader.read_yaml` (rules) turns the same `Document` into its own `Problem` records.
"""

from __future__ import annotations

from dataclasses import dataclass
from pathlib import Path
from typing import Any, Iterator, NamedTuple, TypeVar

import yaml
from pydantic import BaseModel, ValidationError

from sparktriage import yamlsafe
from sparktriage.errors import ConfigError, SourceLocation
from sparktriage.validation_words import plain

Model = TypeVar("Model", bound=BaseModel)
Lines = dict[tuple, int]  # key path -> 1-based line of its key (a list item: of the item)


class Duplicate(NamedTuple):
    """A mapping key given again: its path, its line, and the line where it was given before."""

    path: tuple
    line: int
    previous: int


@dataclass(frozen=True)
class Document:
    """One parsed YAML document: plain data, its node tree, the line of every key path."""

    data: Any
    tree: yaml.Node | None
    lines: Lines
    duplicates: tuple[Duplicate, ...]

    def key_line(self, loc: tuple) -> int | None:
        """The line of the deepest key of `loc` that the document has."""
        return key_line(self.lines, loc)

    def value_line(self, loc: tuple) -> int | None:
        """The line of what `loc` names: a mapping or list value's own first line, a scalar's key."""
        node = self.tree
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


def key_line(lines: Lines, loc: tuple) -> int | None:
    """The line of the deepest key path of `loc` found in `lines`."""
    for end in range(len(loc), -1, -1):
        line = lines.get(tuple(loc[:end]))
        if line is not None:
            return line
    return None


def _walk(node: yaml.Node, path: tuple, lines: Lines, duplicates: list[Duplicate]) -> None:
    lines.setdefault(path, node.start_mark.line + 1)
    if isinstance(node, yaml.MappingNode):
        seen: dict[str, int] = {}
        for key_node, value_node in node.value:
            key = key_node.value if isinstance(key_node, yaml.ScalarNode) else str(key_node)
            line = key_node.start_mark.line + 1
            # keys a merge key (`<<: *template`) brought in lie outside this mapping's text;
            # the mapping's own key overrides them (YAML's merge rule), not a duplicate
            own = node.start_mark.index <= key_node.start_mark.index < node.end_mark.index
            if key in seen and own:
                duplicates.append(Duplicate(path + (key,), line, seen[key]))
            if own:
                seen[key] = line
            lines[path + (key,)] = line
            _walk(value_node, path + (key,), lines, duplicates)
    elif isinstance(node, yaml.SequenceNode):
        for index, item in enumerate(node.value):
            _walk(item, path + (index,), lines, duplicates)


def parse(text: str, origin: str) -> Document:
    """Parse YAML text within the bounds; `yaml.YAMLError` (with its marks) passes through."""
    tree = yamlsafe.compose(text, origin)
    data = yamlsafe.construct(tree)
    lines: Lines = {}
    duplicates: list[Duplicate] = []
    if tree is not None:
        _walk(tree, (), lines, duplicates)
    return Document(data, tree, lines, tuple(duplicates))


def located(exc: ValidationError, prefix: tuple = ()) -> Iterator[tuple[tuple, str]]:
    """Each validation problem as (its key path, pydantic's message in plain words)."""
    for error in exc.errors():
        yield prefix + tuple(error.get("loc", ())), plain(error)


# --- simulator scenarios and workloads: `file:line: WHAT field 'a.b': ...` -------------------

def parse_yaml(text: str, origin: str, model: type[Model], what: str) -> Model:
    """Validate YAML (or JSON) text as `model`; raise ConfigError naming origin:line."""
    try:
        document = parse(text, origin)
    except yaml.YAMLError as exc:
        mark = getattr(exc, "problem_mark", None)
        where = f"{origin}:{mark.line + 1}" if mark is not None else origin
        problem = getattr(exc, "problem", None) or str(exc).splitlines()[0]
        raise ConfigError(f"{where}: not valid YAML ({problem})", errors=[f"{where}: {problem}"]) from exc
    if not isinstance(document.data, dict):
        raise ConfigError(f"{origin}:1: {what} must be a mapping of keys to values")
    try:
        return model.model_validate(document.data)
    except ValidationError as exc:
        problems = []
        for loc, message in located(exc):
            line = document.value_line(loc)
            where = f"{origin}:{line}" if line else origin
            field = ".".join(str(p) for p in loc) or "(top)"
            problems.append(f"{where}: {what} field '{field}': {message}")
        more = len(problems) - 1
        tail = f" (and {more} more problem{'s' if more > 1 else ''})" if more else ""
        raise ConfigError(problems[0] + tail, errors=problems) from exc


def load_yaml(path: Path, model: type[Model], what: str) -> Model:
    """Read and validate a YAML file; unreadable or oversized files raise InputError."""
    return parse_yaml(yamlsafe.read_text(path, what), str(path), model, what)


# --- deployments, labs, profiles, reproduce inputs: ConfigError at the key's file:line --------

def _dotted(loc: tuple) -> str:
    text = ""
    for part in loc:
        text += f"[{part}]" if isinstance(part, int) else (f".{part}" if text else str(part))
    return text or "(top level)"


def load_with_lines(path: Path) -> tuple[Any, Lines]:
    """Parse a YAML file safely; return (data, {key path: line}); duplicate keys are errors."""
    text = yamlsafe.read_text(path, "YAML")  # InputError (exit 2) when unreadable or too big
    return text_with_lines(text, path)


def text_with_lines(text: str, path: Path,
                    parsed: Document | yaml.YAMLError | None = None) -> tuple[Any, Lines]:
    """`load_with_lines` of a file's text already read; `parsed`: the text's parse where it
    was already parsed (or the error it gave), so that it is parsed once."""
    if parsed is None:
        try:
            parsed = parse(text, str(path))
        except yaml.YAMLError as exc:
            parsed = exc
    if isinstance(parsed, yaml.MarkedYAMLError):
        mark = parsed.problem_mark or parsed.context_mark
        line = mark.line + 1 if mark else None
        raise ConfigError(f"not valid YAML: {parsed.problem or parsed}",
                          location=SourceLocation(str(path), line)) from None
    if isinstance(parsed, yaml.YAMLError):
        raise ConfigError(f"{path}: not valid YAML ({parsed})") from None
    document = parsed
    if document.tree is None:
        raise ConfigError(f"{path}: empty document", location=SourceLocation(str(path), 1))
    if document.duplicates:
        _fail(path, [(d.line, f"{_dotted(d.path)}: duplicate key (first at line {d.previous})")
                     for d in document.duplicates])
    return document.data, document.lines


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


def validate(model: type[Model], data: Any, lines: Lines, path: Path, prefix: tuple = (),
             context: dict | None = None) -> Model:
    """Validate `data` as `model`; on failure raise ConfigError listing every problem."""
    try:
        return model.model_validate(data, context=context)
    except ValidationError as exc:
        _fail(path, [(key_line(lines, loc) or 1, f"{_dotted(loc)}: {message}")
                     for loc, message in located(exc, prefix)])
        raise AssertionError("unreachable")  # _fail always raises


def load_model(model: type[Model], path: Path, context: dict | None = None) -> Model:
    """Read, parse and validate a YAML file as `model`."""
    data, lines = load_with_lines(path)
    if not isinstance(data, dict):
        raise ConfigError("expected a mapping at the top level",
                          location=SourceLocation(str(path), 1))
    return validate(model, data, lines, path, context=context)
