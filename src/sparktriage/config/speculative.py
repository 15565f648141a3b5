"""A deployment's speculative config as vLLM will take it, and the config of a launch at one depth.

vLLM takes one `--speculative-config`. A deployment can give it as `speculative:`, or as the
importer keeps a nested or partial one: the JSON of `serve.flags.speculative-config`, or in
`serve.extra_args` (`--speculative-config JSON`, `--speculative-config=JSON`, or the dotted
`--speculative-config.KEY VALUE` form). `find` reads it from wherever it is (one place only;
`Deployment` refuses two). `at_depth` gives the deployment a launch at a chosen depth runs: one
speculative config at exactly that depth (none at depth 0), every other copy removed, so a
client's own `--speculative-config` can never override the depth a sweep launches (vLLM keeps
the last of two flags). A batch-size schedule of the depth (vLLM's
`num_speculative_tokens_per_batch_size`: dynamic speculative decoding) is left out of such a
launch: it would pick the depth itself, and at one stream the launch would run the schedule's
depth for batch size 1 whatever the sweep asked for. `at_depth` says what it left out.
"""

from __future__ import annotations

import json
from dataclasses import dataclass
from typing import Any

from sparktriage.config.deployment import Deployment, Speculative
from sparktriage.config.speculative_flag import FLAG, MAX_JSON, SCHEDULE, one_stream_depth, option_tail
from sparktriage.errors import ConfigError

SCHEDULE_KEYS = (SCHEDULE,)


@dataclass(frozen=True)
class Found:
    """The deployment's speculative config (None: off) and where it was given."""

    config: dict[str, Any] | None
    where: str | None  # "speculative", "serve.flags.speculative-config", "serve.extra_args"

    @property
    def method(self) -> str | None:
        method = (self.config or {}).get("method")
        return method if isinstance(method, str) else None

    @property
    def schedule(self) -> bool:
        """Whether the config carries a batch-size schedule of the depth."""
        return any(k in (self.config or {}) for k in SCHEDULE_KEYS)

    @property
    def depth(self) -> int:
        """The depth it runs at one stream (speculative_flag.one_stream_depth)."""
        return one_stream_depth(self.config)


def _json_object(text: str, where: str) -> dict[str, Any]:
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
    """The speculative config given in `serve.extra_args` (None when absent), and the arguments
    without it."""
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
            config.update(_json_object(value, "serve.extra_args"))
    return config, rest


def find(dep: Deployment) -> Found:
    """Where the deployment's speculative config is (ConfigError when it cannot be read)."""
    if dep.speculative is not None:
        return Found(spec_dict(dep.speculative), "speculative")
    flag = dep.serve.flags.get(FLAG)
    if flag not in (None, False):
        if not isinstance(flag, str):
            raise ConfigError(f"serve.flags.{FLAG}: give the speculative config as a JSON string")
        return Found(_json_object(flag, f"serve.flags.{FLAG}"), f"serve.flags.{FLAG}")
    config, _ = extra_args_config(list(dep.serve.extra_args))
    return Found(config, "serve.extra_args") if config is not None else Found(None, None)


def spec_dict(spec: Speculative) -> dict[str, Any]:
    """A `speculative:` block as the JSON `--speculative-config` takes."""
    out: dict[str, Any] = {"method": spec.method}
    if spec.model:
        out["model"] = spec.model
    out["num_speculative_tokens"] = spec.num_speculative_tokens
    out.update(spec.extra)
    return out


@dataclass(frozen=True)
class AtDepth:
    """The deployment a launch at one depth runs, and what of the given config it left out."""

    deployment: Deployment
    left_out: dict[str, Any]


def at_depth(dep: Deployment, spec: Speculative | None) -> AtDepth:
    """`dep` running exactly `spec` (None: no speculative decoding): every other copy of a
    speculative config removed, and `spec`'s batch-size schedule left out (module doc)."""
    flags = {k: v for k, v in dep.serve.flags.items() if k != FLAG}
    _, args = extra_args_config(list(dep.serve.extra_args))
    left_out: dict[str, Any] = {}
    if spec is not None:
        extra = dict(spec.extra)
        left_out = {k: extra.pop(k) for k in SCHEDULE_KEYS if k in extra}
        spec = spec.model_copy(update={"extra": extra})
    serve = dep.serve.model_copy(update={"flags": flags, "extra_args": args})
    return AtDepth(dep.model_copy(update={"speculative": spec, "serve": serve}), left_out)
