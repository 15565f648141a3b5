"""The small script a container runs (`bash -c "ray start --head ... && vllm serve ..."`), read
as data: its commands, the serve command and the `ray start` among them.

Compose `command:` strings and `docker run IMAGE bash -c "..."` hold one-line scripts: commands
joined by `&&`, `;`, `||`, `&` or newlines, with `export`, `NAME=value` prefixes, `exec`,
`cd`, `echo`, `sleep`, `pip install`. They are split with `shlex` (punctuation aware, POSIX
mode, no shell); a command substitution `$(...)` or backticks become the placeholder
`<supply:command-output>` and an `unknowns` row (it is never run). Variables are expanded
from the script's own assignments and exports, then the container's environment (compose
`environment:` after .env / env_file interpolation, `docker run -e`), as in the container
(`${VAR:-default}` takes the default when neither sets VAR); any other becomes `<supply:VAR>` with an unknowns row. Commands that
are neither the server nor `ray start` are listed as unknown (not reproduced) or noted when
harmless.
"""

from __future__ import annotations

import os
import re
import shlex
from dataclasses import dataclass, field

from sparktriage.errors import InputError
from sparktriage.reproduce.importers.common import Ctx
from sparktriage.reproduce.importers.compose_vars import Interpolator
from sparktriage.reproduce.importers.ray_start import is_ray_start
from sparktriage.reproduce.shell import assignment

OPERATORS = {"&&", "||", ";", "&", "|", ";;"}
HARMLESS = {"echo", "sleep", "cd", "set", "true", ":", "printf", "wait", "trap", "ulimit",
            "nvidia-smi", "ray status", "ls", "cat", "date", "env", "printenv", "mkdir",
            "ibv_devinfo", "ip", "hostname"}
WRAPPERS = {"exec", "nohup", "time", "command"}
MAX_COMMANDS = 200
SUBSTITUTED = "<supply:command-output>"


@dataclass
class ScriptCommand:
    words: list[str]
    env: dict[str, str] = field(default_factory=dict)  # NAME=value prefixes and exports before


def _unquoted_newlines(text: str) -> str:
    """Newlines outside quotes become `;` (they end a command); continuations are joined."""
    text = re.sub(r"\\\r?\n", " ", text)
    out, quote = [], None
    for ch in text:
        if quote:
            if ch == quote:
                quote = None
        elif ch in ("'", '"'):
            quote = ch
        elif ch == "\n":
            ch = " ; "
        out.append(ch)
    return "".join(out)


def _substitutions(text: str, ctx: Ctx, where: str) -> str:
    """`$(...)` (balanced) and backticks outside single quotes become a placeholder word."""
    out, i, quote = [], 0, None
    while i < len(text):
        ch = text[i]
        if quote == "'":
            quote = None if ch == "'" else quote
            out.append(ch)
            i += 1
            continue
        if ch == "'" and quote is None:
            quote = "'"
        elif ch == '"':
            quote = None if quote == '"' else '"'
        if text.startswith("$(", i) or ch == "`":
            end = _closing(text, i)
            ctx.flag_unknown(text[i:end][:200], f"{where}: command substitution, not run; "
                             f"written as {SUBSTITUTED}")
            out.append(SUBSTITUTED)
            i = end
            continue
        out.append(ch)
        i += 1
    return "".join(out)


def _closing(text: str, i: int) -> int:
    if text[i] == "`":
        end = text.find("`", i + 1)
        return len(text) if end < 0 else end + 1
    depth, j = 0, i + 1
    while j < len(text):
        if text[j] == "(":
            depth += 1
        elif text[j] == ")":
            depth -= 1
            if depth == 0:
                return j + 1
        j += 1
    return len(text)


def split_script(script: str, ctx: Ctx, line: int | None,
                 environment: dict[str, str] | None = None) -> list[ScriptCommand]:
    """The commands of a one-line container script, exports and prefixes carried as env;
    `line`: where the script is in its input (errors are `input:line: ...`); `environment`:
    the container's own (compose `environment:`/`env_file:`, `docker run -e`), which the
    script sees as the shell in the container does (its own assignments win)."""
    base = dict(environment or {})
    where = f"line {line}"
    at = f"{ctx.source}:{line}"
    # whole-line comments (a `#!/bin/bash` line, `# notes`) end at their newline, which
    # _unquoted_newlines turns into `;`: drop them first
    script = re.sub(r"(?m)^[ \t]*#.*$", "", script)
    text = _substitutions(_unquoted_newlines(script), ctx, where)
    lexer = shlex.shlex(text, posix=True, punctuation_chars=";&|")
    lexer.whitespace_split = True
    try:
        tokens = list(lexer)
    except ValueError as exc:
        raise InputError(f"{at}: the container's script cannot be split ({exc})") from None
    commands: list[list[str]] = [[]]
    for token in tokens:
        if token in OPERATORS:
            commands.append([])
        else:
            commands[-1].append(token)
    if len(commands) > MAX_COMMANDS:
        raise InputError(f"{at}: the container's script has more than {MAX_COMMANDS} "
                         "commands; not a launch command")
    out: list[ScriptCommand] = []
    exported: dict[str, str] = {}
    shell: dict[str, str] = {}  # `X=value` alone: a variable of the script, not exported
    for words in commands:
        env = dict(exported)
        # the script's own variables; others: placeholders
        interp = Interpolator({**base, **shell, **env}, ctx)
        words = [interp.text(w, where) if "$" in w else w for w in words]
        prefix: dict[str, str] = {}
        while words and (assignment(words[0]) or words[0] in WRAPPERS):
            pair = assignment(words[0])
            if pair:
                prefix[pair[0]] = pair[1]
            words = words[1:]
        if not words:  # assignments alone set variables for the commands after them
            shell.update(prefix)
            continue
        env.update(prefix)
        if words[0] == "export":
            for word in words[1:]:
                pair = assignment(word)
                if pair:
                    exported[pair[0]] = pair[1]
                    shell.pop(pair[0], None)
                elif word in shell:  # `X=1; export X`
                    exported[word] = shell.pop(word)
            continue
        out.append(ScriptCommand(words, env))
    return out


def is_harmless(words: list[str]) -> bool:
    base = os.path.basename(words[0])
    return base in HARMLESS or " ".join([base] + words[1:2]) in HARMLESS


def pick(commands: list[ScriptCommand], finder, ctx: Ctx,
         line: int | None) -> tuple[ScriptCommand | None, ScriptCommand | None]:
    """(the serve command, the ray start command) among a script's commands; the others are
    noted (harmless) or listed as unknown."""
    where = f"line {line}"
    serve = ray = None
    for command in commands:
        if finder(command.words):
            if serve is not None:
                raise InputError(f"{ctx.source}:{line}: the container's script runs two vllm "
                                 "serve commands (expected one)")
            serve = command
        elif is_ray_start(command.words):
            ray = ray or command
        elif is_harmless(command.words):
            ctx.note(f"{where}: `{' '.join(command.words)[:80]}` in the container's script: "
                     "not needed to reproduce")
        else:
            ctx.flag_unknown(" ".join(command.words)[:300], f"{where}: command in the "
                             "container's script, not the server; not reproduced")
    return serve, ray
