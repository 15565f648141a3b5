"""A justfile input read as `just` reads it, turned into the shell text its recipes run.

Like a Makefile (read/makefile.py), a justfile wraps launch commands in recipes (`prefill:`, `serve
model='x':`), but with its own rules: a recipe's body is its indented lines; `{{expr}}` is
replaced by just itself before the shell sees the line (`{{{{` is a literal `{{`), where expr is
a variable of `name := value`, a recipe parameter (its default, else a run-time value the shell
keeps as `${name}`), a string literal, `+` concatenation, `env_var('X')` / `env_var_or_default(
'X', 'd')` (the shell's `${X}` / `${X:-d}`) or a backquoted command (its output: a command
substitution, never run); `export name := value` also goes to the recipes' environment. A body
line loses its `@` (quiet) and `-` (errors ignored) prefix. The result has one line for each line
of the justfile (errors and notes keep their line numbers); recipe headers, `set`, `alias`,
attributes and comments are blank, each recipe header noted. A shebang recipe (`#!/usr/bin/env
python3`) or an expression just would evaluate another way is refused with a one-line error
naming the line. Nothing is run. Every value built is measured before it is joined and charged
to the byte budget of the static readers (budget.py): `a := a + a` forty times is refused.
"""

from __future__ import annotations

import re
from pathlib import Path

from sparktriage.errors import InputError
from sparktriage.reproduce.budget import Budget

NAMES = ("justfile", "Justfile", ".justfile", "JUSTFILE")
MAX_TERMS = 64  # `+` terms of one expression
_ASSIGN = re.compile(r"^(export\s+)?([A-Za-z_][A-Za-z0-9_-]*)\s*:=\s*(.*)\Z")
# `[@]name [param[='default']]... [+|*varargs]: [deps]` at column 0
_RECIPE = re.compile(r"^@?([A-Za-z_][A-Za-z0-9_-]*)((?:[ \t]+[+*$]?[A-Za-z_][A-Za-z0-9_-]*"
                     r"(?:=(?:'[^']*'|\"[^\"]*\"|[^\s:]+))?)*)[ \t]*:(?!=)(.*)\Z")
_PARAM = re.compile(r"[+*$]?([A-Za-z_][A-Za-z0-9_-]*)(?:=('[^']*'|\"[^\"]*\"|[^\s:]+))?")
_CALL = re.compile(r"^(env_var|env_var_or_default|env)\(\s*('[^']*'|\"[^\"]*\")\s*"
                   r"(?:,\s*('[^']*'|\"[^\"]*\")\s*)?\)\Z")
_INTERP = re.compile(r"\{\{\{\{|\{\{(.*?)\}\}")


def looks_like(path: Path) -> bool:
    """A justfile by its name (`justfile`, `Justfile`, `.justfile`, `*.just`)."""
    return path.name in NAMES or path.suffix == ".just"


def _literal(text: str) -> str | None:
    if len(text) >= 2 and text[0] == text[-1] and text[0] in "'\"":
        return text[1:-1]
    return None


class _Just:
    def __init__(self, where: str) -> None:
        self.vars: dict[str, str] = {}
        self.where = where
        self.budget = Budget(where)  # `a := a + a` doubles a value: measured before joined

    def value(self, expr: str, line: int, scope: dict[str, str]) -> str:
        """The shell text of a just expression (no evaluation: the shell's own forms)."""
        terms = [t.strip() for t in _split_plus(expr)]
        if len(terms) > MAX_TERMS:
            raise InputError(f"{self.where}:{line}: an expression of more than {MAX_TERMS} "
                             "terms; not read")
        parts = [self._term(term, line, scope) for term in terms]
        self.budget.charge(sum(map(len, parts)), line)
        return "".join(parts)

    def _term(self, term: str, line: int, scope: dict[str, str]) -> str:
        literal = _literal(term)
        if literal is not None:
            return literal
        if term in scope:
            return scope[term]
        if term in self.vars:
            return self.vars[term]
        if len(term) >= 2 and term[0] == term[-1] == "`":
            return f"$({term[1:-1]})"  # a command's output: the shell reader's placeholder
        call = _CALL.match(term)
        if call is not None:
            name = _literal(call.group(2)) or ""
            default = _literal(call.group(3)) if call.group(3) else None
            return f"${{{name}:-{default}}}" if default is not None else f"${{{name}}}"
        raise InputError(f"{self.where}:{line}: the just expression `{term[:60]}` is not read "
                         "(give the recipe's command as a script)")

    def line(self, text: str, number: int, scope: dict[str, str]) -> str:
        size = len(text)

        def one(match: re.Match) -> str:
            nonlocal size
            if match.group(0) == "{{{{":
                return "{{"
            value = self.value(match.group(1), number, scope)
            size += len(value)
            self.budget.check(size, number)
            return value
        return _INTERP.sub(one, text)


def _split_plus(expr: str) -> list[str]:
    """`a + 'b+c' + c` into its terms (a `+` inside quotes or backquotes is kept)."""
    terms, current, quote = [], "", ""
    for char in expr:
        if quote:
            quote = "" if char == quote else quote
        elif char in "'\"`":
            quote = char
        elif char == "+":
            terms.append(current)
            current = ""
            continue
        current += char
    return terms + [current]


def _parameters(text: str, just: _Just, line: int) -> dict[str, str]:
    scope = {}
    for match in _PARAM.finditer(text):
        name, default = match.group(1), match.group(2)
        scope[name] = just.value(default, line, {}) if default else f"${{{name}}}"
    return scope


def to_shell(text: str, where: str) -> tuple[str, list[str]]:
    """(the shell text of the justfile's recipes, line for line; notes on the recipe lines)."""
    just = _Just(where)
    out: list[str] = []
    notes: list[str] = []
    recipe: str | None = None
    first_body = False
    scope: dict[str, str] = {}
    for number, line in enumerate(text.splitlines(), 1):
        stripped = line.strip()
        if recipe is not None and line[:1] in (" ", "\t") and stripped:
            if stripped.startswith("#!") and first_body:
                raise InputError(f"{where}:{number}: a shebang recipe ({stripped[:40]}) runs "
                                 "another interpreter; give its command as a script")
            first_body = False
            continued = bool(out) and out[-1].endswith("\\")
            body = stripped[1:] if stripped[:1] in "@-" and not continued else stripped
            out.append(just.line(body, number, scope))
            continue
        if stripped:  # a body ends at the first line that is not indented
            recipe = None
        word = stripped.split()[0] if stripped else ""
        if not stripped or stripped.startswith("#") or stripped.startswith("["):
            out.append("")
        elif word in ("set", "alias", "import", "mod"):
            notes.append(f"line {number}: just `{stripped[:60]}` (not a command)")
            out.append("")
        elif (assign := _ASSIGN.match(stripped)) is not None:
            exported, name, expr = assign.groups()
            just.vars[name] = just.value(expr, number, {})
            out.append(f"export {name}={_quote(just.vars[name])}" if exported else "")
        elif (header := _RECIPE.match(stripped)) is not None:
            recipe, first_body = header.group(1), True
            scope = _parameters(header.group(2), just, number)
            notes.append(f"line {number}: just recipe `{recipe}` (its body read as shell; the "
                         "header runs nothing)")
            out.append("")
        else:
            raise InputError(f"{where}:{number}: not a justfile line (`{stripped[:60]}`)")
    return "\n".join(out) + "\n", notes


def _quote(value: str) -> str:
    return '"' + value.replace("\\", "\\\\").replace('"', '\\"') + '"'
