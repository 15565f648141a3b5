"""Values bash computes from known values: `$((..))` integer arithmetic (+ - * / % on numbers
and variables), the pattern trims `${X#p}` `${X##p}` `${X%p}` `${X%%p}`, case changes
`${X^^}` `${X,,}` `${X^}` `${X,}`, substrings `${X:o}` `${X:o:n}` and literal replacements
`${X/a/b}` `${X//a/b}`; anything else is not evaluated (the caller makes a placeholder)."""

from __future__ import annotations

import fnmatch
import re
from typing import Any, Callable

from sparktriage.reproduce.bash.tree import Node, text

MAX_DEPTH = 48  # nested parentheses and operators followed
MAX_TRIM_CHARS = 4096  # a pattern trim tries every cut: longer values are not trimmed


def trim(value: str, op: str, pattern: str) -> str | None:
    """`${X#p}` `${X##p}` `${X%p}` `${X%%p}` with a glob pattern (None: value too long)."""
    if len(value) > MAX_TRIM_CHARS:
        return None
    cuts = range(len(value) + 1)
    if op in ("#", "##"):
        order = cuts if op == "#" else reversed(cuts)
        for i in order:
            if fnmatch.fnmatchcase(value[:i], pattern):
                return value[i:]
        return value
    order = reversed(cuts) if op == "%" else cuts
    for i in order:
        if fnmatch.fnmatchcase(value[i:], pattern):
            return value[:i]
    return value


_GLOB = set("*?[")


def edit(value: str, op: str, operand: str,
         check: Callable[[int], None] = lambda size: None) -> str | None:
    """A case change, substring or literal replacement of a known value (None: not one);
    `check` is given a replacement's length before it is built (it raises to refuse)."""
    if op in ("^^", ",,", "^", ","):
        head = value[:1].upper() if op.startswith("^") else value[:1].lower()
        return {"^^": value.upper(), ",,": value.lower()}.get(op, head + value[1:])
    if op == ":":
        parts = operand.split(":")
        try:
            numbers = [int(p.strip()) for p in parts]
        except ValueError:
            return None
        start = numbers[0]
        end = None if len(numbers) < 2 else (start + numbers[1] if numbers[1] >= 0
                                             else numbers[1])
        return value[start:end] if len(numbers) <= 2 else None
    if op in ("/", "//"):
        parts = re.split(r"(?<!\\)/", operand, maxsplit=1)
        pattern, replacement = (re.sub(r"\\(.)", r"\1", p) for p in (parts + [""])[:2])
        if not pattern or _GLOB & set(pattern) or pattern[0] in "#%":
            return None
        count = value.count(pattern) if op == "//" else min(1, value.count(pattern))
        check(len(value) + count * (len(replacement) - len(pattern)))
        return value.replace(pattern, replacement, -1 if op == "//" else 1)
    return None


OPS = {"+": lambda a, b: a + b, "-": lambda a, b: a - b, "*": lambda a, b: a * b,
       "/": lambda a, b: int(a / b) if b else None, "%": lambda a, b: a % b if b else None}


def arith(node: Node, lookup: Callable[[str], Any], data: bytes,
          depth: int = 0) -> int | None:
    """Integer arithmetic on numbers and known variables (+ - * / %), else None."""
    if depth > MAX_DEPTH:
        return None
    if node.type == "number":
        try:
            return int(text(node, data), 0)
        except ValueError:
            return None
    if node.type in ("variable_name", "simple_expansion", "expansion"):
        name = text(node, data).lstrip("$").strip("{}")
        value = lookup(name)
        try:
            return int(value) if isinstance(value, str) else None
        except ValueError:
            return None
    if node.type == "parenthesized_expression" and node.named_child_count == 1:
        return arith(node.named_children[0], lookup, data, depth + 1)
    if node.type == "binary_expression" and node.child_count == 3:
        left, op, right = node.children
        a, b = arith(left, lookup, data, depth + 1), arith(right, lookup, data, depth + 1)
        if a is None or b is None or op.type not in OPS or abs(a) > 2**62 or abs(b) > 2**62:
            return None
        return OPS[op.type](a, b)
    return None
