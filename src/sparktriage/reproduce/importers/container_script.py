"""The small script a container runs (`bash -c "ray start --head ... && vllm serve ..."`), read
as data: its commands, the serve command and the `ray start` among them.

Compose `command:` strings, Kubernetes `command:`/`args:`, `docker run IMAGE bash -c "..."` and
recipe commands hold small scripts: commands joined by `&&`, `;`, `||`, `&`, pipes or newlines,
with `export`, `NAME=value` prefixes, `exec`, `set -e`, `if`, here-strings, `cd`, `echo`,
`sleep`, `pip install`. They are read by the one shell reader (reproduce/bash: tree-sitter-bash,
walked statically; it knows nothing of vLLM), as every script is: a command substitution
`$(...)` is never run (it becomes a `<supply:NAME>` placeholder and an `unknowns` row).
Variables are expanded from the script's own assignments and exports, then the container's
environment (compose `environment:` after .env / env_file interpolation, `docker run -e`,
a pod's `env:`), as in the container (`${VAR:-default}` takes the default when neither sets
VAR); any other becomes `<supply:VAR>` with an unknowns row. Commands that are neither the
server nor `ray start` are listed as unknown (not reproduced) or noted when harmless.
"""

from __future__ import annotations

from dataclasses import dataclass, field

from sparktriage.errors import InputError
from sparktriage.reproduce.bash import Hole, read_script
from sparktriage.reproduce.bash.placeholders import protect, restore
from sparktriage.reproduce.importers.common import Ctx
from sparktriage.reproduce.importers.ray_start import is_ray_start
from sparktriage.reproduce.meaning.harmless import in_container
from sparktriage.reproduce.meaning.wrappers import NAME, TABLE
from sparktriage.reproduce.secrets import placeholder

# the wrappers that run the word right after their name (`exec vllm serve ...`): the wrappers'
# table's rows read that way
WRAPPERS = frozenset(n for row in TABLE if row.find == NAME for n in row.names)
MAX_COMMANDS = 200


@dataclass
class ScriptCommand:
    words: list[str]
    env: dict[str, str] = field(default_factory=dict)  # NAME=value prefixes and exports before


def split_script(script: str, ctx: Ctx, line: int | None,
                 environment: dict[str, str] | None = None) -> list[ScriptCommand]:
    """The commands of a container's script, exports and prefixes carried as env; `line`:
    where the script is in its input (errors are `input:line: ...`); `environment`: the
    container's own (compose `environment:`/`env_file:`, `docker run -e`), which the script
    sees as the shell in the container does (its own assignments win)."""
    at = f"{ctx.source}:{line}"
    text, tokens = protect(script)  # placeholders of an earlier reading stay words
    try:
        read = read_script(text, f"{at} (container script)", dict(environment or {}))
    except InputError as exc:
        raise InputError(f"{at}: the container's script cannot be read "
                         f"({exc.message.split(': ', 1)[-1]})") from None
    if read.errors:
        _, bad = read.errors[0]
        what = f"unbalanced {bad[0]} quote" if bad[:1] in ("'", '"', "`") else \
            f"`{bad[:60]}` is not bash"
        raise InputError(f"{at}: the container's script cannot be split ({what})")
    if len(read.commands) > MAX_COMMANDS:
        raise InputError(f"{at}: the container's script has more than {MAX_COMMANDS} "
                         "commands; not a launch command")
    _unknowns(read.holes, ctx, line)
    out: list[ScriptCommand] = []
    for command in read.commands:
        command = restore(command, tokens)
        words = list(command.words)
        while words and words[0] in WRAPPERS:
            words = words[1:]
        if words:
            out.append(ScriptCommand(words, {**command.exported, **command.prefix}))
    return out


def _unknowns(holes: list[Hole], ctx: Ctx, line: int | None) -> None:
    """What the script computes at run time or leaves unset: one row each, its placeholder
    declared (a value to supply on the lab)."""
    where = f"line {line}"
    seen: set[str] = set()
    for hole in holes:
        if hole.name in seen or hole.dropped:
            continue
        seen.add(hole.name)
        what = ctx.secrets.text(hole.what)  # a construct's text may hold a secret
        ctx.secrets.declare(hole.name, f"{ctx.source}:{line}: {what}")
        shown = f"${{{hole.name}}}" if "is not set" in hole.what else what[:200]
        ctx.flag_unknown(shown, f"{where}: {what}; not run: written as "
                         f"{placeholder(hole.name)}")


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
        elif in_container(command.words) == "note":
            ctx.note(f"{where}: `{' '.join(command.words)[:80]}` in the container's script: "
                     "not needed to reproduce")
        else:
            ctx.flag_unknown(" ".join(command.words)[:300], f"{where}: command in the "
                             "container's script, not the server; not reproduced")
    return serve, ray
