"""vLLM's own rules for each `vllm serve` option, per release: how many values it takes, which
values it accepts, and which releases have it.

The table `data/vllm_options.json` is generated from each release's own argument parser
(`scripts/vllm_options.py`, docs/reproduce.md): option strings, nargs, the argparse action,
the converter vLLM gives the option (`int`, `float`, `json`, `human_readable_int` for `32k`,
`human_readable_int_or_auto` for `auto`/`-1`...), its choices, and which of a fixed set of
probe values that converter accepted when the generator ran it. A value is judged here the way
the release's converter judges it: a probe value by the release's own recorded answer, any
other value by the same conversion rule, rewritten here (the converters are a few lines each
and have not changed in meaning across the covered releases).
"""

from __future__ import annotations

import json
import re
from dataclasses import dataclass
from functools import lru_cache
from importlib import resources
from typing import Any

_VERSION = re.compile(r"(?<![\d.])v?(\d+)\.(\d+)(?:\.(\d+))?(?:\.(\d+))?")
_PRE = re.compile(r"\.?(rc|dev|a|b|alpha|beta|pre)\d*", re.IGNORECASE)
_HUMAN = re.compile(r"(\d+(?:\.\d+)?)([kKmMgGtT])")
_SHOWN = 12  # choices named in a refusal; the rest counted
_DECIMAL = {"k": 10 ** 3, "m": 10 ** 6, "g": 10 ** 9, "t": 10 ** 12}
_BINARY = {"K": 2 ** 10, "M": 2 ** 20, "G": 2 ** 30, "T": 2 ** 40}
# what each converter accepts, said to the user
_ACCEPTS = {"int": "an integer", "float": "a number",
            "human_readable_int": "an integer, or one with a k/m/g/t (x1000) or K/M/G/T (x1024) "
                                  "suffix",
            "human_readable_int_or_auto": "an integer (k/m/g/t or K/M/G/T suffix allowed), -1 or "
                                          "auto",
            "json": "JSON", "json_config": "a JSON object"}


@dataclass(frozen=True)
class Option:
    """One option as one release's parser has it."""

    name: str  # the long name without dashes
    strings: tuple[str, ...]  # the action's option strings: long ones without `--`
    # (aliases, `no-X`), short ones as written (`-tp`)
    action: str
    nargs: Any  # None (one value), 0, "?", "+", "*" or a count
    type: str | None
    optional: bool  # "" and "None" are accepted as None
    choices: tuple[str, ...] | None
    deprecated: bool
    accepts: tuple[str, ...] | None  # the probe values the release's converter accepted
    releases: tuple[str, ...]  # ranges `first..last` of the releases with this spec

    @property
    def flag(self) -> bool:
        """Takes no value (store_true, BooleanOptionalAction, store_const)."""
        return self.nargs == 0

    @property
    def many(self) -> bool:
        """Takes every value that follows it (nargs `+`/`*`) or a fixed count of them."""
        return self.nargs in ("+", "*") or (isinstance(self.nargs, int) and self.nargs > 1)


@dataclass(frozen=True)
class Table:
    releases: tuple[str, ...]  # oldest first
    probes: tuple[str, ...]
    options: dict[str, tuple[Option, ...]]  # long name -> its specs across releases
    strings: dict[str, str]  # every option string (without dashes) -> long name


def _key(version: str) -> tuple[int, ...]:
    return tuple(int(p) for p in version.split("."))


@lru_cache(maxsize=1)
def table() -> Table:
    doc = json.loads(resources.files("sparktriage.reproduce").joinpath(
        "data/vllm_options.json").read_text())
    options: dict[str, tuple[Option, ...]] = {}
    strings: dict[str, str] = {}
    for long, variants in doc["options"].items():
        name = long.lstrip("-")
        specs = []
        for v in variants:
            specs.append(Option(
                name=name, strings=tuple(s[2:] if s.startswith("--") else s
                                         for s in v["options"]),
                action=v["action"], nargs=v.get("nargs"), type=v.get("type"),
                optional=bool(v.get("optional")),
                choices=tuple(v["choices"]) if "choices" in v else None,
                deprecated=bool(v.get("deprecated")),
                accepts=tuple(v["accepts"]) if "accepts" in v else None,
                releases=tuple(v["releases"])))
            for string in v["options"]:
                strings.setdefault(string.lstrip("-") if string.startswith("--")
                                   else string, name)
        options[name] = tuple(specs)
    return Table(tuple(r["version"] for r in doc["releases"]), tuple(doc["probes"]), options,
                 strings)


def newest() -> str:
    return table().releases[-1]


