"""The `decision` language of a rule: names of conditions joined by and/or/not.

Grammar (Sigma-like):  expr := term ("or" term)* ; term := factor ("and" factor)* ;
factor := "not" factor | "(" expr ")" | NAME | QUANT "of" PATTERN, where QUANT is `all`,
`any` or a number and PATTERN is a condition name that may end in `*`.

Evaluation is three-valued (Kleene): a condition whose evidence is missing is `None`
(unknown), `False and None` is False, `True and None` is None, `not None` is None. So a rule
that needs a missing signal stays open instead of being decided on a guess.
"""

from __future__ import annotations

import fnmatch
import re
from dataclasses import dataclass

Truth = bool | None
_TOKEN = re.compile(r"\s*(?:(?P<paren>[()])|(?P<word>[A-Za-z_][A-Za-z0-9_]*\*?|\d+))")


class ExprError(ValueError):
    """A decision that does not parse, with the column where it went wrong."""

    def __init__(self, message: str, column: int) -> None:
        super().__init__(f"{message} (column {column + 1})")
        self.column = column


@dataclass(frozen=True)
class Name:
    name: str


@dataclass(frozen=True)
class Not:
    operand: "Node"


@dataclass(frozen=True)
class And:
    operands: tuple["Node", ...]


@dataclass(frozen=True)
class Or:
    operands: tuple["Node", ...]


@dataclass(frozen=True)
class Of:
    quantifier: str  # "all", "any" or a count
    pattern: str


Node = Name | Not | And | Or | Of
_KEYWORDS = {"and", "or", "not", "of", "all", "any"}


def _tokens(text: str) -> list[tuple[str, int]]:
    out, pos = [], 0
    while pos < len(text):
        if text[pos:].strip() == "":
            break
        match = _TOKEN.match(text, pos)
        if not match:
            raise ExprError(f"unexpected character {text[pos:].lstrip()[:1]!r}",
                            len(text) - len(text[pos:].lstrip()))
        out.append((match.group("paren") or match.group("word"), match.start(match.lastindex)))
        pos = match.end()
    return out


class _Parser:
    def __init__(self, text: str) -> None:
        self.tokens = _tokens(text)
        self.pos = 0
        self.end = len(text)

    def peek(self) -> str | None:
        return self.tokens[self.pos][0] if self.pos < len(self.tokens) else None

    def column(self) -> int:
        return self.tokens[self.pos][1] if self.pos < len(self.tokens) else self.end

    def take(self) -> str:
        token = self.peek()
        if token is None:
            raise ExprError("unexpected end of decision", self.end)
        self.pos += 1
        return token

    def expr(self) -> Node:
        items = [self.term()]
        while self.peek() == "or":
            self.take()
            items.append(self.term())
        return items[0] if len(items) == 1 else Or(tuple(items))

    def term(self) -> Node:
        items = [self.factor()]
        while self.peek() == "and":
            self.take()
            items.append(self.factor())
        return items[0] if len(items) == 1 else And(tuple(items))

    def factor(self) -> Node:
        column = self.column()
        token = self.take()
        if token == "not":
            return Not(self.factor())
        if token == "(":
            node = self.expr()
            if self.peek() != ")":
                raise ExprError("missing ')'", self.column())
            self.take()
            return node
        if token in ("all", "any") or token.isdigit():
            if self.peek() != "of":
                raise ExprError(f"expected 'of' after {token!r}", self.column())
            self.take()
            column = self.column()
            pattern = self.take()
            if pattern in _KEYWORDS or pattern in "()" or pattern.isdigit():
                raise ExprError(f"expected a condition name or pattern, got {pattern!r}", column)
            return Of(token, pattern)
        if token in _KEYWORDS or token in "()" or token.isdigit() or token.endswith("*"):
            raise ExprError(f"unexpected {token!r}", column)
        return Name(token)


def parse(text: str) -> Node:
    """Parse a decision; raise ExprError with the column of the first problem."""
    parser = _Parser(text)
    node = parser.expr()
    if parser.peek() is not None:
        raise ExprError(f"unexpected {parser.peek()!r}", parser.column())
    return node


def names(node: Node, known: list[str]) -> list[tuple[str, bool]]:
    """Every condition the decision reads, with True when it is read under a `not`."""
    out: list[tuple[str, bool]] = []

    def walk(n: Node, negated: bool) -> None:
        if isinstance(n, Name):
            out.append((n.name, negated))
        elif isinstance(n, Not):
            walk(n.operand, not negated)
        elif isinstance(n, (And, Or)):
            for child in n.operands:
                walk(child, negated)
        else:
            out.extend((name, negated) for name in expand(n.pattern, known))

    walk(node, False)
    return out


def expand(pattern: str, known: list[str]) -> list[str]:
    """Condition names a pattern (`sel_*`) stands for."""
    return [name for name in known if fnmatch.fnmatchcase(name, pattern)]


def _and(values: list[Truth]) -> Truth:
    if any(v is False for v in values):
        return False
    return None if any(v is None for v in values) else True


def _or(values: list[Truth]) -> Truth:
    if any(v is True for v in values):
        return True
    return None if any(v is None for v in values) else False


def evaluate(node: Node, values: dict[str, Truth]) -> Truth:
    """Three-valued value of the decision given each condition's value."""
    if isinstance(node, Name):
        return values.get(node.name)
    if isinstance(node, Not):
        inner = evaluate(node.operand, values)
        return None if inner is None else not inner
    if isinstance(node, And):
        return _and([evaluate(child, values) for child in node.operands])
    if isinstance(node, Or):
        return _or([evaluate(child, values) for child in node.operands])
    matched = [values.get(name) for name in expand(node.pattern, list(values))]
    if node.quantifier == "all":
        return _and(matched)
    if node.quantifier == "any":
        return _or(matched)
    need = int(node.quantifier)
    true = sum(1 for v in matched if v is True)
    unknown = sum(1 for v in matched if v is None)
    if true >= need:
        return True
    return None if true + unknown >= need else False


def relevant(node: Node, values: dict[str, Truth]) -> set[str]:
    """The conditions that settle the decision's value: a true `or` needs only its true
    branches, a false `and` only its false ones; an undecided node needs all of them."""
    if isinstance(node, Name):
        return {node.name}
    if isinstance(node, Not):
        return relevant(node.operand, values)
    if isinstance(node, Of):
        children: list[Node] = [Name(n) for n in expand(node.pattern, list(values))]
        quantifier = node.quantifier
    else:
        children = list(node.operands)
        quantifier = "all" if isinstance(node, And) else "any"
    value = evaluate(node, values)
    settle = {"all": False, "any": True}.get(quantifier)
    if value is settle and settle is not None:
        children = [c for c in children if evaluate(c, values) is settle]
    out: set[str] = set()
    for child in children:
        out |= relevant(child, values)
    return out
