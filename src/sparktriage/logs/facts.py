"""Facts a vLLM log states once: version, configuration, kernels, storage, shards, KV cache,
plus its warnings and errors.

Configuration comes from the engine's config dump (``Initializing a V1 LLM engine (vX) with
config: model='…', …``, split at top-level commas) and the ``non-default args: {…}`` dict
(`ast.literal_eval`, never `eval`; non-literal reprs fall back to a key=value scan). Kernels are
the FP4/MoE/linear/attention backends vLLM says it chose (§11), as short strings, with fallbacks
flagged. Errors are ERROR/CRITICAL records, unprefixed tracebacks (their exception line),
exception lines and fatal signatures; warnings are deduplicated with a count. Everything that
leaves this module passes through `redact.redact` (API keys, tokens, passwords).
"""

from __future__ import annotations

import ast
import math
import re
from dataclasses import dataclass, field

from sparktriage.logs.catalog import Hit
from sparktriage.logs.events import LogEvent
from sparktriage.redact.logtext import redact, secret_name

MAX_ERRORS = 200
MAX_WARNINGS = 200
_EXCEPTION_LINE = re.compile(r"^(?:[A-Za-z_][\w.]*\.)?[A-Z]\w*(?:Error|Exception|Exit|Interrupt)\b:?")
_FATAL = ("died unexpectedly", "NV_ERR_NO_MEMORY", "Segmentation fault", "core dumped",
          "OutOfMemoryError", "out of memory", "Killed process", "NCCL error",
          "less than desired GPU memory utilization",
          "Watchdog caught collective operation timeout",
          # vLLM raises these when the KV cache cannot hold one sequence: the start refuses
          # (a paste often keeps the message without its `ValueError: `)
          "larger than the maximum number of tokens that can be stored in KV cache",
          "KV cache is needed, which is larger than the available KV cache memory")
_FATAL_RE = re.compile("|".join(re.escape(f) for f in _FATAL))
_FRAME = re.compile(r'^\s*File "[^"]+", line \d+')  # a traceback frame
_FRAME_GOES_ON = re.compile(r"^(?:\s+\S|\s*$)")  # its source line, carets
_CONFIG_KEYS = {
    "model": "model", "served_model_name": "served_model_name", "dtype": "dtype",
    "quantization": "quantization", "kv_cache_dtype": "kv_cache_dtype",
    "max_seq_len": "max_model_len", "max_model_len": "max_model_len",
    "load_format": "load_format", "tensor_parallel_size": "tensor_parallel_size",
    "pipeline_parallel_size": "pipeline_parallel_size", "data_parallel_size": "data_parallel_size",
    "enable_expert_parallel": "enable_expert_parallel", "enforce_eager": "enforce_eager",
    "device_config": "device", "enable_prefix_caching": "enable_prefix_caching",
    "moe_backend": "moe_backend", "linear_backend": "linear_backend",
    "safetensors_load_strategy": "safetensors_load_strategy",
    "distributed_executor_backend": "distributed_executor_backend",
    "gpu_memory_utilization": "gpu_memory_utilization", "max_num_seqs": "max_num_seqs",
    "max_num_batched_tokens": "max_num_batched_tokens",
    "decode_context_parallel_size": "decode_context_parallel_size",
}


def _i(text: str | None) -> int | None:
    """An int from a matched group; None for absurd input (no exception ever)."""
    text = (text or "").replace(",", "")
    return int(text) if text.isdigit() and len(text) <= 15 else None


def _f(text: str | None) -> float | None:
    try:
        value = float((text or "").replace(",", ""))
    except (ValueError, OverflowError):
        return None
    return value if math.isfinite(value) else None


def split_top_level(text: str, sep: str = ", ") -> list[str]:
    """Split at `sep` outside brackets and quotes (config reprs nest dicts and lists)."""
    parts, depth, quote, start, i = [], 0, "", 0, 0
    n = len(text)
    while i < n:
        ch = text[i]
        if quote:
            if ch == "\\":
                i += 1
            elif ch == quote:
                quote = ""
        elif ch in "'\"":
            quote = ch
        elif ch in "([{<":
            depth += 1
        elif ch in ")]}>" and depth > 0:
            depth -= 1
        elif depth == 0 and text.startswith(sep, i):
            parts.append(text[start:i])
            i += len(sep)
            start = i
            continue
        i += 1
    parts.append(text[start:])
    return [p for p in parts if p]


def _scalar(value: str):
    value = value.strip()
    if value in ("True", "False"):
        return value == "True"
    if value == "None":
        return None
    try:
        return ast.literal_eval(value) if len(value) < 4096 else value
    except (ValueError, SyntaxError, RecursionError, MemoryError, TypeError):
        return value


