"""A recipe's `command` template rendered as sparkrun (0.4.2) renders it, and what sparkrun
decides around it: the executor across nodes, the served name it fills in, the rendezvous port,
and the steps it runs before the server (mods, `pre_exec`, an image build).

Template rules, as sparkrun applies them (docs/reproduce.md, "Recipes as sparkrun renders
them"):

- A placeholder is `{key}` with no brace inside; every other brace is literal, so a JSON value
  around a placeholder (`'{"method":"dspark","num_speculative_tokens":{n}}'`) keeps its braces.
- `{{`/`}}` are escapes for one literal brace only when the template holds a `{{` at all; in a
  template without one, `}}` is the end of nested JSON and stays as written.
- Values: the recipe's `defaults`, then `model`, `model_revision` (only when pinned) and
  `resolved_model_path` (the model); a value is written as Python writes it (`str`), a key with
  no value (or a null one) leaves the placeholder as written. Substitution repeats while the
  text changes (a value may hold a placeholder), at most ten times.
- A string default holding `{{` has its doubled braces collapsed first.
- A backslash followed by blanks at a line's end is a line continuation.
"""

from __future__ import annotations

import re
from typing import Any

from sparktriage.limits import RECIPE_COMMAND_MAX_BYTES, limit_hit, size_text

PASSES = 10
_L, _R = "\x00", "\x01"  # stand-ins for literal braces while placeholders are filled
_SPAN = re.compile(r"\{[^{}]*\}")
_FILL = re.compile(r"\{(.*?)\}")
_BLANK_CONTINUATION = re.compile(r"\\[ \t]+\n")
_RAY_IN_COMMAND = re.compile(r"--distributed-executor-backend\s+ray\b")
RENDEZVOUS_PORT = 25000  # sparkrun's --master-port for native multi-node


def values_of(data: dict) -> dict[str, Any]:
    """The template's values: defaults (doubled braces collapsed), then what sparkrun adds."""
    defaults = data.get("defaults") if isinstance(data.get("defaults"), dict) else {}
    values = {str(k): (_collapse(v) if isinstance(v, str) else v) for k, v in defaults.items()}
    model = data.get("model")
    if isinstance(model, str):
        values.setdefault("model", model)
        values.setdefault("resolved_model_path", model)
    if data.get("model_revision"):
        values.setdefault("model_revision", data["model_revision"])
    return values


def _collapse(value: str) -> str:
    return value.replace("{{", "{").replace("}}", "}") if "{{" in value else value


def _mask(text: str, escapes: bool) -> str:
    """Every brace that is not part of a `{key}` placeholder, hidden from substitution."""
    out: list[str] = []
    i = 0
    while i < len(text):
        ch = text[i]
        if ch in "{}" and text.startswith(ch * 2, i):
            stand_in = _L if ch == "{" else _R
            out.append(stand_in if escapes else stand_in * 2)
            i += 2
            continue
        if ch == "{":
            span = _SPAN.match(text, i)
            if span:
                out.append(span.group())
                i = span.end()
                continue
            out.append(_L)
        elif ch == "}":
            out.append(_R)
        else:
            out.append(ch)
        i += 1
    return "".join(out)


_NAME = re.compile(r"[A-Za-z_][A-Za-z0-9_.-]*")


def placeholders(template: str) -> list[str]:
    """The names the template asks for, in order: escaped braces are not placeholders; a brace
    span that is no name (`{"x":1}`, JSON) and a shell variable (`${NODE_IP}`) stay as
    written where the recipe gives no value, as sparkrun leaves them (bash expands the latter
    in the container)."""
    masked = _mask(template.strip(), "{{" in template)
    return [m.group(1) for m in _FILL.finditer(masked) if _NAME.fullmatch(m.group(1))
            and not masked[:m.start()].endswith("$")]


def render(template: str, values: dict[str, Any], origin: str = "recipe",
           line: int | None = None) -> str:
    """The command text sparkrun runs for `template` filled from `values`. A value may repeat a
    placeholder, so each pass can multiply the text: past RECIPE_COMMAND_MAX_BYTES it is an
    input error naming `origin:line`, not ten passes of growth."""
    text = template.strip()
    text = _mask(text, "{{" in text)

    def fill(m: re.Match) -> str:
        value = values.get(m.group().strip("{}"))
        return m.group() if value is None else str(value)

    for _ in range(PASSES):
        new = _FILL.sub(fill, text)
        if new == text:
            break
        if len(new) > RECIPE_COMMAND_MAX_BYTES:
            raise limit_hit("the recipe's command with its values filled in",
                            size_text(RECIPE_COMMAND_MAX_BYTES), origin, line)
        text = new
    text = text.replace(_L, "{").replace(_R, "}")
    return _BLANK_CONTINUATION.sub("\\\n", text)


def has_flag(words: list[str], flag: str) -> bool:
    """`flag` as a whole word of the command (`--flag` or `--flag=...`), as sparkrun tests it."""
    return any(w == flag or w.startswith(flag + "=") for w in words)


def executor(runtime: Any, data: dict, command: str) -> str:
    """'ray' or 'mp' (native multi-node), as sparkrun resolves the recipe's runtime: `vllm-ray`
    and the eugr runtime run Ray; `vllm-distributed` native; a bare `vllm` (or none) Ray only
    when the defaults or the command ask for it, else native. Another launcher's vLLM runtime
    name (`eugr-vllm-ray`) says it in its words."""
    name = str(runtime or "").lower()
    if name in ("vllm-ray", "eugr-vllm"):
        return "ray"
    if name == "vllm-distributed":
        return "mp"
    if name not in ("vllm", ""):  # a name sparkrun does not ship (other launchers): its words
        words = re.split(r"[-_]", name)
        if "ray" in words:
            return "ray"
        if "distributed" in words or "native" in words:
            return "mp"
    defaults = data.get("defaults") if isinstance(data.get("defaults"), dict) else {}
    if str(defaults.get("distributed_executor_backend", "")).lower() == "ray":
        return "ray"
    return "ray" if _RAY_IN_COMMAND.search(command or "") else "mp"


def served_name(data: dict, values: dict[str, Any]) -> str | None:
    """The name sparkrun appends as --served-model-name when the command names none: the
    defaults' `served_model_name`, else the model."""
    value = values.get("served_model_name")
    if value not in (None, ""):
        return str(value)
    model = data.get("model")
    return model if isinstance(model, str) and model else None


_EXPORT = re.compile(r"""(?m)\bexport\s+([A-Za-z_][A-Za-z0-9_]*)=("[^"]*"|'[^']*'|\S*)""")


def self_extended(text: str, given: dict[str, str]) -> list[str]:
    """Variables the command's `export`s extend from their own value in the container
    (`export PATH="/x:${PATH:-}"`) where the recipe's env does not give it: the image's value,
    which the input does not show (a `-e` of the extension alone would replace it)."""
    out = []
    for name, value in _EXPORT.findall(text):
        if name not in given and re.search(r"\$\{?" + name + r"\b", value) and name not in out:
            out.append(name)
    return out
