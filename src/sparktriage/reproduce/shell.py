"""Shell text as data, for the importers: commands, words, assignments; nothing is executed.

Scripts are read by reproduce/bash (a real bash parser, tree-sitter-bash, walked statically:
docs/reproduce.md). This module keeps the small interface the docker and compose importers
use: `logical_commands` (every simple command a script could run, its words expanded),
`split_words` (one command string, such as a compose `command:`, into words, with no shell
semantics: more than one command, a pipe or a substitution is refused), `variables_in` and
`assignment`.
"""

from __future__ import annotations

import re
import shlex
from dataclasses import dataclass, field

from sparktriage.errors import InputError
from sparktriage.reproduce.bash import read_script
from sparktriage.reproduce.bash.tree import line, parse, text

MAX_INPUT_BYTES = 4 * 1024 * 1024
MAX_LINE_CHARS = 256 * 1024
ASSIGNMENT = re.compile(r"^([A-Za-z_][A-Za-z0-9_]*)=(.*)\Z", re.DOTALL)
VARIABLE = re.compile(r"\$(?:\{[A-Za-z_][A-Za-z0-9_]*[^}]*\}|[A-Za-z_][A-Za-z0-9_]*|[0-9@*#?$!-])")
_CONTROL = re.compile(r"[\x00-\x08\x0a-\x1f\x7f]")
# constructs a plain command string (not run by a shell) must not contain
_NOT_ONE_COMMAND = {"list": "a shell operator ('&&', '||') joins commands",
                    "pipeline": "a pipe ('|') would run a second command",
                    "command_substitution": "command substitution ($(...) or backticks) would "
                                            "run a command",
                    "process_substitution": "process substitution would run a command",
                    "subshell": "a subshell '(' would run commands",
                    "redirected_statement": "a redirection is shell syntax",
                    "ERROR": "cannot parse it as one command"}


@dataclass
class Command:
    """One simple command: its first line, its words (expanded), and notes on how it ran."""

    line: int
    words: list[str]
    text: str
    notes: list[str] = field(default_factory=list)


def check_text(text_: str, source: str) -> None:
    """Refuse input that is not text a consultant would have sent (NUL, huge lines)."""
    if "\x00" in text_:
        raise InputError(f"{source}: contains a NUL byte; not a text file")
    for number, row in enumerate(text_.split("\n"), 1):
        if len(row) > MAX_LINE_CHARS:
            raise InputError(f"{source}:{number}: line longer than {MAX_LINE_CHARS} characters")


def logical_commands(text_: str, source: str) -> list[Command]:
    """Every simple command the script could run (reproduce/bash), words expanded; the
    variables the script exported before it and its own `A=1` prefixes lead its words."""
    check_text(text_, source)
    script = read_script(text_, source)
    if script.errors:
        row, bad = script.errors[0]
        raise InputError(f"{source}:{row}: cannot parse `{bad[:60]}` as bash")
    out = []
    for c in script.commands:
        env = {**c.exported, **c.prefix}
        words = [f"{k}={v}" for k, v in env.items()] + list(c.words)
        out.append(Command(c.line, words, c.source, list(c.notes)))
    return out


def split_words(text_: str, source: str, row: int = 1) -> list[str]:
    """One command string (a compose `command:` string) into words, as a command line is split
    without a shell: quotes removed, `$X` kept as written; shell syntax beyond one simple
    command is refused with its construct."""
    check_text(text_, source)
    text_ = text_.replace("\n", " ")  # a YAML block string's lines are one command
    if not text_.strip():
        return []
    tree, data = parse(text_, source)
    statements = [n for n in tree.root_node.named_children if n.type != "comment"]
    if len(statements) > 1:
        raise InputError(f"{source}:{row}: more than one command")
    stack = list(statements)
    while stack:
        node = stack.pop()
        if node.type in _NOT_ONE_COMMAND or node.is_missing:
            what = _NOT_ONE_COMMAND.get(node.type, "cannot parse it as one command")
            raise InputError(f"{source}:{row + line(node) - 1}: {what} (`"
                             f"{' '.join(text(node, data).split())[:60]}`); not run: give the "
                             "command itself")
        stack.extend(node.children)
    try:
        words = shlex.split(text_, comments=False, posix=True)
    except ValueError as exc:
        raise InputError(f"{source}:{row}: cannot split the command ({exc})") from None
    if any(_CONTROL.search(word) for word in words):
        raise InputError(f"{source}:{row}: a quoted value contains a newline or a control "
                         "character; write it on one line")
    return words


def variables_in(word: str) -> list[str]:
    """Shell variables a word would have expanded (kept literal by reproduce)."""
    return VARIABLE.findall(word)


def assignment(word: str) -> tuple[str, str] | None:
    match = ASSIGNMENT.match(word)
    return (match.group(1), match.group(2)) if match else None