def parse_engine_config(text: str) -> dict:
    """The top-level key=value pairs of the engine's config dump."""
    out = {}
    for part in split_top_level(text[:200_000]):
        key, eq, value = part.partition("=")
        if eq and re.fullmatch(r"\w+", key.strip()):
            out[key.strip()] = _scalar(value) if len(value) < 512 else value[:512]
    return out


def parse_args_dict(text: str) -> dict:
    """The ``non-default args`` dict; literal_eval first, else a key scan."""
    text = text.strip()[:200_000]
    try:
        value = ast.literal_eval(text)
        if isinstance(value, dict):
            return {str(k): v for k, v in value.items()}
    except (ValueError, SyntaxError, RecursionError, MemoryError, TypeError):
        pass
    inner = text[1:-1] if text.startswith("{") and text.endswith("}") else text
    out = {}
    for part in split_top_level(inner):
        key, colon, value = part.partition(": ")
        key = key.strip().strip("'\"")
        if colon and re.fullmatch(r"\w+", key):
            out[key] = _scalar(value)
    return out


def _speculative(value) -> dict | None:
    if isinstance(value, dict):
        return {k: value[k] for k in ("method", "num_speculative_tokens", "model",
                                      "draft_tensor_parallel_size") if k in value} or None
    if isinstance(value, str) and value not in ("None", ""):
        spec = {}
        for name, key in (("method", "method"), ("num_spec_tokens", "num_speculative_tokens"),
                          ("num_speculative_tokens", "num_speculative_tokens"), ("model", "model")):
            m = re.search(rf"\b{name}=('?)([^,')]+)\1", value)
            if m:
                spec[key] = _scalar(m.group(2)) if m.group(1) == "" else m.group(2)
        return spec or {"repr": value[:300]}
    return None


def _jsonable(value):
    if isinstance(value, float) and not math.isfinite(value):
        return None
    if isinstance(value, int) and not isinstance(value, bool) and abs(value) > 2**63:
        return str(value)[:40]
    if value is None or isinstance(value, (bool, int, float, str)):
        return redact(value) if isinstance(value, str) else value
    if isinstance(value, (list, tuple)):
        return [_jsonable(v) for v in value[:64]]
    if isinstance(value, dict):
        return {str(k): _jsonable(v) for k, v in list(value.items())[:128]}
    return redact(repr(value)[:300])


@dataclass
class Facts:
    """Accumulates the once-stated facts of a log (all nodes)."""

    versions: dict[str, str] = field(default_factory=dict)  # node → version
    model: str | None = None
    config: dict = field(default_factory=dict)
    args: dict = field(default_factory=dict)
    distributed: dict = field(default_factory=dict)
    kernels: list[str] = field(default_factory=list)
    kernel_detail: list[dict] = field(default_factory=list)
    kernel_rejections: list[dict] = field(default_factory=list)
    storage: dict = field(default_factory=dict)
    shards: dict[tuple, dict] = field(default_factory=dict)
    kv_cache: dict = field(default_factory=dict)
    warnings: dict[str, dict] = field(default_factory=dict)
    warnings_total: int = 0
    errors: list[dict] = field(default_factory=list)
    errors_total: int = 0
    engine_configs: int = 0
    last_error: dict | None = None  # the entry of the last error counted (None past MAX_ERRORS)
    in_frames: bool = False  # inside a run of traceback frames without their header

    def feed(self, event: LogEvent, hits: list[Hit]) -> None:
        for hit in hits:
            handler = _HANDLERS.get(hit.id) or _PREFIX_HANDLERS.get(hit.id.split(".", 1)[0])
            if handler is not None:
                handler(self, hit, event)
        self._problems(event)

    # --- errors and warnings ---
    def _problems(self, event: LogEvent) -> None:
        level = event.level
        first = event.message.split("\n", 1)[0].strip()
        text = kind = None
        if event.kind == "traceback":
            text, kind = _last_line(event.message), "traceback"
        elif level in ("ERROR", "CRITICAL"):
            text, kind = first or _last_line(event.message), "error"
            if "\n" in event.message and "Traceback" in event.message:
                last = _last_line(event.message)
                if last and last != text:
                    text = f"{text} | {last}"
        elif level is None and _EXCEPTION_LINE.match(first) and event.kind == "text":
            if self.in_frames and self.last_error is not None:  # the end of a headless
                self.last_error["text"] = redact(first[:1000])  # traceback: its exception
                self.in_frames = False
                return
            text, kind = first, "exception"
        elif level is None and event.kind == "text" and _FRAME.match(first):
            if not self.in_frames:  # a pasted traceback whose header is not in the log: one
                text, kind = "traceback without its header: " + first, "traceback"
            self.in_frames = True
        elif _FATAL_RE.search(event.message):
            text, kind = first, "fatal"
        if self.in_frames and not (level is None and event.kind == "text" and (
                _FRAME.match(first) or _FRAME_GOES_ON.match(event.message))):
            self.in_frames = False
        if text is not None:
            self.errors_total += 1
            self.last_error = None
            if len(self.errors) < MAX_ERRORS:
                self.last_error = {"t": event.t, "text": redact(text[:1000]), "node": event.node,
                                   "process": event.process, "line": event.line_no,
                                   "origin": event.origin, "kind": kind}
                self.errors.append(self.last_error)
            return
        if level == "WARNING":
            self.warnings_total += 1
            key = first[:500]
            entry = self.warnings.get(key)
            if entry is not None:
                entry["count"] += 1
            elif len(self.warnings) < MAX_WARNINGS:
                self.warnings[key] = {"t": event.t, "text": redact(key), "count": 1,
                                      "node": event.node}

    def version(self) -> str | None:
        values = list(self.versions.values())
        return values[0] if values else None


