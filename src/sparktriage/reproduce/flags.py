"""What this tool knows about `vllm serve` options: typed fields, short forms, JSON values.

Which options exist, in which releases, and how many values each takes come from vLLM's own
parsers (`vllm_options.py`, the table `data/vllm_options.json`). An option some covered release
has that the deployment model does not name goes to `serve.flags`; an option no covered
release has is unknown (kept in `serve.extra_args`, flagged).
"""

from __future__ import annotations

from functools import lru_cache

from sparktriage.reproduce import vllm_options as V

# short forms vLLM accepts (FlexibleArgumentParser and the -O compilation shorthand)
SHORT = {"-tp": "tensor-parallel-size", "-pp": "pipeline-parallel-size",
         "-dp": "data-parallel-size", "-dcp": "decode-context-parallel-size",
         "-n": "nnodes", "-r": "node-rank", "-q": "quantization", "-O": "compilation-config",
         "-dpl": "data-parallel-size-local", "-dpa": "data-parallel-address",
         "-dpr": "data-parallel-rank", "-dpp": "data-parallel-rpc-port",
         "-dpb": "data-parallel-backend", "-ep": "enable-expert-parallel"}

# option -> (section, field, type) of the deployment model
TYPED = {
    "model": ("model", "path", str), "served-model-name": ("model", "name", str),
    "tokenizer": ("model", "tokenizer", str), "quantization": ("model", "quantization", str),
    "trust-remote-code": ("model", "trust_remote_code", bool),
    "tensor-parallel-size": ("parallelism", "tp", int),
    "pipeline-parallel-size": ("parallelism", "pp", int),
    "data-parallel-size": ("parallelism", "dp", int),
    "enable-expert-parallel": ("parallelism", "ep", bool),
    "nnodes": ("parallelism", "nodes", int),
    "host": ("serve", "host", str), "port": ("serve", "port", int),
    "max-model-len": ("serve", "max_model_len", int),
    "gpu-memory-utilization": ("serve", "gpu_memory_utilization", float),
    "dtype": ("serve", "dtype", str), "kv-cache-dtype": ("serve", "kv_cache_dtype", str),
    "enforce-eager": ("serve", "enforce_eager", bool),
    "max-num-seqs": ("serve", "max_num_seqs", int),
    "max-num-batched-tokens": ("serve", "max_num_batched_tokens", int),
    "load-format": ("load", "format", str),
    "safetensors-load-strategy": ("load", "strategy", str),
    "download-dir": ("load", "download_dir", str),
    "master-port": ("engine", "master_port", int),
    "distributed-executor-backend": ("engine", "backend", str),
}
# per-node options: the plan sets them for each lab node
DP_PLACEMENT = {"data-parallel-start-rank", "data-parallel-rank", "data-parallel-size-local"}
PER_NODE = {"node-rank", "headless", "master-addr"} | DP_PLACEMENT
JSON_VALUED = {"speculative-config", "compilation-config", "model-loader-extra-config",
               "hf-overrides", "kv-transfer-config", "kv-events-config",
               "override-generation-config", "limit-mm-per-prompt", "mm-processor-kwargs",
               "additional-config", "structured-outputs-config", "attention-config",
               "override-pooler-config", "pooler-config", "ec-transfer-config",
               "kernel-config", "default-chat-template-kwargs", "reasoning-config",
               "rope-scaling", "mm-encoder-tp-mode-config", "weight-transfer-config"}
SECRET_OPTIONS = {"api-key", "hf-token", "ssl-keyfile-password"}
# the executor values the deployment model has; others stay in serve.flags
BACKENDS = {"mp", "ray"}
# options of releases the table does not cover yet (newer than its newest)
EXTRA_KNOWN = {"moe-backend": "value", "linear-backend": "value"}


@lru_cache(maxsize=1)
def known() -> dict[str, str]:
    """{long option name without dashes: "bool" | "value"} over every covered release (a
    `--no-X` form named too)."""
    out: dict[str, str] = {}
    for name, specs in V.table().options.items():
        newest = V.any_spec(name)
        for spec in specs:
            for string in spec.strings:
                if not string.startswith("-"):
                    out.setdefault(string, "bool" if newest.flag else "value")
    for name, kind in EXTRA_KNOWN.items():
        out.setdefault(name, kind)
    return out


def canonical(option: str) -> str:
    """`--max_model_len` and `--max-model-len` are one option; short forms expanded (those of
    any covered release, and the few the table does not hold)."""
    if option in SHORT:
        return SHORT[option]
    if not option.startswith("--") and V.name_of(option) is not None:
        return V.name_of(option)
    name = option.lstrip("-")
    head, dot, tail = name.partition(".")
    return head.replace("_", "-") + dot + tail


def is_bool(name: str, release: str | None = None) -> bool:
    """Takes no value: in `release` when it has the option, else in the newest release that
    does."""
    spec = V.spec(long_name(name), release) if release else None
    if spec is not None:
        return spec.flag
    kind = known().get(name)
    if kind is not None:
        return kind == "bool"
    return name.startswith("no-") or name.startswith("enable-") or name.startswith("disable-")


def is_known(name: str) -> bool:
    return name.split(".")[0] in known() or name in TYPED or name in PER_NODE


def long_name(name: str) -> str:
    """`no-enforce-eager` -> enforce-eager: the long name of the action an option string is."""
    return V.name_of(name) or name
