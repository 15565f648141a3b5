"""How vLLM's `--speculative-config` is spelled in a deployment, read without the deployment's
model: config/deployment.py refuses a deployment that gives it twice (`places`), the report reads
it from a deployment written in a run (`in_document`, `one_stream_depth`), and
config/speculative.py reads it from a loaded deployment."""

from __future__ import annotations

import json

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


def in_document(doc: dict) -> dict | None:
    """The speculative config of a deployment document as written in a run (a plain mapping,
    possibly from another version, read by the report): from `speculative`, else the JSON of
    `serve.flags.speculative-config`, else a JSON `--speculative-config` in `serve.extra_args`.
    None when there is none or it cannot be read (the report then says what it can)."""
    spec = doc.get("speculative")
    if isinstance(spec, dict):
        out = {k: v for k, v in spec.items() if k != "extra"}
        extra = spec.get("extra")
        return {**out, **extra} if isinstance(extra, dict) else out
    serve = doc.get("serve") if isinstance(doc.get("serve"), dict) else {}
    flags = serve.get("flags") if isinstance(serve.get("flags"), dict) else {}
    texts = [flags.get(FLAG)]
    args = [a for a in serve.get("extra_args") or [] if isinstance(a, str)]
    for i, arg in enumerate(args):
        tail = option_tail(arg)
        if tail == "" and i + 1 < len(args):
            texts.append(args[i + 1])
        elif tail is not None and tail.startswith("="):
            texts.append(tail[1:])
    for text in texts:
        if isinstance(text, str) and len(text) <= MAX_JSON:
            try:
                value = json.loads(text)
            except ValueError:
                continue
            if isinstance(value, dict):
                return value
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
