"""Branches of a bash script read statically: the tests a known value decides, the arms taken.

`if`/`elif`/`else`, `case`, `a && b`, `a || b`: a test on known values (`=`, `==` with
`[[ ]]` patterns, `!=`, `-eq`.. `-ge`, `-z`, `-n`, `!`, tests joined by `&&`/`||`; `case`
patterns) takes its branch only; when it reads something not known every branch is read and
each command found carries its branch's label. Afterwards a variable the branches set
differently is a placeholder (one set in one branch only keeps that value). Loop bodies are
read once. A mixin of the walker (walk.py), which supplies the statements and the scope.
"""

from __future__ import annotations

import fnmatch
import re
from dataclasses import dataclass
from typing import Any

from sparktriage.reproduce.bash.tree import Node, line
from sparktriage.reproduce.bash.words import Expander, Scope


_HELD = "<supply:"  # a value made a placeholder earlier (a $(...), branches that differ)
_NUMERIC = {"-eq": lambda a, b: a == b, "-ne": lambda a, b: a != b, "-lt": lambda a, b: a < b,
            "-le": lambda a, b: a <= b, "-gt": lambda a, b: a > b, "-ge": lambda a, b: a >= b}


@dataclass
class At:
    """Where the walk is: branch labels, notes for the commands below, function stack."""

    branch: tuple[str, ...] = ()
    notes: tuple[str, ...] = ()
    calls: tuple[str, ...] = ()
    depth: int = 0
    stdin: str | None = None  # a here-document fed to the command just below (not further)

    def down(self, **kw) -> At:
        return At(**{"branch": self.branch, "notes": self.notes, "calls": self.calls,
                      "depth": self.depth + 1, **kw})


