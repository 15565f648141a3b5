"""systemd units: a `.service` whose `ExecStart=` runs `vllm serve`, `docker run` or a script.

The unit is read as systemd reads it, never run: sections, `Key=value` lines, `\\` line
continuations, comments (`#`, `;`). Of `[Service]`:

- `Environment=` (space-separated assignments, each optionally quoted) and
  `EnvironmentFile=` (a dotenv file beside the input, read bounded; `-` marks it optional; one
  not given is an unknowns row) are the command's environment;
- `ExecStart=` is split into words the way systemd splits it (quotes and backslashes; `;`,
  `|`, `>` are plain characters there, not shell operators); its prefixes `-@:+!` are taken
  off; `${VAR}` and a whole-word `$VAR` are the unit's variables (a word `$VAR` splits at
  blanks), `%%` is `%`, `%h`/`%u` the user's home and name (placeholders). An empty `ExecStart=` resets the list, as in a drop-in;
- `ExecStartPre=`, `ExecStartPost=`, `ExecStop=`, `ExecReload=` are commands around the server
  (listed like a script's other commands); `WorkingDirectory=` is a `cd`; the other keys are
  notes.

The unit becomes an equivalent bash text, line for line (the same line numbers), read by the
serve importer (reproduce/bash): what runs is the same set of words. A unit with no
`ExecStart=`, or one whose command line cannot be split (an unbalanced quote), is refused with
one line naming the construct and its line.
"""

from __future__ import annotations

import re
import shlex
from pathlib import Path

from sparktriage.errors import InputError
from sparktriage.limits import TEXT_LINE_MAX_BYTES, LimitError, limit_hit, size_text
from sparktriage.reproduce.bash import read_script
from sparktriage.reproduce.bash.transcript import commands_of
from sparktriage.reproduce.importers.common import Ctx
from sparktriage.reproduce.importers.compose_vars import inside, read_env_file
from sparktriage.reproduce.importers.protocol import ReadInput
from sparktriage.reproduce.importers.serve import import_script
from sparktriage.reproduce.model import Imported

_SECTION = re.compile(r"^\s*\[([^\]]+)\]\s*\Z")
_KEY = re.compile(r"^\s*([A-Za-z][A-Za-z0-9]*)\s*=\s?(.*)\Z")
_COMMANDS = {"ExecStart", "ExecStartPre", "ExecStartPost", "ExecStop", "ExecStopPost",
             "ExecReload", "ExecCondition"}
_NAME = re.compile(r"^[A-Za-z_][A-Za-z0-9_]*\Z")
_WORD_VAR = re.compile(r"^\$([A-Za-z_][A-Za-z0-9_]*)\Z")
_BRACED = re.compile(r"\$\{([A-Za-z_][A-Za-z0-9_]*)\}")

MAX_LINES = 20_000


def looks_like_unit(text: str) -> bool:
    """A `[Service]` section with `ExecStart=`, and nothing but sections and `Key=value` lines
    from the first section on (a script that writes a unit from a here-document is a
    script)."""
    if not (re.search(r"(?m)^\s*\[Service\]\s*$", text)
            and re.search(r"(?m)^\s*ExecStart\s*=", text)):
        return False
    try:
        lines = [joined.strip() for _, joined, _ in _logical_lines(text)]
    except LimitError:
        raise  # a line past the limit: refused, not read as something else
    except InputError:
        return False
    lines = [ln for ln in lines if ln and not ln.startswith(("#", ";"))]
    return bool(lines) and _SECTION.match(lines[0]) is not None and all(
        _SECTION.match(ln) or _KEY.match(ln) for ln in lines)


def _logical_lines(text: str, source: str = "unit") -> list[tuple[int, str, int]]:
    """(first line, the joined text, lines it spans): `\\` at the end continues a line."""
    out: list[tuple[int, str, int]] = []
    lines = text.splitlines()
    if len(lines) > MAX_LINES:
        raise InputError(f"more than {MAX_LINES} lines; not a systemd unit a client sends")
    i = 0
    while i < len(lines):
        start, parts = i, [lines[i]]
        while parts[-1].rstrip().endswith("\\") and i + 1 < len(lines):
            parts[-1] = parts[-1].rstrip()[:-1]
            i += 1
            parts.append(lines[i])
        joined = " ".join(p.strip() for p in parts)
        if len(joined) > TEXT_LINE_MAX_BYTES:  # continued lines are one line to systemd
            raise limit_hit("a line (continued with \\)", size_text(TEXT_LINE_MAX_BYTES),
                            source, start + 1)
        out.append((start + 1, joined, i - start + 1))
        i += 1
    return out


def _split(value: str, source: str, at: int, key: str) -> list[str]:
    try:
        return shlex.split(value, comments=False, posix=True)
    except ValueError:
        raise InputError(f"{source}:{at}: unbalanced quote in {key}=: the command line of "
                         "the unit cannot be read") from None


