"""SSH destinations and jump hosts in configs: strict patterns, so a value never becomes an ssh option.

A destination is `host`, `user@host` or an ssh_config alias; a jump list is `[user@]host[:port]`
entries separated by commas. Anything starting with `-` (`-oProxyCommand=...`) or holding other
characters (spaces, newlines, quotes) is refused with a `ConfigError`. Matched whole
(`fullmatch`), so a trailing newline is refused too.
"""

from __future__ import annotations

import re

from sparktriage.errors import ConfigError

_DEST = re.compile(r"[A-Za-z0-9_][A-Za-z0-9_.%+-]*(@[A-Za-z0-9_.:%\[\]-]+)?|[A-Za-z0-9_.:%\[\]-]+")
_JUMP = re.compile(r"[A-Za-z0-9_][A-Za-z0-9_.%@:\[\],+-]*")


def check_destination(value: str, what: str = "ssh destination") -> str:
    if not value or value.startswith("-") or not _DEST.fullmatch(value):
        raise ConfigError(f"{what} {value!r} is not a host, user@host or ssh_config alias")
    return value


def check_jump(value: str) -> str:
    if not value or value.startswith("-") or not _JUMP.fullmatch(value):
        raise ConfigError(f"proxy_jump {value!r} is not a [user@]host[:port][,...] list")
    return value


__all__ = ["check_destination", "check_jump"]