class Branches:
    """Branch selection for the walker (walk.Walker): `self.scope`, `self.data`,
    `self.statements`, `self.statement`, `self.t`, `self.short`, `self.script`."""

    scope: Scope
    data: bytes
    script: Any
    def decide(self, cond: list[Node], depth: int = 0) -> bool | None:
        """A test on known values: True/False; None when it reads something not known."""
        if len(cond) != 1 or depth > 32:
            return None
        node = cond[0]
        if node.type == "list" and node.child_count == 3 and node.children[1].type in ("&&",
                                                                                   "||"):
            left = self.decide([node.children[0]], depth + 1)
            right = self.decide([node.children[2]], depth + 1)
            if node.children[1].type == "&&":
                return False if False in (left, right) else (None if None in (left, right)
                                                             else True)
            return True if True in (left, right) else (None if None in (left, right)
                                                       else False)
        if node.type == "negated_command" and node.named_child_count == 1:
            inner = self.decide(node.named_children, depth + 1)
            return None if inner is None else not inner
        if node.type != "test_command" or node.named_child_count != 1:
            return None
        expr = node.named_children[0]
        if expr.type == "parenthesized_expression" and expr.named_child_count == 1:
            expr = expr.named_children[0]
        probe = self.scope.copy()
        probe.holes = []
        ex = Expander(self.data, probe)
        if expr.type == "binary_expression" and expr.child_count == 3:
            left, op, right = expr.children
            a, b = ex.string(left), ex.string(right)
            if _unknown(probe) or _HELD in a or _HELD in b:
                return None
            if op.type in _NUMERIC or self.t(op) in _NUMERIC:
                try:
                    return _NUMERIC[self.t(op)](int(a), int(b))
                except ValueError:
                    return None
            if op.type not in ("=", "==", "!="):
                return None
            same = fnmatch.fnmatchcase(a, b) if op.type == "==" and node.children[0].type == "[[" \
                else a == b
            return same if op.type != "!=" else not same
        if expr.type == "unary_expression" and expr.child_count == 2:
            op, operand = expr.children
            value = ex.string(operand)
            if _unknown(probe) or _HELD in value or self.t(op) not in ("-z", "-n"):
                return None
            return (value == "") == (self.t(op) == "-z")
        return None

    def arms(self, arms: list[tuple[str, list[Node] | None, list[Node]]], at: At,
             complete: bool) -> None:
        """if/elif/else or case arms: the one chosen by known values, or all, labelled."""
        chosen = None
        for label, cond, body in arms:
            verdict = True if cond is None else self.decide(cond)
            if verdict is None:
                break
            if verdict:
                chosen = (label, body)
                break
        else:
            if chosen is None:
                return  # every condition false on known values: no arm runs
        if chosen is not None:
            label, body = chosen
            self.statements(body, at.down(branch=at.branch + (f"{label} (taken: the known "
                                                              "values choose it)",)))
            return
        before = self.scope
        outcomes = [] if complete else [before.copy()]
        for label, cond, body in arms:
            if cond is not None and self.decide(cond) is False:
                continue
            self.scope = before.copy()
            self.statements(body, at.down(branch=at.branch + (label,)))
            outcomes.append(self.scope)
        self.scope = self._merge(before, outcomes, arms[0][0])

    def _merge(self, before: Scope, outcomes: list[Scope], where: str) -> Scope:
        merged = before.copy()
        names = {n for s in outcomes for n in s.values} | {n for s in outcomes for n in s.unset}
        for name in sorted(names):
            values = [s.values.get(name) if name not in s.unset or name in s.values else None
                      for s in outcomes]
            old = before.lookup(name)
            distinct = {repr(v) for v in values}
            if len(distinct) == 1:
                if values[0] is None:
                    merged.values.pop(name, None)
                    merged.unset.add(name)
                else:
                    merged.values[name] = values[0]
                continue
            assigned = [v for v in values if v is not None and v != old]
            if old is None and len({repr(v) for v in assigned}) == 1:
                merged.values[name] = assigned[0]
                continue
            common = _appended(old, [old if v is None else v for v in values])
            if common is not None:
                # `A+=(--flag)` / `S="$S --flag"` in some branches only: the part every branch
                # has is kept, the additions are named in a note (not a placeholder that
                # would swallow the whole option list)
                merged.values[name] = common
                extra = sorted({repr(v[len(common):]) for v in values
                                if v is not None and len(v) > len(common)})
                self.script.notes.append(f"{where}: ${name} gains {', '.join(extra)} in some "
                                         "branches only; read without it (the test is not "
                                         "known statically)")
                continue
            merged.values[name] = merged.hole(name, _Pseudo(where), f"${name} is set "
                                              f"differently in the branches of {where}")
        for s in outcomes:
            merged.exported |= s.exported
        return merged

    def if_(self, node: Node, at: At) -> None:
        arms: list[tuple[str, list[Node] | None, list[Node]]] = []
        cond = [c for c in node.children_by_field_name("condition") if c.is_named]
        body, complete, seen_then = [], False, False
        for child in node.children:
            if child.type == "then":
                seen_then = True
            elif child.type in ("elif_clause", "else_clause"):
                break
            elif seen_then and child.is_named:
                body.append(child)
        arms.append((f"if {' '.join(self.short(c) for c in cond)} (line {line(node)})", cond,
                     body))
        for clause in node.named_children:
            if clause.type == "elif_clause":
                then = [i for i, c in enumerate(clause.children) if c.type == "then"]
                split = then[0] if then else len(clause.children)
                c_nodes = [c for c in clause.children[:split] if c.is_named]
                arms.append((f"elif {' '.join(self.short(c) for c in c_nodes)} (line "
                             f"{line(clause)})", c_nodes,
                             [c for c in clause.children[split:] if c.is_named]))
            elif clause.type == "else_clause":
                complete = True
                arms.append((f"else (line {line(clause)}, of the if on line {line(node)})", None,
                             clause.named_children))
        self.arms(arms, at, complete)

    def case(self, node: Node, at: At) -> None:
        subject_node = node.child_by_field_name("value")
        probe = self.scope.copy()
        probe.holes = []
        subject = Expander(self.data, probe).string(subject_node)
        known = not _unknown(probe) and _HELD not in subject
        arms, complete = [], False
        for item in node.named_children:
            if item.type != "case_item":
                continue
            patterns = item.children_by_field_name("value")
            texts = [Expander(self.data, self.scope.copy()).string(p) for p in patterns]
            body = [c for c in item.named_children if c not in patterns]
            label = (f"case {self.short(subject_node) if subject_node else ''} in "
                     f"{'|'.join(self.short(p) for p in patterns)}) (line {line(item)})")
            if "*" in texts:
                complete = True
            matched = any(fnmatch.fnmatchcase(subject, p) for p in texts)
            if known:
                if matched:
                    self.statements(body, at.down(branch=at.branch + (
                        f"{label} (taken: the known values choose it)",)))
                    return
                continue
            arms.append((label, None, body))
        if known:
            return
        before = self.scope
        outcomes = [] if complete else [before.copy()]
        for label, _, body in arms:
            self.scope = before.copy()
            self.statements(body, at.down(branch=at.branch + (label,)))
            outcomes.append(self.scope)
        self.scope = self._merge(before, outcomes, f"the case on line {line(node)}")

    def list_(self, node: Node, at: At) -> None:
        """`a && b`, `a || b`: b runs when a test on known values says so (else both read)."""
        children = node.children
        ops = [i for i, c in enumerate(children) if c.type in ("&&", "||")]
        if not ops:
            self.statements(children, at.down())
            return
        split = ops[0]
        left = [c for c in children[:split] if c.is_named]
        right = [c for c in children[split + 1:] if c.is_named]
        op = children[split].type
        self.statements(left, at.down())
        verdict = self.decide(left)
        if verdict is not None:
            if verdict == (op == "&&"):
                self.statements(right, at.down())
            return
        tests = left and left[-1].type == "test_command"
        label = (f"{'if' if op == '&&' else 'unless'} {self.short(left[-1])} (line "
                 f"{line(node)})") if tests else None
        self.statements(right, at.down(branch=at.branch + (label,)) if label else at.down())

    def loop(self, node: Node, at: At) -> None:
        variable = node.child_by_field_name("variable")
        if variable is not None:
            lists = node.children_by_field_name("value")
            values = Expander(self.data, self.scope).fields(lists) if lists else \
                list(self.scope.positional or [])
            name = self.t(variable)
            if not values:  # `for a in "$@"` with the script's arguments unknown: none assumed
                self.script.notes.append(f"line {line(node)}: the loop over {name} has no "
                                         "values known (the script's arguments: none "
                                         "assumed); its body is not read")
                return
            self.scope.values[name] = values[0]
        elif node.type == "while_statement" and self._never(node):
            self.script.notes.append(f"line {line(node)}: the loop's condition is false on the "
                                     "known values (the script's arguments: none assumed); its "
                                     "body is not read")
            return
        body = node.child_by_field_name("body")
        if body is not None:
            self.statement(body, at.down(branch=at.branch + (f"loop body read once (line "
                                                             f"{line(node)})",)))


    def _never(self, node: Node) -> bool:
        """A `while`/`until` loop that does not run: its test is false (true for `until`) on
        known values, or it reads the script's unknown arguments with `getopts`."""
        cond = [c for c in node.children_by_field_name("condition") if c.is_named]
        until = bool(node.children) and node.children[0].type == "until"
        if self.scope.positional is None and cond and cond[0].type == "command" and \
                self.t(cond[0]).split()[:1] == ["getopts"]:
            return True
        verdict = self.decide(cond)
        return verdict is (True if until else False)


def _unknown(probe: Scope) -> bool:
    """Did expanding a test read a value not known (a placeholder, not an assumption)?"""
    return any(not hole.dropped for hole in probe.holes)


class _Pseudo:
    """A stand-in node for a hole made while merging branches (its line: the branch's)."""

    def __init__(self, where: str) -> None:
        found = re.search(r"\bline (\d+)", where)
        self.start_point = (int(found.group(1)) - 1 if found else 0, 0)


def _appended(old: Value | None, values: list[Value]) -> Value | None:
    """The value before the branches when every branch only added to it (array elements
    `A+=(...)`; words `S="$S --flag"`, the addition starting with a blank), else None (a
    branch replaced it). The part the branches share is not kept: it may be an option
    without its value (`-e` of `-e A=1` / `-e B=2`)."""
    if old is None or any(type(v) is not type(old) for v in values):
        return None
    if any(v[:len(old)] != old for v in values):
        return None
    if isinstance(old, str) and any(str(v)[len(old):][:1] not in ("", " ", "\t", "\n")
                                    for v in values):
        return None  # not words added to it (`X=true` after `X=`): a different value
    return old

