"""`env` / `printenv` / `export -p` dumps: one node's environment, for the diff.

Lines `NAME=value`, `declare -x NAME="value"` or `export NAME=value`; a value may continue on
the next lines (a newline inside it) until the next `NAME=` line; `#` comment lines (an
env file's) are skipped. Values of secret-looking
names become placeholders. The dump feeds the diff only: the deployment's environment is what
the client's commands set.
"""

from __future__ import annotations

import re

from sparktriage.reproduce.importers.common import Ctx
from sparktriage.reproduce.importers.protocol import ReadInput
from sparktriage.reproduce.model import Facts, Imported

_LINE = re.compile(r"^(?:declare -x |export )?([A-Za-z_][A-Za-z0-9_]*)=(.*)\n?\Z")


def looks_like(text: str) -> bool:
    lines = [line for line in text.splitlines() if line.strip()
             and not line.lstrip().startswith("#")]  # an env file's comments
    if not lines:
        return False
    hits = sum(1 for line in lines if _LINE.match(line))
    return hits >= max(1, int(0.8 * len(lines)))


def parse(text: str, ctx: Ctx) -> Facts:
    env: dict[str, str] = {}
    last = None
    for line in text.splitlines():
        if line.lstrip().startswith("#") and not _LINE.match(line):
            continue  # a comment line of an env file (`.env`), not part of a value
        match = _LINE.match(line)
        if match:
            last = match.group(1)
            value = match.group(2)
            if line.startswith("declare -x ") and len(value) >= 2 and value[0] == value[-1] == '"':
                value = value[1:-1]
            env[last] = value
        elif last is not None:
            env[last] += "\n" + line
    # blank lines between an env file's assignments are not part of the value before them
    clean = {k: ctx.secrets.env_value(k, v.rstrip("\n"), "env dump")
             for k, v in sorted(env.items())}
    ctx.mapped.append(f"env dump: {len(clean)} variables -> facts")
    return Facts(source=ctx.source, env=clean)


_SHELL_VALUE = re.compile(r"""^["']|\$[{(A-Za-z_]""")


def shell_syntax(text: str) -> bool:
    """Is this an env file written in shell syntax (`X="${X:-d}"`, `Y=$(whoami)`, quoted
    values) rather than a dump of values? Such a file is what a script `source`s: it is
    read as a script where it is sourced, its quotes and expansions evaluated."""
    return any(_SHELL_VALUE.search(m.group(2)) for line in text.splitlines()
               if (m := _LINE.match(line)) and not line.startswith("declare -x "))


class EnvImporter:
    """An env dump (`env`, `printenv`, `export -p`, an env file): one node's environment."""

    kind = "env"
    role = "values"

    def claims(self, source: ReadInput) -> bool:
        return looks_like(source.text)

    def read(self, source: ReadInput, ctx: Ctx) -> Imported:
        return ctx.result(facts=[parse(source.text, ctx)])
