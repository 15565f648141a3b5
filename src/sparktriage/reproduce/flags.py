"""What this tool knows about `vllm serve` options: typed fields, short forms, JSON values.

`data/vllm_flags.txt` lists every option of `vllm serve` (generated from the vLLM 0.32 argument
parser with `scripts/vllm_flags.py`; one `--name bool|value` a line) plus a few from newer
releases. An option in that list that the deployment model does not name goes to
`serve.flags`; an option not in the list is unknown (kept in `serve.extra_args`, flagged).
"""

from __future__ import annotations

from functools import lru_cache
from importlib import resources

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
EXTRA_KNOWN = {  # options of other releases the 0.32 list lacks
    "headless": "bool", "nnodes": "value", "node-rank": "value", "master-addr": "value",
    "master-port": "value", "safetensors-load-strategy": "value", "api-key": "value",
    "distributed-timeout-seconds": "value", "disable-log-requests": "bool",
    "enable-log-requests": "bool", "moe-backend": "value", "linear-backend": "value",
    "safetensors-prefetch-num-threads": "value", "safetensors-prefetch-block-size": "value",
    "kv-cache-memory-bytes": "value", "async-scheduling": "bool",
    "no-async-scheduling": "bool",
}


@lru_cache(maxsize=1)
def known() -> dict[str, str]:
    """{option name without dashes: "bool" | "value"}."""
    out: dict[str, str] = {}
    text = resources.files("sparktriage.reproduce").joinpath("data/vllm_flags.txt").read_text()
    for line in text.splitlines():
        parts = line.split()
        if len(parts) == 2 and parts[0].startswith("--"):
            out[parts[0][2:]] = parts[1]
    for name, kind in EXTRA_KNOWN.items():
        out.setdefault(name, kind)
    return out


def canonical(option: str) -> str:
    """`--max_model_len` and `--max-model-len` are one option; short forms expanded."""
    if option in SHORT:
        return SHORT[option]
    name = option.lstrip("-")
    head, dot, tail = name.partition(".")
    return head.replace("_", "-") + dot + tail


def is_bool(name: str) -> bool:
    kind = known().get(name)
    if kind is not None:
        return kind == "bool"
    return name.startswith("no-") or name.startswith("enable-") or name.startswith("disable-")


def is_known(name: str) -> bool:
    return name.split(".")[0] in known() or name in TYPED or name in PER_NODE
