"""A Makefile input read as make reads it, turned into the shell text its recipes run.

Launch setups often wrap their commands in make targets (`head:`, `worker:`, `serve:` with
tab-indented recipe lines). Read as bash, a target line is a command and `$(VAR)` a command
substitution; read as make, each target's recipe lines are shell, `$(VAR)` / `${VAR}` are the
make variables of `VAR = ...`, `:=`, `::=`, `?=`, `+=` assignments (a variable the Makefile does
not set is the environment's, so it stays a shell `${VAR}`), `$$` is a `$`, `$(shell CMD)` a
command substitution (never run), `$@` the target. The result has one line for each line of
the Makefile (errors and notes keep their line numbers): recipe lines without their tab and
`@`/`-`/`+` prefixes, `export VAR = value` as a shell export, everything else blank; each
target line is noted. Conditionals (`ifeq` ...), `define` and other make functions are
refused with a one-line error naming the construct and line. Nothing is run. Every value
expanded is measured before it is built and charged to the read's byte budget (budget.py).
"""

from __future__ import annotations

import re
from pathlib import Path

from sparktriage.errors import InputError
from sparktriage.reproduce.budget import Budget

NAMES = ("Makefile", "makefile", "GNUmakefile")
MAX_EXPANSION = 16  # nested variable references followed
_ASSIGN = re.compile(r"^(export\s+|override\s+)?([A-Za-z_][A-Za-z0-9_.-]*)\s*"
                     r"(::=|:::=|:=|\?=|\+=|!=|=)\s*(.*)\Z")
# greedy groups, stripped where used: lazy ones beside `\s*` took time quadratic in a long line
_TARGET = re.compile(r"^([^\s:#=][^:#=]*)::?(?!=)([^=;]*)(?:;(.*))?\Z")
# by syntax alone, a rule line is plain target names and a colon that ends a word (a shell
# line with `-v /a:/b` or `"url: x"` is not one)
_RULE = re.compile(r"^[A-Za-z0-9_./%-]+(?:[ \t]+[A-Za-z0-9_./%-]+)*[ \t]*::?(?:[ \t]|\Z)")
_REFUSED = ("ifeq", "ifneq", "ifdef", "ifndef", "else", "endif", "define", "endef")
_DIRECTIVE = re.compile(r"^(?:(?:-?include|sinclude|vpath|unexport|export)\b|\.[A-Z_]+\s*:)")


def looks_like(path: Path, text: str) -> bool:
    """A Makefile by its name, or by its syntax: a target line followed by a tab-indented
    recipe, and no line make would not read."""
    if path.name in NAMES or path.suffix == ".mk":
        return True
    lines = text.splitlines()
    rules = sum(1 for a, b in zip(lines, lines[1:])
                if _RULE.match(a) and not _ASSIGN.match(a) and b.startswith("\t"))
    return rules > 0 and all(_make_line(x) for x in lines)


def _make_line(line: str) -> bool:
    stripped = line.strip()
    return (not stripped or stripped.startswith("#") or line.startswith("\t")
            or bool(_ASSIGN.match(stripped) or _DIRECTIVE.match(stripped)
                    or _RULE.match(stripped)) or stripped.split()[0] in _REFUSED)