def _last_line(message: str) -> str:
    for line in reversed(message.split("\n")):
        if line.strip():
            return line.strip()
    return ""


def _version(f: Facts, hit: Hit, event: LogEvent) -> None:
    version = hit.match.group("v")
    if version and (hit.id == "engine.config" or event.node not in f.versions):
        f.versions[event.node] = version
    model = hit.match.groupdict().get("model")
    if model and f.model is None:
        f.model = redact(model)


def _engine_config(f: Facts, hit: Hit, event: LogEvent) -> None:
    _version(f, hit, event)
    f.engine_configs += 1
    if f.engine_configs > 8:  # a restart loop repeats the same dump; the first ones suffice
        return
    raw = parse_engine_config(hit.match.group("config"))
    for key, name in _CONFIG_KEYS.items():
        if key in raw and name not in f.config:
            f.config[name] = _jsonable(raw[key])
    spec = _speculative(raw.get("speculative_config"))
    if spec is not None:
        f.config["speculative"] = _jsonable(spec)
    if f.model is None and isinstance(raw.get("model"), str):
        f.model = redact(raw["model"])


def _args(f: Facts, hit: Hit, event: LogEvent) -> None:
    args = parse_args_dict(hit.match.group("args"))
    f.args = {k: "***" if secret_name(k) and v not in (None, "") else _jsonable(v)
              for k, v in args.items()}
    for key, name in _CONFIG_KEYS.items():
        if key in args and name not in f.config:
            f.config[name] = _jsonable(args[key])
    spec = _speculative(args.get("speculative_config"))
    if spec is not None:
        f.config["speculative"] = _jsonable(spec)


def _dist(f: Facts, hit: Hit, event: LogEvent) -> None:
    m = hit.match.groupdict()
    d = f.distributed
    if hit.id == "dist.init":
        d.setdefault("world_size", _i(m["ws"]))
        d.setdefault("init_method", redact(m["method"]))
        d.setdefault("backend", m["backend"])
        d.setdefault("ranks_seen", [])
        if _i(m["rank"]) not in d["ranks_seen"] and len(d["ranks_seen"]) < 1024:
            d["ranks_seen"].append(_i(m["rank"]))
    elif hit.id == "engine.dp_leader":
        d.setdefault("master_addr", m["master"])
        d.setdefault("mq_connect_ip", m["mq"])
        d.setdefault("world_size", _i(m["ws"]))
    elif hit.id == "dist.nccl":
        d["nccl"] = m["nccl"]
    elif hit.id == "dist.pg_wait":
        d["placement_group_wait_s"] = max(d.get("placement_group_wait_s", 0), _i(m["s"]) or 0)


