"""Placeholders of an earlier reading (`<supply:NAME>`) kept as words when a command string is
read again as bash: `<supply:X>` would read as redirections, so each is swapped for a plain
word before the parse and swapped back in the commands read."""

from __future__ import annotations

import re
from dataclasses import replace

from sparktriage.reproduce.bash.walk import Simple

_PLACEHOLDER = re.compile(r"<supply:[A-Za-z0-9_.-]+>")


def protect(text: str) -> tuple[str, dict[str, str]]:
    """Placeholders in a command string read again as bash, as plain words (`<supply:X>`
    would read as redirections)."""
    tokens: dict[str, str] = {}

    def swap(match: re.Match) -> str:
        token = f"SUPPLYPLACEHOLDER{len(tokens)}X"
        tokens[token] = match.group(0)
        return token
    return _PLACEHOLDER.sub(swap, text), tokens


def restore(command: Simple, tokens: dict[str, str]) -> Simple:
    if not tokens:
        return command
    pattern = re.compile("|".join(map(re.escape, tokens)))

    def back(value: str) -> str:
        return pattern.sub(lambda m: tokens[m.group(0)], value)
    return replace(command, words=tuple(back(w) for w in command.words),
                   prefix={k: back(v) for k, v in command.prefix.items()},
                   exported={k: back(v) for k, v in command.exported.items()})
