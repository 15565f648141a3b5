"""The one bounded YAML reader: every user YAML (deployments, labs, rules, workloads, scenarios,
client inputs) is read and parsed here.

Parsing is `yaml.safe_load` semantics (the safe constructor only; libyaml's event parser when
it is installed), with bounds enforced while the node tree is composed, before anything is
constructed: a file is at most `YAML_MAX_BYTES`, nesting is at most `YAML_MAX_DEPTH` levels, and
the document *as expanded* holds at most `YAML_MAX_NODES` nodes. An alias to a mapping or list
(a template: `x-base: &base {...}` then `<<: *base`, or `<<: [*a, *b]`) counts every node of
its target each time it is used, so a "billion laughs" file (aliases of aliases) is refused at
the line of the alias that takes it past the bound, while ordinary templates load. An alias
inside its own anchor (a cycle) is refused. A limit hit is a `LimitError` (exit 2) with the
file:line.
"""

from __future__ import annotations

from pathlib import Path
from typing import Any

import yaml
from yaml.composer import Composer
from yaml.constructor import SafeConstructor
from yaml.resolver import Resolver

from sparktriage.errors import InputError, SourceLocation
from sparktriage.limits import (
    YAML_MAX_BYTES, YAML_MAX_DEPTH, YAML_MAX_NODES, LimitError, limit_hit, size_text,
)

try:  # libyaml's event parser, composed here in Python so that the bounds apply
    from yaml.cyaml import CParser as _Parser
except ImportError:  # pragma: no cover - PyYAML without libyaml
    from yaml.parser import Parser as _EventParser
    from yaml.reader import Reader
    from yaml.scanner import Scanner

    class _Parser(Reader, Scanner, _EventParser):  # type: ignore[no-redef]
        def __init__(self, stream: str) -> None:
            Reader.__init__(self, stream)
            Scanner.__init__(self)
            _EventParser.__init__(self)


class _Limit(Exception):
    def __init__(self, message: str, line: int) -> None:
        super().__init__(message)
        self.line = line


class _BoundedComposer(Composer):
    """Counts the nodes of the document as expanded: a node is one, an alias to a collection
    is every node of its target (`_sizes` holds each composed collection's expanded size)."""

    def compose_node(self, parent, index):  # noqa: ANN001 - PyYAML's signature
        if self.check_event(yaml.AliasEvent):
            event = self.peek_event()
            target = self.anchors.get(event.anchor)
            line = event.start_mark.line + 1
            size = 1
            if target is not None and not isinstance(target, yaml.ScalarNode):
                size = self._sizes.get(id(target), 0)
                if not size:  # still being composed: the alias is inside its own anchor
                    raise _Limit(f"alias *{event.anchor} is inside its own anchor (a cycle)",
                                 line)
            self._count(size, line, f"alias *{event.anchor} expands the document past the "
                        f"limit of {YAML_MAX_NODES} nodes")
            return super().compose_node(parent, index)
        self._count(1, self.peek_event().start_mark.line + 1,
                    f"document exceeds the limit of {YAML_MAX_NODES} nodes")
        before = self._expanded
        self._depth += 1
        try:
            if self._depth > YAML_MAX_DEPTH:
                raise _Limit(f"nesting exceeds the limit of {YAML_MAX_DEPTH} levels",
                             self.peek_event().start_mark.line + 1)
            node = super().compose_node(parent, index)
        finally:
            self._depth -= 1
        if not isinstance(node, yaml.ScalarNode):
            self._sizes[id(node)] = self._expanded - before + 1
        return node

    def _count(self, size: int, line: int, message: str) -> None:
        self._expanded += size
        if self._expanded > YAML_MAX_NODES:
            raise _Limit(message, line)


class _Loader(_BoundedComposer, _Parser, SafeConstructor, Resolver):
    def __init__(self, text: str) -> None:
        _Parser.__init__(self, text)
        Composer.__init__(self)
        SafeConstructor.__init__(self)
        Resolver.__init__(self)
        self._expanded = 0  # nodes of the document as expanded (aliases count their targets)
        self._sizes: dict[int, int] = {}  # id(collection node) -> its expanded size
        self._depth = 0


def read_text(path: Path, what: str = "YAML") -> str:
    """A YAML file's text, at most `YAML_MAX_BYTES`; one-line InputError when unreadable."""
    try:
        with open(path, "rb") as fh:
            raw = fh.read(YAML_MAX_BYTES + 1)
    except FileNotFoundError as exc:
        raise InputError(f"{path}: no such file") from exc
    except IsADirectoryError as exc:
        raise InputError(f"{path}: is a directory, not a {what} file") from exc
    except OSError as exc:
        raise InputError(f"{path}: cannot read ({exc.strerror or exc})") from exc
    if len(raw) > YAML_MAX_BYTES:
        raise limit_hit(f"{what} file", size_text(YAML_MAX_BYTES), str(path))
    try:
        return raw.decode("utf-8")
    except UnicodeDecodeError as exc:
        line = raw[:exc.start].count(b"\n") + 1
        raise InputError("not UTF-8 text", location=SourceLocation(str(path), line)) from exc


def compose(text: str, origin: str) -> yaml.Node | None:
    """The node tree of one YAML document (None when empty), within the bounds.

    Raises LimitError past a bound and lets `yaml.YAMLError` (with its marks) through for
    text that is not YAML, so that callers word syntax errors their own way."""
    if len(text) > YAML_MAX_BYTES:
        raise limit_hit("YAML text", size_text(YAML_MAX_BYTES), origin)
    loader = _Loader(text)
    try:
        return loader.get_single_node()
    except _Limit as exc:
        raise LimitError(str(exc), location=SourceLocation(origin, exc.line),
                         hint="see docs/limits.md") from None
    except RecursionError:
        raise LimitError(f"nesting exceeds the limit of {YAML_MAX_DEPTH} levels",
                         location=SourceLocation(origin)) from None
    finally:
        loader.dispose()


def construct(node: yaml.Node | None) -> Any:
    """Plain data (dicts, lists, scalars) of a node tree from `compose`."""
    if node is None:
        return None
    loader = _Loader("")
    try:
        return loader.construct_document(node)
    finally:
        loader.dispose()


def load(text: str, origin: str) -> tuple[Any, yaml.Node | None]:
    """`yaml.safe_load` within the bounds: (data, node tree)."""
    node = compose(text, origin)
    return construct(node), node


def load_file(path: Path, what: str = "YAML") -> tuple[Any, yaml.Node | None]:
    """Read and parse a YAML file within the bounds: (data, node tree)."""
    return load(read_text(path, what), str(path))


__all__ = ["LimitError", "compose", "construct", "load", "load_file", "read_text"]