def _kernel(f: Facts, hit: Hit, event: LogEvent) -> None:
    m = hit.match.groupdict()
    if hit.id == "kernel.rejected":
        if len(f.kernel_rejections) < 100:
            f.kernel_rejections.append({"what": m["what"].strip(), "backend": m["k"],
                                        "why": m["why"][:300]})
        return
    fallback = False
    if hit.id == "kernel.marlin_weight_only":
        text, fallback = "FP4: Marlin weight-only (GPU lacks native FP4)", True
    elif hit.id == "kernel.emulation":
        text, fallback = f"{m['what'].replace(' linear', '')} linear: emulation (slow fallback)", True
    elif hit.id == "kernel.marlin_moe":
        text, fallback = "NvFp4 MoE: Marlin (fallback)", True
    elif hit.id == "kernel.moe_fallback":
        text, fallback = f"{m['what']}: {m['k']} (FlashInfer unavailable, fallback)", True
    elif hit.id == "kernel.flashinfer_011":
        detail = f"FlashInfer {m['k']}" if m.get("k") else "FlashInfer"
        text = f"{m['what']}: {detail}"
    elif hit.id == "kernel.prepare_finalize":
        text = f"MoE prepare/finalize: {m['k']}"
    elif hit.id == "kernel.attention":
        if "MoE" in event.message or "GEMM" in event.message:
            return
        text = f"attention: {m['k']}"
    else:
        text = f"{m['what'].strip()}: {m['k']}"
    if text not in f.kernels:
        f.kernels.append(text)
        f.kernel_detail.append({"kernel": text, "fallback": fallback, "t": event.t,
                                "node": event.node, "candidates": m.get("cands"),
                                "line": event.message.split("\n", 1)[0][:300]})


def _storage(f: Facts, hit: Hit, event: LogEvent) -> None:
    m, s = hit.match.groupdict(), f.storage
    if hit.id == "storage.fs":
        s.update(filesystem=m["fs"], checkpoint_gib=_f(m["size"]), available_ram_gib=_f(m["ram"]))
    elif hit.id == "storage.no_prefetch":
        s.update(prefetch="disabled", prefetch_reason=m["why"][:300])
    elif hit.id == "storage.prefetch_start":
        s.update(prefetch="started", prefetch_started=event.t)
        if m.get("threads"):
            s["prefetch_threads"] = _i(m["threads"])
    elif hit.id == "storage.prefetch_progress":
        s.update(prefetch_pct=_i(m["pct"]), prefetch_files=f"{m['n']}/{m['total']}")
        s.setdefault("prefetch", "started")
    elif hit.id == "storage.prefetch_done":
        s.update(prefetch="finished", prefetch_s=hit.num("s"), prefetch_finished=event.t)


def _shards(f: Facts, hit: Hit, event: LogEvent) -> None:
    m = hit.match.groupdict()
    key = (event.node, m["desc"].strip())
    n, total = _i(m["n"]), _i(m["total"])
    if n is None or total is None:
        return
    bar = f.shards.get(key)
    if bar is None:
        bar = f.shards[key] = {"desc": key[1], "node": event.node, "first_t": event.t,
                               "updates": 0, "total": total}
    bar.update(last_t=event.t, n=n, total=total, percent=_i(m["pct"]), elapsed=m["elapsed"],
               rate=m["rate"].strip(), complete=n >= total)
    bar["updates"] += 1


def _kv(f: Facts, hit: Hit, event: LogEvent) -> None:
    m, kv = hit.match.groupdict(), f.kv_cache
    if hit.id in ("kv.available", "kv.cpu_explicit"):
        kv.setdefault("memory_gib", _f(m["gib"]))
    elif hit.id == "kv.size":
        kv.setdefault("tokens", _i(m["tok"]))
        kv.setdefault("device", (m["dev"] or "").strip() or None)
    elif hit.id == "kv.concurrency":
        kv.setdefault("max_concurrency", _f(m["x"]))
        kv.setdefault("tokens_per_request", _i(m["len"]))
    elif hit.id == "kv.graph_estimate":
        kv.setdefault("cuda_graph_memory_gib", _f(m["gib"]))
    elif hit.id == "kv.blocks_v0":  # "# GPU blocks: 1478, # CPU blocks: 2048" ("# cuda blocks: 0")
        kv.setdefault("blocks", _i(m["blocks"]))
        kv.setdefault("cpu_blocks", _i(m["cpu"]))
        kv.setdefault("block_device", m["dev"])
    elif hit.id == "kv.blocks":
        kv.setdefault("blocks", _i(m["blocks"]))
    elif hit.id == "kv.memory_profiling":
        kv.setdefault("profiling_s", _f(m["s"]))


_HANDLERS = {
    "version.banner": _version, "version.logo": _version, "engine.headless": _version,
    "model.logo": lambda f, h, e: setattr(f, "model", f.model or redact(h.match.group("model"))),
    "engine.config": _engine_config, "args": _args, "engine.dp_leader": _dist,
    "load.shards": _shards,
}
_PREFIX_HANDLERS = {"dist": _dist, "kernel": _kernel, "storage": _storage, "kv": _kv}


__all__ = ["Facts", "redact", "parse_engine_config", "parse_args_dict", "split_top_level"]
