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
from typing import NoReturn

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


def _fail(source: str, line: int, message: str) -> NoReturn:
    raise InputError(f"{source}:{line}: {message}")


_SUBSTITUTION = ("command substitution ($(...) or backticks) would run a command; replace it "
                 "with its value")
_TEE = re.compile(r"\s*tee(\s+-a)?\s+[^\s;&|`$()<>]+\s*(&\s*)?$")


@dataclass
class _Scanner:
    """One pass over shell text: the position, the open quote and the command being read."""

    text: str
    source: str
    i: int = 0
    line: int = 1
    start: int = 1  # the line the current command began on
    quote: str = ""
    stop: bool = False  # after `| tee`, `&` or a redirection: the rest of the command is skipped
    buf: list[str] = field(default_factory=list)  # the current command's characters
    notes: list[str] = field(default_factory=list)  # the current command's notes
    commands: list[Command] = field(default_factory=list)

    def run(self) -> list[Command]:
        while self.i < len(self.text):
            self.step(self.text[self.i])
        if self.quote:
            _fail(self.source, self.start, f"unbalanced {self.quote} quote")
        self.finish()
        return self.commands

    def step(self, ch: str) -> None:
        """Read the character at `i`: inside single quotes, an escape, inside double quotes,
        or outside quotes."""
        if self.quote == "'":
            if ch == "'":
                self.quote = ""
            self.quoted(ch)
        elif ch == "\\" and self.i + 1 < len(self.text):
            self.escape()
        elif self.quote == '"':
            if ch == '"':
                self.quote = ""
            elif self.substitution():
                _fail(self.source, self.line, _SUBSTITUTION)
            self.quoted(ch)
        else:
            self.unquoted(ch)

    def keep(self, chars: str) -> None:
        if not self.stop:
            self.buf.append(chars)

    def substitution(self) -> bool:
        return self.text[self.i] == "`" or self.text.startswith("$(", self.i)

    def quoted(self, ch: str) -> None:
        """A character inside quotes: kept as written (newlines counted)."""
        if ch == "\n":
            self.line += 1
        self.keep(ch)
        self.i += 1

    def escape(self) -> None:
        """A backslash and the next character; a backslash-newline joins the lines."""
        if self.text[self.i + 1] == "\n":  # continuation, also inside double quotes
            self.line += 1
        else:
            self.keep(self.text[self.i:self.i + 2])
        self.i += 2

    def unquoted(self, ch: str) -> None:
        if ch in "'\"":
            self.quote = ch
        elif self.substitution():
            _fail(self.source, self.line, _SUBSTITUTION)
        elif ch == "#" and (not self.buf or self.buf[-1][-1:] in " \t\n"):
            self.i = self.end_of_line()  # a comment, up to the newline
            return
        elif ch == "\n":
            self.finish()
            self.line += 1
            self.start = self.line
            self.i += 1
            return
        elif ch in ";&|<>" or ch == "(" and not self.buf:
            self.operator(ch)
            self.i += 1
            return
        self.keep(ch)
        self.i += 1

    def operator(self, ch: str) -> None:
        """A shell operator outside quotes: ends the command with a note, or is an error."""
        text, i = self.text, self.i
        if ch in "<>" or ch == "&" and (text[i:i + 2] == "&>" or i > 0 and text[i - 1] == ">"):
            if not self.stop:
                while self.buf and self.buf[-1].isdigit() and len(self.buf) > 1 \
                        and self.buf[-2] in " \t":
                    self.buf.pop()  # the descriptor number of `2>`
                self.notes.append("output redirection ignored")
        elif ch == "(":
            _fail(self.source, self.line, "a subshell '(' would run commands; not reproduced")
        elif text[i:i + 2] in ("&&", "||", ";;") or ch == ";":
            op = text[i:i + 2] if text[i:i + 2] in ("&&", "||", ";;") else ch
            _fail(self.source, self.line, f"shell operator {op!r} joins commands; reproduce "
                  "reads one command per line (split it, or remove what follows)")
        elif ch == "|":
            if not _TEE.match(text[i + 1:self.end_of_line()]):
                _fail(self.source, self.line, "a pipe ('|') would run a second command; "
                      "reproduce reads one command per line (only a final '| tee FILE' is ignored)")
            self.notes.append("output piped to tee; the pipe is not reproduced")
        else:  # a single '&'
            if text[i + 1:self.end_of_line()].strip():
                _fail(self.source, self.line, "shell operator '&' joins commands; reproduce "
                      "reads one command per line")
            self.notes.append("ran in the background ('&')")
        self.stop = True

    def end_of_line(self) -> int:
        end = self.text.find("\n", self.i)
        return end if end >= 0 else len(self.text)

    def finish(self) -> None:
        """End the current command: split its words and keep it."""
        body = "".join(self.buf).strip()
        if body:
            try:
                words = shlex.split(body, comments=False, posix=True)
            except ValueError as exc:
                _fail(self.source, self.start, f"cannot split the command ({exc})")
            if any(_CONTROL.search(word) for word in words):
                _fail(self.source, self.start, "a quoted value contains a newline or a control "
                                               "character; write it on one line")
            self.commands.append(Command(self.start, words, body, self.notes))
        self.buf, self.notes, self.stop = [], [], False


def logical_commands(text: str, source: str) -> list[Command]:
    """Split shell text into commands (see the module doc for the policy)."""
    check_text(text, source)
    return _Scanner(text, source).run()


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