def _word(word: str) -> str:
    """One ExecStart word as bash text with the same value: variables the unit sets stay
    expansions (bash reads them from the exports above it), nothing else is special."""
    # specifiers: %h and %u are the service user's home and name (known on the lab only)
    word = word.replace("%%", "\0").replace("%h", "${HOME}").replace("%u", "${USER}")
    word = word.replace("\0", "%")
    whole = _WORD_VAR.match(word)
    if whole:
        return f"${whole.group(1)}"  # systemd splits `$VAR` at blanks, as bash does unquoted
    out, last = [], 0
    for match in _BRACED.finditer(word):
        out.append(_quoted(word[last:match.start()]))
        out.append(f'"${{{match.group(1)}}}"')
        last = match.end()
    out.append(_quoted(word[last:]))
    return "".join(p for p in out if p) or "''"


def _quoted(text: str) -> str:
    return shlex.quote(text) if text else ""


def _environment(value: str, source: str, at: int) -> list[tuple[str, str]]:
    pairs = []
    for item in _split(value, source, at, "Environment"):
        name, eq, val = item.partition("=")
        if eq and _NAME.match(name):
            pairs.append((name, val))
    return pairs


def _exports(pairs: list[tuple[str, str]]) -> str:
    return "export " + " ".join(f"{k}={shlex.quote(v)}" for k, v in pairs) if pairs else ""


def unit_script(text: str, path: Path, ctx: Ctx) -> str:
    """The unit as bash text, line for line (module doc)."""
    source = str(path)
    lines = text.splitlines()
    out = [""] * len(lines)
    section = ""
    starts: list[int] = []
    for at, joined, span in _logical_lines(text, source):
        stripped = joined.strip()
        sec = _SECTION.match(stripped)
        if sec:
            section = sec.group(1)
            continue
        if not stripped or stripped.startswith(("#", ";")):
            continue
        key_value = _KEY.match(stripped)
        if key_value is None:
            ctx.note(f"line {at}: not a Key=value line of a unit: {stripped[:80]}")
            continue
        key, value = key_value.groups()
        if section != "Service":
            continue
        if key == "Environment":
            out[at - 1] = _exports(_environment(value, source, at))
            ctx.mapped.append(f"line {at}: Environment= -> env")
        elif key == "EnvironmentFile":
            out[at - 1] = _env_file(value.strip(), path, ctx, at)
        elif key in _COMMANDS:
            command = value.strip()
            if key == "ExecStart" and not command:
                for row in starts:  # `ExecStart=` alone resets the list (drop-ins)
                    out[row - 1] = ""
                starts.clear()
                continue
            command = command.lstrip("-@:+!")
            words = _split(command, source, at, key)
            if not words:
                continue
            out[at - 1] = " ".join(_word(w) for w in words)
            if key == "ExecStart":
                starts.append(at)
                ctx.mapped.append(f"line {at}: ExecStart= -> the server command")
        elif key == "WorkingDirectory":
            out[at - 1] = "cd " + shlex.quote(value.strip().lstrip("-"))
        else:
            ctx.note(f"line {at}: {key}={value.strip()[:60]} (a setting of the unit, not of "
                     "the server)")
    if not starts:
        raise InputError(f"{source}: the unit's [Service] has no ExecStart= command; nothing "
                         "to reproduce")
    return "\n".join(out) + "\n"


def _env_file(value: str, path: Path, ctx: Ctx, at: int) -> str:
    """`EnvironmentFile=[-]FILE`: its variables as exports, when the file is beside the input."""
    name = value.lstrip("-")
    for candidate in (name, Path(name).name):
        found = inside(path.parent, candidate)
        if found is not None and found.is_file():
            env = read_env_file(found, ctx, f"EnvironmentFile={name}")
            if env is None:
                return ""
            ctx.mapped.append(f"line {at}: EnvironmentFile={name} -> env")
            return _exports(sorted(env.items()))
    ctx.flag_unknown(f"EnvironmentFile={value}", f"line {at}: the file was not given (give it "
                     "beside the unit); the variables it sets are not known")
    return ""


class UnitImporter:
    """A systemd unit: `[Service]` with `ExecStart=` (never YAML or shell)."""

    kind = "systemd"
    role = "unit"

    def claims(self, source: ReadInput) -> bool:
        return looks_like_unit(source.text)

    def read(self, source: ReadInput, ctx: Ctx) -> Imported:
        return read_unit(source.text, source.path, ctx)


def read_unit(text: str, path: Path, ctx: Ctx) -> Imported:
    """A systemd unit: its ExecStart with its environment, read as the serve importer reads a
    script (module doc), with the variables and scripts of the client's other inputs."""
    return import_script(unit_script(text, path, ctx), ctx, ctx.given, ctx.library)


def written_unit(text: str, source: str, given: dict[str, str] | None = None,
                 library: dict[str, str] | None = None) -> tuple[str, str, int] | None:
    """A script that runs no server itself but writes a unit from a here-document (`cat >
    /etc/systemd/system/vllm.service <<EOF`) and starts it: (the unit's text placed at its
    lines of the script, its path, its line), the one `systemctl` names where there are
    several; None when it writes none."""
    script = read_script(commands_of(text)[0], source, given, library)
    units = [(p, at, body) for p, (at, body) in script.files.items()
             if p.endswith(".service") and looks_like_unit(body)]
    if not units:
        return None
    started = {w.rsplit("/", 1)[-1].removesuffix(".service") for c in script.commands
               if c.words[:1] == ("systemctl",) or c.words[1:2] == ("systemctl",)
               for w in c.words}
    chosen = next((u for u in units if Path(u[0]).stem in started), units[0])
    path, at, body = chosen
    return "\n" * at + body, path, at
