"""One style of `--help` for every command, applied where commands are built (cli/app.py).

- Value names are upper case and say what to give: `PATH|-` for `--json`, `PATH` for paths,
  `SECONDS` for durations, `N` for counts, `URL` for addresses, the option's name otherwise.
- A default is written once, as `[default: X]`: a computed default written in the help text as
  a trailing `[X]` (`[./runs/<timestamp>]`) becomes `[default: X]`, and a literal one that
  repeats the real default is dropped in favour of the generated one.
- Required options say `[required]` (typer does that).
"""

from __future__ import annotations

import re

_TRAILING = re.compile(r"\s*\[([^\[\]]+)\]\.?\s*$")
_URL_NAMES = {"endpoint", "reference", "metrics"}


def _kind(param) -> str:
    try:
        return type(param.type).__name__.lower()
    except AttributeError:
        return str(getattr(param, "bare_type", lambda: "")() or "").lower()


def _metavar(param) -> str:
    name = (param.name or "value").lower()
    help_text = (getattr(param, "help", None) or "").lower()
    if "--json" in param.opts:
        return "PATH|-"
    kind = _kind(param)
    if "path" in kind:
        return "PATH"
    if name in _URL_NAMES or "url" in help_text.split(",")[0]:
        return "URL"
    if name == "pid":
        return "PID"
    if "int" in kind:
        return "N"
    if ("float" in kind or "int" in kind) and re.search(r"\bminutes\b", help_text):
        return "MINUTES"
    if "float" in kind:
        return "SECONDS" if re.search(r"\bseconds\b", help_text) else "NUMBER"
    return name.upper().removesuffix("_OUT")


def _default_text(help_text: str, default) -> str:
    match = _TRAILING.search(help_text)
    if not match or match.group(1).startswith(("default:", "x>", "x<")):
        return help_text
    inner = match.group(1)
    head = help_text[: match.start()].rstrip()
    if not head.endswith("."):
        head += "."
    if default is None or default is False or default == []:
        return f"{head} [default: {inner}]"
    return head  # the generated "[default: ...]" says it


def flag_default_false(option):
    """A `--help` option that was not given reads False, not None: typer coerces a non-bool value
    of a bool option through a pydantic adapter, and building that adapter imports pydantic
    (about 0.13 s of CPU) in every `X --help`, whose parent's help option is never given."""
    if option is not None and option.default is None:
        option.default = False
    return option


def restyle(command) -> None:
    """Give `command` (and its subcommands) the one help style, in place."""
    if hasattr(command, "get_help_option"):
        original = command.get_help_option
        command.get_help_option = lambda ctx: flag_default_false(original(ctx))
    for sub in getattr(command, "commands", {}).values():
        restyle(sub)
    for param in getattr(command, "params", []):
        if param.param_type_name == "argument":
            param.metavar = param.metavar or (param.name or "arg").upper()
            continue
        if getattr(param, "is_flag", False) or param.opts == ["--help"]:
            continue
        param.metavar = param.metavar or _metavar(param)
        if getattr(param, "help", None):
            param.help = _default_text(param.help, param.default)
        if param.default not in (None, False, [], ()):
            param.show_default = True


__all__ = ["flag_default_false", "restyle"]
