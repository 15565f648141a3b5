"""Shell text as data: logical commands, words, assignments; nothing is ever executed.

A small quote-aware scanner splits a script into logical commands (line continuations joined,
comments dropped, quotes kept for `shlex`) and finds what a shell would have done beyond
word splitting: command substitution (`$(...)`, backticks), operators (`;`, `&&`, `||`, `|`,
`&`), redirections and variables. Words are then split with `shlex` in POSIX mode, without a
shell. Policy (docs/reproduce.md): substitution, `;`, `&&`, `||` and pipes other than a final
`| tee FILE` are input errors (exit 2, one line); a trailing `&`, redirections and `| tee` end
the command with a note; `$VAR` stays literal and is reported as unknown.
"""

from __future__ import annotations

import re
import shlex
from dataclasses import dataclass, field

from sparktriage.errors import InputError

MAX_INPUT_BYTES = 4 * 1024 * 1024
MAX_LINE_CHARS = 256 * 1024
ASSIGNMENT = re.compile(r"^([A-Za-z_][A-Za-z0-9_]*)=(.*)\Z", re.DOTALL)
VARIABLE = re.compile(r"\$(?:\{[A-Za-z_][A-Za-z0-9_]*[^}]*\}|[A-Za-z_][A-Za-z0-9_]*|[0-9@*#?$!-])")
_CONTROL = re.compile(r"[\x00-\x08\x0a-\x1f\x7f]")


@dataclass
class Command:
    """One logical command: its first line, its words, and what ended it."""

    line: int
    words: list[str]
    text: str
    notes: list[str] = field(default_factory=list)


def check_text(text: str, source: str) -> None:
    """Refuse input that is not text a consultant would have sent (NUL, huge lines)."""
    if "\x00" in text:
        raise InputError(f"{source}: contains a NUL byte; not a text file")
    for number, line in enumerate(text.split("\n"), 1):
        if len(line) > MAX_LINE_CHARS:
            raise InputError(f"{source}:{number}: line longer than {MAX_LINE_CHARS} characters")


def _fail(source: str, line: int, message: str) -> None:
    raise InputError(f"{source}:{line}: {message}")


def logical_commands(text: str, source: str) -> list[Command]:
    """Split shell text into commands (see the module doc for the policy)."""
    check_text(text, source)
    commands: list[Command] = []
    buf: list[str] = []
    notes: list[str] = []
    line = 1
    start = 1
    quote = ""
    i, n = 0, len(text)
    stop = False  # after `| tee`, `&` or a redirection: the rest of the command is skipped

    def finish() -> None:
        nonlocal buf, notes, stop
        body = "".join(buf).strip()
        if body:
            try:
                words = shlex.split(body, comments=False, posix=True)
            except ValueError as exc:
                _fail(source, start, f"cannot split the command ({exc})")
            for word in words:
                if _CONTROL.search(word):
                    _fail(source, start, "a quoted value contains a newline or a control "
                                         "character; write it on one line")
            commands.append(Command(start, words, body, notes))
        buf, notes, stop = [], [], False

    while i < n:
        ch = text[i]
        if quote == "'":
            if ch == "'":
                quote = ""
            if ch == "\n":
                line += 1
            if not stop:
                buf.append(ch)
            i += 1
            continue
        if ch == "\\" and i + 1 < n:
            if text[i + 1] == "\n":  # continuation, also inside double quotes
                line += 1
                i += 2
                continue
            if not stop:
                buf.append(text[i:i + 2])
            i += 2
            continue
        if quote == '"':
            if ch == '"':
                quote = ""
            elif ch == "`" or text.startswith("$(", i):
                _fail(source, line, "command substitution ($(...) or backticks) would run a "
                                    "command; replace it with its value")
            if ch == "\n":
                line += 1
            if not stop:
                buf.append(ch)
            i += 1
            continue
        # outside quotes
        if ch in "'\"":
            quote = ch
            if not stop:
                buf.append(ch)
            i += 1
            continue
        if ch == "`" or text.startswith("$(", i):
            _fail(source, line, "command substitution ($(...) or backticks) would run a "
                                "command; replace it with its value")
        if ch == "#" and (not buf or buf[-1][-1:] in " \t\n"):
            while i < n and text[i] != "\n":
                i += 1
            continue
        if ch == "\n":
            finish()
            line += 1
            start = line
            i += 1
            continue
        if ch in ";&|<>" or text.startswith("(", i) and not buf:
            op = text[i:i + 2] if text[i:i + 2] in ("&&", "||", ";;", ">>", "2>", "&>") else ch
            if ch in "<>" or (ch == "&" and text[i:i + 2] == "&>") or \
                    (ch == "&" and i > 0 and text[i - 1] == ">"):
                if not stop:
                    while buf and buf[-1].isdigit() and len(buf) > 1 and buf[-2] in " \t":
                        buf.pop()  # the descriptor number of `2>`
                    notes.append("output redirection ignored")
                stop = True
                i += 1
                continue
            if op in ("&&", "||", ";", ";;"):
                if stop and op == ";":
                    pass
                _fail(source, line, f"shell operator {op!r} joins commands; reproduce reads one "
                                    "command per line (split it, or remove what follows)")
            if op == "|":
                rest = text[i + 1:text.find("\n", i) if "\n" in text[i:] else n]
                if re.match(r"\s*tee(\s+-a)?\s+[^\s;&|`$()<>]+\s*(&\s*)?$", rest):
                    notes.append("output piped to tee; the pipe is not reproduced")
                    stop = True
                    i += 1
                    continue
                _fail(source, line, "a pipe ('|') would run a second command; reproduce reads "
                                    "one command per line (only a final '| tee FILE' is ignored)")
            if op == "&":
                rest = text[i + 1:text.find("\n", i) if "\n" in text[i:] else n]
                if rest.strip():
                    _fail(source, line, "shell operator '&' joins commands; reproduce reads one "
                                        "command per line")
                notes.append("ran in the background ('&')")
                stop = True
                i += 1
                continue
            if ch == "(":
                _fail(source, line, "a subshell '(' would run commands; not reproduced")
        if not stop:
            buf.append(ch)
        i += 1
    if quote:
        _fail(source, start, f"unbalanced {quote} quote")
    finish()
    return commands


def split_words(text: str, source: str, line: int = 1) -> list[str]:
    """One command string (a compose `command:` string) into words, with the same checks."""
    found = logical_commands(text.replace("\n", " "), source)
    if len(found) > 1:
        _fail(source, line, "more than one command")
    return found[0].words if found else []


def variables_in(word: str) -> list[str]:
    """Shell variables a word would have expanded (kept literal by reproduce)."""
    return VARIABLE.findall(word)


def assignment(word: str) -> tuple[str, str] | None:
    match = ASSIGNMENT.match(word)
    return (match.group(1), match.group(2)) if match else None
