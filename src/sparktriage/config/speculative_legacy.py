"""vLLM's speculative options before 0.8 (`--speculative-model`, `--num-speculative-tokens`, ...):
which key of `--speculative-config` each became, or none.

vLLM 0.8 folded these options into `--speculative-config` and later releases refuse them, so a
client's serve line from an older release is translated (`translate`, used by reproduce) and a
deployment that still carries one is refused at load (`named`, config/deployment.py): left as a
plain argument it would stop every launch at vLLM's argument parser, one launch at a time.
"""

from __future__ import annotations

import math
from typing import Any

from sparktriage.config.speculative_flag import NGRAM_SPELLINGS

# old option (without dashes) -> key of --speculative-config in vLLM 0.32, or None where 0.32
# has no such setting (the option is left out, and said)
KEYS: dict[str, str | None] = {
    "speculative-model": "model",
    "num-speculative-tokens": "num_speculative_tokens",
    "speculative-model-quantization": "quantization",
    "speculative-draft-tensor-parallel-size": "draft_tensor_parallel_size",
    "speculative-max-model-len": "max_model_len",
    "ngram-prompt-lookup-max": "prompt_lookup_max",
    "ngram-prompt-lookup-min": "prompt_lookup_min",
    "speculative-revision": "revision",
    "speculative-disable-by-batch-size": None,
    "spec-decoding-acceptance-method": None,
    "typical-acceptance-sampler-posterior-threshold": None,
    "typical-acceptance-sampler-posterior-alpha": None,
    "disable-logprobs-during-spec-decoding": None,
    "speculative-disable-mqa-scorer": None,
}
BOOLS = {"speculative-disable-mqa-scorer", "disable-logprobs-during-spec-decoding"}  # bare, or
# followed by true/false
SHORT = {"-spec-draft-tp": "speculative-draft-tensor-parallel-size"}


def name_of(option: str) -> str | None:
    """The old option's name for `option` as written (`--num_speculative_tokens`, `-spec-draft-tp`,
    with or without `=VALUE`), or None for any other argument."""
    head = option.partition("=")[0]
    if head in SHORT:
        return SHORT[head]
    if not head.startswith("--"):
        return None
    name = head[2:].replace("_", "-")
    return name if name in KEYS else None


def named(flags: dict, extra_args: list[str]) -> list[str]:
    """The old speculative options a deployment gives (`serve.flags` names, `serve.extra_args`
    options), as written."""
    found = [f"serve.flags.{n}" for n in flags if n in KEYS]  # names are dashed (Serve._flags)
    found += [f"serve.extra_args {a.partition('=')[0]}" for a in extra_args if name_of(a)]
    return found


def _value(text: str | None) -> Any:
    if text is None:
        return True
    for kind in (int, float):
        try:
            value = kind(text)
        except ValueError:
            continue
        if math.isfinite(value):
            return value
    return text  # a word, or no finite number (`1e999`): kept as written


def translate(given: dict[str, str | None]) -> tuple[dict[str, Any], list[str]]:
    """The `--speculative-config` object the old options `given` (name -> value as written, None
    for a bare option) stand for, and the names that have no key in vLLM 0.32."""
    config: dict[str, Any] = {}
    dropped: list[str] = []
    for name, text in given.items():
        key = KEYS.get(name)
        if key is None:
            dropped.append(name)
        elif key == "model" and isinstance(text, str) and text.strip().lower() in NGRAM_SPELLINGS:
            config["method"] = "ngram"
        else:
            config[key] = text if key in ("model", "quantization", "revision") else _value(text)
    return config, dropped
