"""vLLM's `--speculative-config` as a deployment spells it, read without the deployment's model:
its spellings and where it can be (`places`: config/deployment.py refuses two), its bounded JSON
and `serve.extra_args` forms (`json_object`, `extra_args_config`), its batch-size schedule
(`split_schedule`, `one_stream_depth`), and the config of a deployment written in a run
(`in_document`, for the report). config/speculative.py reads it from a loaded deployment."""

from __future__ import annotations

import json
from typing import Any

from sparktriage.errors import ConfigError

FLAG = "speculative-config"
SPELLINGS = ("--" + FLAG, "--speculative_config")
SCHEDULE = "num_speculative_tokens_per_batch_size"  # vLLM's dynamic speculative decoding
MAX_JSON = 64 << 10  # characters of one speculative config


def option_tail(arg: str) -> str | None:
    """`--speculative-config` / `--speculative_config` (with `.KEY` or `=VALUE`): the part after
    the option's name ('' for the bare option), or None for another argument."""
    for spelling in SPELLINGS:
        if arg == spelling or arg.startswith((spelling + "=", spelling + ".")):
            return arg[len(spelling):]
    return None


def places(speculative: object, flags: dict, extra_args: list[str]) -> list[str]:
    """Every place of a deployment that gives a speculative config (one is allowed)."""
    found = []
    if speculative is not None:
        found.append("speculative")
    if flags.get(FLAG) not in (None, False):
        found.append(f"serve.flags.{FLAG}")
    if any(option_tail(a) is not None for a in extra_args):
        found.append("serve.extra_args")
    return found


def json_object(text: str, where: str) -> dict[str, Any]:
    """One speculative config's JSON (bounded), as a mapping; ConfigError otherwise."""
    if len(text) > MAX_JSON:
        raise ConfigError(f"{where}: the speculative config is longer than {MAX_JSON} characters")
    try:
        value = json.loads(text)
    except ValueError:
        raise ConfigError(f"{where}: the speculative config is not valid JSON") from None
    if not isinstance(value, dict):
        raise ConfigError(f"{where}: the speculative config must be a JSON object")
    return value


def _scalar(text: str) -> Any:
    try:
        return json.loads(text)
    except ValueError:
        return text


def extra_args_config(args: list[str]) -> tuple[dict[str, Any] | None, list[str]]:
    """The speculative config given in `serve.extra_args` (None when absent: `--speculative-config
    JSON`, `=JSON` or `.KEY VALUE`), and the arguments without it."""
    config: dict[str, Any] | None = None
    rest: list[str] = []
    i = 0
    while i < len(args):
        tail = option_tail(args[i])
        if tail is None:
            rest.append(args[i])
            i += 1
            continue
        key, _, inline = tail.partition("=")
        has_inline = "=" in tail
        if not has_inline and i + 1 >= len(args):
            raise ConfigError(f"serve.extra_args: {args[i]} has no value")
        value = inline if has_inline else args[i + 1]
        i += 1 if has_inline else 2
        config = config or {}
        if key.startswith("."):  # --speculative-config.KEY VALUE
            config[key[1:]] = _scalar(value)
        else:
            config.update(json_object(value, "serve.extra_args"))
    return config, rest


def split_schedule(extra: dict[str, Any]) -> tuple[dict[str, Any], dict[str, Any]]:
    """A config's keys without its batch-size schedule of the depth, and the schedule's keys."""
    return ({k: v for k, v in extra.items() if k != SCHEDULE},
            {k: v for k, v in extra.items() if k == SCHEDULE})


def in_document(doc: dict) -> dict | None:
    """The speculative config of a deployment document as written in a run (a plain mapping,
    possibly from another version, read by the report): from `speculative`, else the JSON of
    `serve.flags.speculative-config`, else `serve.extra_args`. None when there is none or it
    cannot be read (the report then says what it can)."""
    spec = doc.get("speculative")
    if isinstance(spec, dict):
        out = {k: v for k, v in spec.items() if k != "extra"}
        extra = spec.get("extra")
        return {**out, **extra} if isinstance(extra, dict) else out
    serve = doc.get("serve") if isinstance(doc.get("serve"), dict) else {}
    flags = serve.get("flags") if isinstance(serve.get("flags"), dict) else {}
    args = serve.get("extra_args") if isinstance(serve.get("extra_args"), list) else []
    try:
        if isinstance(flags.get(FLAG), str):
            return json_object(flags[FLAG], FLAG)
        return extra_args_config([a for a in args if isinstance(a, str)])[0]
    except ConfigError:
        return None


def one_stream_depth(config: dict | None) -> int:
    """The depth a speculative config runs at one stream: its batch-size schedule's entry for
    batch size 1 when it has one (entries `[first, last, depth]`), else
    `num_speculative_tokens`; 0 without a config."""
    config = config or {}
    schedule = config.get(SCHEDULE)
    for entry in schedule if isinstance(schedule, list) else []:
        if (isinstance(entry, (list, tuple)) and len(entry) == 3
                and all(isinstance(x, int) and not isinstance(x, bool) for x in entry)
                and entry[0] <= 1 <= entry[1]):
            return max(0, entry[2])
    n = config.get("num_speculative_tokens")
    return n if isinstance(n, int) and not isinstance(n, bool) and n > 0 else 0


NGRAM_SPELLINGS = ("ngram", "[ngram]")  # vLLM reads both as the ngram drafter


def same_method(a: str | None, b: str | None) -> bool:
    """Whether vLLM runs the two method names as one drafter: every MTP alias it knows
    (`deepseek_mtp`, `glm4_moe_mtp`, `qwen3_next_mtp`, ...: each ends in `_mtp`) is `mtp` in
    vLLM 0.32, which maps them so with a deprecation warning; names are otherwise compared as
    they are."""
    return a == b or (a is not None and b is not None and _mtp_read(a) == _mtp_read(b))


def _mtp_read(method: str) -> str:
    return "mtp" if method.endswith("_mtp") else method


def ngram_read(config: dict[str, Any]) -> dict[str, Any]:
    """`config` as vLLM reads its ngram spellings: a method `[ngram]`, or no method with the
    model `ngram` / `[ngram]` (the older form, from before `method` existed), is the method
    `ngram` with no draft model. Any other config is returned as it is (vLLM 0.32 takes a config
    without a method and with another model as a draft model, where older releases read the
    model's type: that stays the consultant's call, `--method`)."""
    method, model = config.get("method"), config.get("model")
    ngram_model = isinstance(model, str) and model in NGRAM_SPELLINGS
    if method not in NGRAM_SPELLINGS and not (method is None and ngram_model):
        return config
    return {"method": "ngram", **{k: v for k, v in config.items()
                                  if k != "method" and not (k == "model" and ngram_model)}}
