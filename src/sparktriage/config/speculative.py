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

from dataclasses import dataclass
from typing import Any

from sparktriage.config.deployment import Deployment, Speculative
from sparktriage.config.speculative_flag import (FLAG, SCHEDULE, extra_args_config, json_object,
                                                 ngram_read, one_stream_depth, same_method,
                                                 split_schedule)
from sparktriage.errors import ConfigError, UsageError


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
        return SCHEDULE in (self.config or {})

    @property
    def depth(self) -> int:
        """The depth it runs at one stream (speculative_flag.one_stream_depth)."""
        return one_stream_depth(self.config)

    def method_for(self, method: str | None) -> str:
        """The method to launch: `method`, else the config's, else ngram (UsageError when the
        config names none and no method is given: vLLM would infer one from the draft model)."""
        if method is None and self.config is not None and self.method is None:
            raise UsageError(f"the deployment's speculative config ({self.where}) names no "
                             "method: give --method")
        return method or self.method or "ngram"

    def keys_for(self, method: str) -> tuple[str | None, dict[str, Any]]:
        """The draft model and other keys a launch with `method` keeps: the config's own with its
        method (an MTP alias of it too: speculative_flag.same_method), none with another."""
        if not same_method(method, self.method):
            return None, {}
        kept = {k: v for k, v in (self.config or {}).items()
                if k not in ("method", "num_speculative_tokens")}
        model = kept.pop("model", None)
        return (model if isinstance(model, str) else None), kept


def find(dep: Deployment) -> Found:
    """Where the deployment's speculative config is (ConfigError when it cannot be read), its
    ngram spellings read as vLLM reads them (speculative_flag.ngram_read)."""
    config, where = _given(dep)
    return Found(None if config is None else ngram_read(config), where)


def _given(dep: Deployment) -> tuple[dict[str, Any] | None, str | None]:
    """The config as the deployment gives it, and where (None, None when it gives none)."""
    if dep.speculative is not None:
        return spec_dict(dep.speculative), "speculative"
    flag = dep.serve.flags.get(FLAG)
    if flag not in (None, False):
        if not isinstance(flag, str):
            raise ConfigError(f"serve.flags.{FLAG}: give the speculative config as a JSON string")
        return json_object(flag, f"serve.flags.{FLAG}"), f"serve.flags.{FLAG}"
    config, _ = extra_args_config(list(dep.serve.extra_args))
    return (config, "serve.extra_args") if config is not None else (None, None)


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
        extra, left_out = split_schedule(spec.extra)
        spec = spec.model_copy(update={"extra": extra})
    serve = dep.serve.model_copy(update={"flags": flags, "extra_args": args})
    return AtDepth(dep.model_copy(update={"speculative": spec, "serve": serve}), left_out)