def release_of(text: str | None) -> str | None:
    """The covered release a version text stands for (`0.11.0+cu128`, `v0.10.1.1`, an image
    tag `vllm/vllm-openai:v0.12.0`): the newest covered release not after it; None when the
    text names no version."""
    if not text:
        return None
    match = _VERSION.search(text)
    if match is None:
        return None
    wanted = tuple(int(p) for p in match.groups() if p is not None)
    # a pre-release or development build (`0.11.1rc2.dev160`) comes before its release
    before = bool(_PRE.match(text[match.end():]))
    older = [r for r in table().releases if _key(r) < wanted or (_key(r) == wanted
                                                                  and not before)]
    return older[-1] if older else table().releases[0]


def covers(text: str) -> bool:
    """The version `text` names lies between the oldest and the newest covered release."""
    match = _VERSION.search(text)
    if match is None:
        return False
    wanted = tuple(int(p) for p in match.groups() if p is not None)
    first, last = _key(table().releases[0]), _key(table().releases[-1])
    return first[:2] <= wanted[:2] <= last[:2]


def _in(release: str, ranges: tuple[str, ...]) -> bool:
    at = _key(release)
    for span in ranges:
        first, _, last = span.partition("..")
        if _key(first) <= at <= _key(last or first):
            return True
    return False


def name_of(string: str) -> str | None:
    """The long name of an option string without its dashes (`tp` -> tensor-parallel-size,
    `no-enforce-eager` -> enforce-eager); None when no covered release has it."""
    return table().strings.get(string)


def spec(name: str, release: str) -> Option | None:
    """The option `name` (a long name) as `release` has it; None when that release lacks it."""
    return next((o for o in table().options.get(name, ()) if _in(release, o.releases)), None)


def releases_with(name: str) -> list[str]:
    return [span for o in table().options.get(name, ()) for span in o.releases]


def any_spec(name: str) -> Option | None:
    """The newest spec of an option some covered release has."""
    specs = table().options.get(name, ())
    return max(specs, key=lambda o: _key(o.releases[-1].split("..")[-1])) if specs else None


def accepting(name: str, value: str) -> list[str]:
    """The release ranges whose spec of `name` accepts `value`."""
    return [span for o in table().options.get(name, ()) if convert(o, value) is None
            for span in o.releases]


def convert(option: Option, value: str) -> str | None:
    """Why `option` refuses `value` as the release's converter would (one phrase), or None
    when the release accepts it."""
    if option.accepts is not None and value in table().probes:
        # the release's own converter answered for this very text
        return None if value in option.accepts else _refusal(option)
    return by_rule(option, value)


def by_rule(option: Option, value: str) -> str | None:
    """`convert` by the conversion rule alone (what is used for a text no probe tried)."""
    if option.optional and value in ("", "None"):
        return None
    try:
        converted = _converted(option.type, value)
    except (ValueError, TypeError, RecursionError):
        return _refusal(option)
    if option.choices is not None and str(converted) not in option.choices:
        return _refusal(option)
    return None


def _converted(kind: str | None, value: str) -> Any:
    if kind == "int":
        return int(value)
    if kind == "float":
        return float(value)
    if kind == "human_readable_int":
        return human_readable_int(value)
    if kind == "human_readable_int_or_auto":
        stripped = value.strip()
        if stripped == "-1" or stripped.lower() == "auto":
            return -1
        return human_readable_int(stripped)
    if kind == "json":
        return json.loads(value)
    if kind == "json_config":
        parsed = json.loads(value)
        if not isinstance(parsed, dict):
            raise ValueError("not an object")
        return parsed
    if kind == "union_dict_and_str" and re.match(r"(?s)^\s*{.*}\s*$", value):
        return json.loads(value)
    return value  # str and converters that take any text


def human_readable_int(value: str) -> int:
    """`32k` is 32000, `1K` 1024, `25.6k` 25600; a binary suffix takes no decimals (vLLM's
    rule)."""
    value = value.strip()
    match = _HUMAN.fullmatch(value)
    if match:
        number, suffix = match.groups()
        if suffix in _DECIMAL:
            return int(float(number) * _DECIMAL[suffix])
        return int(number) * _BINARY[suffix]
    return int(value)


def _refusal(option: Option) -> str:
    if option.choices is not None:
        choices = [c for c in option.choices if c != "None"]
        more = f", ... ({len(choices)} in all)" if len(choices) > _SHOWN else ""
        return f"one of {', '.join(choices[:_SHOWN])}{more}"
    return _ACCEPTS.get(option.type or "", f"a value its {option.type} converter takes")


def typed(option: Option, value: str) -> Any:
    """The value as vLLM converts it (for the deployment's typed fields); `value` already
    passed `convert`."""
    if option.optional and value in ("", "None"):
        return None
    return _converted(option.type, value)