class _Make:
    def __init__(self, where: str) -> None:
        self.vars: dict[str, str] = {}
        self.where = where
        self.budget = Budget(where)

    def expand(self, value: str, line: int, target: str = "", depth: int = 0) -> str:
        """make's expansion of `value` into shell text."""
        if depth > MAX_EXPANSION:
            raise InputError(f"{self.where}:{line}: make variables nest deeper than "
                             f"{MAX_EXPANSION} (a self-reference?)")
        out, i = [], 0
        size = 0

        def put(part: str) -> None:
            nonlocal size
            size += len(part)
            self.budget.check(size, line)
            out.append(part)

        while i < len(value):
            j = value.find("$", i)
            if j < 0 or j + 1 >= len(value):
                put(value[i:])
                break
            put(value[i:j])
            opener = value[j + 1]
            if opener in "({":
                close = _closing(value, j + 1)
                if close < 0:
                    raise InputError(f"{self.where}:{line}: an unclosed make reference "
                                     f"`{value[j:j + 40]}`")
                put(self._reference(value[j + 2:close].strip(), line, target, depth))
                i = close + 1
            else:
                put({"$": "$", "@": target}.get(opener, "") if opener in "$@<^*?+|%"
                    else self._reference(opener, line, target, depth))
                i = j + 2
        self.budget.charge(size, line)
        return "".join(out)

    def _reference(self, name: str, line: int, target: str, depth: int) -> str:
        self.budget.reference(line)
        if not name.strip():
            return ""  # `$ ` or `$( )`: a variable named by blanks, which no Makefile can set
        if name.startswith("shell "):
            return "$(" + self.expand(name[6:], line, target, depth + 1) + ")"
        if " " in name or "," in name:
            raise InputError(f"{self.where}:{line}: the make function $({name.split()[0]} "
                             "...) is not read (give the recipe's command as a script)")
        if name in self.vars:
            return self.expand(self.vars[name], line, target, depth + 1)
        return "${" + name + "}"  # not set by the Makefile: the environment's

    def assign(self, name: str, op: str, value: str, line: int) -> None:
        if op == "?=" and name in self.vars:
            return
        if op == "+=" and name in self.vars:
            self.budget.charge(len(self.vars[name]) + 1 + len(value), line)
            self.vars[name] = f"{self.vars[name]} {value}"
        elif op in (":=", "::=", ":::="):
            expanded = self.expand(value, line)
            self.budget.charge(len(expanded) + expanded.count("$"), line)
            self.vars[name] = expanded.replace("$", "$$")
        elif op == "!=":
            self.vars[name] = f"$(shell {value})"
        else:
            self.vars[name] = value


def to_shell(text: str, where: str) -> tuple[str, list[str]]:
    """(the shell text of the Makefile's recipes, line for line; notes on the target lines)."""
    make = _Make(where)
    out: list[str] = []
    notes: list[str] = []
    target = ""
    continued = False
    for number, line in enumerate(text.splitlines(), 1):
        stripped = line.strip()
        if (line.startswith("\t") and target) or (continued and target):
            body = line[1:] if line.startswith("\t") else line.lstrip()
            if not continued:
                body = body.lstrip("@-+ \t")
            continued = body.endswith("\\")
            out.append(make.expand(body, number, target))
            continue
        continued = False
        word = stripped.split()[0] if stripped else ""
        if not stripped or stripped.startswith("#"):
            out.append(line if stripped else "")
        elif word in _REFUSED:
            raise InputError(f"{where}:{number}: the make directive `{word}` is not read "
                             "(give the recipe's command as a script)")
        elif (assign := _ASSIGN.match(stripped)) is not None:
            prefix, name, op, value = assign.groups()
            make.assign(name, op, value, number)
            exported = prefix is not None and prefix.strip() == "export"
            out.append(f"export {name}={_quote(make.expand(make.vars[name], number))}"
                       if exported and name in make.vars else "")
        elif word == "export" and all(n in make.vars for n in stripped.split()[1:]) \
                and len(stripped.split()) > 1:  # `export VAR ...`: to the recipes' shells
            out.append("export " + " ".join(f"{n}={_quote(make.expand(make.vars[n], number))}"
                                            for n in stripped.split()[1:]))
        elif _DIRECTIVE.match(stripped):
            notes.append(f"line {number}: make directive `{stripped[:60]}` (not a command)")
            out.append("")
        elif (rule := _TARGET.match(stripped)) is not None:
            targets, recipe = rule.group(1).strip(), (rule.group(3) or "").lstrip()
            target = targets.split()[0]
            notes.append(f"line {number}: make target `{targets}` (its recipe lines "
                         "read as shell; the target line itself runs nothing)")
            out.append(make.expand(recipe, number, target) if recipe else "")
        else:
            raise InputError(f"{where}:{number}: not a make line (`{stripped[:60]}`)")
    return "\n".join(out) + "\n", notes


def _closing(text: str, at: int) -> int:
    """The index of the bracket closing the one at `at` (nested pairs skipped), else -1."""
    pair = {"(": ")", "{": "}"}[text[at]]
    depth = 0
    for index in range(at, len(text)):
        if text[index] == text[at]:
            depth += 1
        elif text[index] == pair:
            depth -= 1
            if depth == 0:
                return index
    return -1


def _quote(value: str) -> str:
    return '"' + value.replace("\\", "\\\\").replace('"', '\\"') + '"'
