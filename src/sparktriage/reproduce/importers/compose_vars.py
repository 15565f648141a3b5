"""Compose's variables: the `.env` beside a compose file, `env_file:` files and `${VAR}`
interpolation, read the way `docker compose` reads them, without a shell.

Interpolation: `$$` is a literal `$`; `$VAR` and `${VAR}`; `${VAR:-default}` (unset or empty)
and `${VAR-default}` (unset); `${VAR:?message}` / `${VAR?message}` (required);
`${VAR:+other}` / `${VAR+other}`; defaults may hold further `${...}` (at most `MAX_NESTING`
deep). Values come from the `.env` file only: the client's shell is not known here, so a
variable with no value and no default becomes `<supply:VAR>` with an `unknowns` row at its
line. Referenced files (`.env`, `env_file:`) are read only when they lie inside the input's
own folder (symlinks resolved), at most `MAX_ENV_FILE_BYTES`.
"""

from __future__ import annotations

import os
import re
from pathlib import Path
from typing import Any

from sparktriage.limits import check_lines
from sparktriage.reproduce.importers.common import Ctx
from sparktriage.reproduce.secrets import placeholder

MAX_ENV_FILE_BYTES = 1 << 20
MAX_NESTING = 8
_NAME = re.compile(r"[A-Za-z_][A-Za-z0-9_]*")
_LINE = re.compile(r"^\s*(?:export\s+)?([A-Za-z_][A-Za-z0-9_.-]*)\s*=\s*(.*)\Z")


def inside(base: Path, ref: str) -> Path | None:
    """`ref` against `base` (a folder) when it stays inside it after symlinks, else None."""
    if "\x00" in ref:  # no file has such a name (and the OS refuses to look it up)
        return None
    root = Path(os.path.realpath(base))
    target = Path(os.path.realpath(root / ref))
    if target != root and root not in target.parents:
        return None
    return target


def read_env_file(path: Path, ctx: Ctx, what: str) -> dict[str, str] | None:
    """A dotenv file (`NAME=value`, `export NAME=value`, quotes, comments) or None when it
    cannot be read (an unknowns row says why)."""
    try:
        with open(path, "rb") as fh:
            raw = fh.read(MAX_ENV_FILE_BYTES + 1)
    except OSError as exc:
        ctx.flag_unknown(what, f"{path.name}: not read ({exc.strerror or exc}); give its "
                         "content as an input (an env dump)")
        return None
    if len(raw) > MAX_ENV_FILE_BYTES or b"\x00" in raw:
        ctx.flag_unknown(what, f"{path.name}: over 1 MiB or not text; not read")
        return None
    check_lines(raw, str(path))
    out: dict[str, str] = {}
    for line in raw.decode("utf-8", errors="replace").splitlines():
        match = _LINE.match(line)
        if not match or line.lstrip().startswith("#"):
            continue
        value = match.group(2).strip()
        if value[:1] in ("'", '"') and value.endswith(value[0]) and len(value) > 1:
            value = value[1:-1]
        else:
            value = re.sub(r"\s+#.*$", "", value)
        out[match.group(1)] = value
    return out


class Interpolator:
    """`${...}` against known values; unknown ones become placeholders (recorded once each)."""

    def __init__(self, values: dict[str, str], ctx: Ctx) -> None:
        self.values = values
        self.ctx = ctx
        self.reported: set[str] = set()

    def text(self, value: str, where: str) -> str:
        out, _ = self._scan(value, 0, where, 0, None)
        return out

    def _scan(self, s: str, i: int, where: str, depth: int, stop: str | None) -> tuple[str, int]:
        out = []
        while i < len(s):
            ch = s[i]
            if stop is not None and ch == stop:
                return "".join(out), i
            if ch != "$":
                out.append(ch)
                i += 1
                continue
            nxt = s[i + 1:i + 2]
            if nxt == "$":
                out.append("$")
                i += 2
            elif nxt == "{":
                text, i = self._braced(s, i + 2, where, depth)
                out.append(text)
            elif (m := _NAME.match(s, i + 1)):
                out.append(self._lookup(m.group(0), where))
                i = m.end()
            else:
                out.append("$")
                i += 1
        return "".join(out), i

    def _braced(self, s: str, i: int, where: str, depth: int) -> tuple[str, int]:
        m = _NAME.match(s, i)
        if not m or depth >= MAX_NESTING:
            end = s.find("}", i)
            end = len(s) if end < 0 else end
            self.ctx.flag_unknown(s[i - 2:end + 1], f"{where}: interpolation not understood; "
                                  "kept as written")
            return s[i - 2:end + 1], end + 1
        name, i = m.group(0), m.end()
        op = ""
        for candidate in (":-", ":?", ":+", "-", "?", "+"):
            if s.startswith(candidate, i):
                op, i = candidate, i + len(candidate)
                break
        arg = ""
        if op:
            arg, i = self._scan(s, i, where, depth + 1, "}")
        if i >= len(s) or s[i] != "}":
            self.ctx.flag_unknown(s, f"{where}: unclosed ${{; kept as written")
            return "${" + name + op + arg, i
        i += 1
        value = self.values.get(name)
        empty_counts = op.startswith(":")
        unset = value is None or (empty_counts and value == "")
        if op in (":-", "-"):
            return (arg if unset else value), i
        if op in (":+", "+"):
            return ("" if unset else arg), i
        if op in (":?", "?") and unset:
            self._unknown(name, where, f"compose requires it ({arg or 'no message'})")
            return placeholder(name), i
        return self._lookup(name, where), i

    def _lookup(self, name: str, where: str) -> str:
        value = self.values.get(name)
        if value is not None:
            return value
        self._unknown(name, where, "set in the client's shell or .env, not given")
        return placeholder(name)

    def _unknown(self, name: str, where: str, why: str) -> None:
        self.ctx.secrets.declare(name, where)
        if name not in self.reported:
            self.reported.add(name)
            self.ctx.flag_unknown(f"${{{name}}}", f"{where}: {why}; written as "
                                  f"{placeholder(name)}")

    def tree(self, data: Any, lines: dict[tuple, int], path: tuple = ()) -> Any:
        """Every string value of `data` interpolated (keys are not, as in compose)."""
        if isinstance(data, dict):
            return {k: self.tree(v, lines, path + (k,)) for k, v in data.items()}
        if isinstance(data, list):
            return [self.tree(v, lines, path + (i,)) for i, v in enumerate(data)]
        if isinstance(data, str) and "$" in data:
            return self.text(data, f"line {_line(lines, path)}")
        return data


def _line(lines: dict[tuple, int], path: tuple) -> int | str:
    while path:
        if path in lines:
            return lines[path]
        path = path[:-1]
    return "?"
