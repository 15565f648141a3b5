"""What vLLM 0.11-0.33 (and 0.6-0.8 where it differs) says about itself: every message the analysis reads, as data.

Each `Rule` names one message shape with a stable id, the literal `key` that must occur in the
message (a cheap test before any regex; the fast scanner in scan.py is built from these keys), a
regex with named groups, and where it matters: the startup `phase` it anchors. Format strings are
quoted from the research notes (shared/research/vllm-mechanics.md §2, §5, §11) and the real CPU
logs; docs/logs.md lists them by phase.
"""

from __future__ import annotations

import math
import re
from dataclasses import dataclass

# Startup phases, in the order vLLM goes through them (field reports §1.0, vllm-mechanics §2).
PHASES = ("resolve", "engine_start", "distributed_init", "weight_read", "post_load", "compile",
          "kv_profiling", "kernel_jit", "cuda_graphs", "ready")
PHASE_INDEX = {name: i for i, name in enumerate(PHASES)}

_TAG = r"(?:\[[\w.-]+\] )?"  # the model tag of 0.32+ compile lines, e.g. "[backbone] "
_NUM = r"(?P<s>\d+(?:\.\d+)?)"


@dataclass(frozen=True)
class Rule:
    """One message shape: `key` must be in the message; `regex` extracts its fields."""

    id: str
    key: str
    regex: re.Pattern
    phase: str | None = None  # startup phase this message belongs to (an anchor)


def _r(id: str, key: str, pattern: str, phase: str | None = None) -> Rule:
    return Rule(id, key, re.compile(pattern, re.MULTILINE), phase)


RULES: tuple[Rule, ...] = (
    # --- process start, version, configuration (resolve / engine_start) ---
    _r("version.banner", "server version",
       r"vLLM (?:API )?server version (?P<v>[\w.+-]+?),?(?: serving model (?P<model>\S+))?\s*$",
       "resolve"),
    _r("version.logo", "  version ", r"\u2588\s+version (?P<v>\d[\w.+-]*)", "resolve"),
    _r("model.logo", "  model ", r"\u2588\s+model\s+(?P<model>\S+)", None),
    _r("args", "non-default args:", r"non-default args: (?P<args>.*)$", "resolve"),
    _r("args.namespace", "args: Namespace(", r"^args: Namespace\((?P<args>.*)\)\s*$", "resolve"),
    _r("resolve.arch", "Resolved architecture", r"Resolved architecture: (?P<arch>\S+)", "resolve"),
    _r("resolve.download", "Downloading", r"^Downloading", "resolve"),
    _r("resolve.lock", "waiting to acquire lock", r"waiting to acquire lock", "resolve"),
    _r("engine.config", "LLM engine (v",
       r"Initializing an? (?:V1 )?LLM engine \(v(?P<v>[^)\s]+)\) with config: (?P<config>.*)$",
       "engine_start"),
    _r("engine.headless", "headless",
       r"Launching (?:vLLM \(v(?P<v>[^)\s]+)\) headless|\d+ data parallel engine\(s\) in headless)",
       "engine_start"),
    _r("engine.dp_leader", "DP group leader:",
       r"DP group leader: .*?master_addr=(?P<master>[^,\s]+), mq_connect_ip=(?P<mq>[^\s,]+)"
       r".*?world_size=(?P<ws>\d+)", "engine_start"),
    # --- distributed init ---
    _r("dist.init", "distributed_init_method=",
       r"world_size=(?P<ws>\d+) rank=(?P<rank>\d+) local_rank=(?P<lr>\d+) "
       r"distributed_init_method=(?P<method>\S+) backend=(?P<backend>\S+)", "distributed_init"),
    _r("dist.adjust", "Adjusting world_size", r"Adjusting world_size=(?P<ws>\d+)",
       "distributed_init"),
    _r("dist.ranks", "is assigned as DP rank",
       r"rank (?P<rank>\d+) in world size (?P<ws>\d+) is assigned as (?P<roles>.*)$",
       "distributed_init"),
    _r("dist.nccl", "vLLM is using nccl", r"vLLM is using nccl==(?P<nccl>\S+)", "distributed_init"),
    _r("dist.pg_wait", "Waiting for creating a placement group",
       r"Waiting for creating a placement group of specs for (?P<s>\d+) seconds", "distributed_init"),
    _r("dist.pg_new", "placement group", r"(?:Creating a new|existing) placement group",
       "distributed_init"),
    _r("dist.dp_wait", "Waiting for READY message from DP Coordinator", r"Waiting for READY",
       "distributed_init"),
    # --- weight read ---
    _r("load.start", "Starting to load model", r"Starting to load model (?P<model>.*?)\.{0,3}$",
       "weight_read"),
    _r("load.start_v2", "Loading model from scratch", r"Loading model from scratch", "weight_read"),
    _r("load.init_model", "Initializing model took",
       r"Initializing model took " + _NUM + r" s(?:econds)?", "weight_read"),
    _r("storage.fs", "Filesystem type for checkpoints",
       r"Filesystem type for checkpoints: (?P<fs>[^.\s]+)\. Checkpoint size: (?P<size>[\d.]+) GiB\."
       r" Available RAM: (?P<ram>[\d.]+) GiB", "weight_read"),
    _r("storage.no_prefetch", "Auto-prefetch is disabled",
       r"Auto-prefetch is disabled because (?P<why>.*?)(?:\. If you want|$)", "weight_read"),
    _r("storage.prefetch_start", "Prefetching checkpoint files into page cache started",
       r"started(?: \(in background(?:, num_threads=(?P<threads>\d+))?)?", "weight_read"),
    _r("storage.prefetch_progress", "Prefetching checkpoint files:",
       r"Prefetching checkpoint files: (?P<pct>\d+)% \((?P<n>\d+)/(?P<total>\d+)\)", "weight_read"),
    _r("storage.prefetch_done", "Prefetching checkpoint files into page cache finished",
       r"finished in " + _NUM + r" ?s", "weight_read"),
    _r("load.loader", "Loading safetensors using", r"Loading safetensors using (?P<loader>.+?)(?:\s*:|$)",
       "weight_read"),
    _r("load.shards", "Completed |",
       r"(?P<desc>[^:\r\n]+?): +(?P<pct>\d+)% Completed \| (?P<n>\d+)/(?P<total>\d+) "
       r"\[(?P<elapsed>[\d:]+)<(?P<remaining>[\d:?]+),\s*(?P<rate>[^\]]*)\]", "weight_read"),
    # --- post-load processing ---
    _r("reported.loading_weights", "Loading weights took",
       r"Loading weights took " + _NUM + r" s(?:econds)?", "post_load"),
    _r("reported.model_loading", "Model loading took",
       r"Model loading took (?:(?P<gib>-?[\d.]+) Gi?B(?: memory)? and )?" + _NUM + r" s(?:econds)?",
       "post_load"),
    _r("load.done_v0", "Loading model weights took",
       r"Loading model weights took (?P<gb>[\d.]+) GB", "post_load"),
    _r("load.drafter", "Loading drafter model", r"Loading drafter model", "post_load"),
    _r("load.mtp_share", "Detected MTP model", r"Detected MTP model", "post_load"),
    # --- compile ---
    _r("compile.start", "Starting torch.compile", r"Starting torch\.compile", "compile"),
    _r("compile.cache_dir", "for vLLM's torch.compile",
       r"Using cache directory: (?P<dir>.+?) for vLLM's torch\.compile", "compile"),
    _r("compile.cache_off", "torch.compile cache is disabled", r"cache is disabled", "compile"),
    _r("compile.cpu_warmup", "Warming up model for the compilation", r"Warming up model for the",
       "compile"),
    _r("compile.dynamo", "Dynamo bytecode transform time",
       r"Dynamo bytecode transform time: " + _NUM + r" s", "compile"),
    _r("compile.graph", "Compiling a graph for",
       r"Compiling a graph for (?P<what>.+?) takes " + _NUM + r" s", "compile"),
    _r("compile.cache_graph", "Cache the graph ", r"Cache the graph (?:of|for) ", "compile"),
    _r("compile.cache_hit", "Directly load the compiled graph",
       r"Directly load the compiled graph\(s\) for (?P<what>.+?) from the cache, took " + _NUM
       + r" s", "compile"),
    _r("compile.aot_load", "Directly load AOT compilation", r"Directly load AOT", "compile"),
    _r("compile.aot_save", "saved AOT compiled function", r"saved AOT compiled", "compile"),
    _r("reported.torch_compile", "torch.compile t",
       r"^" + _TAG + r"torch\.compile (?:takes|took) " + _NUM + r" s in total", "compile"),
    _r("reported.compile_and_warmup", "initial profiling/warmup run together took",
       r"together took " + _NUM + r" s in total", "compile"),
    _r("compile.warmup_run", "Initial profiling/warmup run took",
       r"Initial profiling/warmup run took " + _NUM + r" s", "compile"),
    # --- KV-cache profiling and sizing ---
    _r("kv.graph_profile", "Profiling CUDA graph memory", r"Profiling CUDA graph memory",
       "kv_profiling"),
    _r("kv.graph_estimate", "Estimated CUDA graph memory",
       r"Estimated CUDA graph memory: (?P<gib>-?[\d.]+) GiB", "kv_profiling"),
    _r("kv.graph_profiling_note", "CUDA graph memory profiling is enabled", r"profiling is enabled",
       "kv_profiling"),
    _r("kv.memory_profile_v0", "Memory profiling results:", r"^Memory profiling results:",
       "kv_profiling"),
    _r("kv.memory_profiling", "Memory profiling takes",
       r"Memory profiling takes " + _NUM + r" seconds", "kv_profiling"),
    _r("kv.available", "Available KV cache memory",
       r"Available KV cache memory: (?P<gib>-?[\d.]+) GiB", "kv_profiling"),
    _r("kv.cpu_explicit", "for KV cache on node",
       r"Explicitly set \((?P<gib>[\d.]+)/(?P<total>[\d.]+)\) GiB for KV cache", "kv_profiling"),
    _r("kv.size", "KV cache size:",
       r"(?P<dev>[\w+ ]*?)KV cache size: (?P<tok>[\d,]+) tokens", "kv_profiling"),
    _r("kv.concurrency", "Maximum concurrency for",
       r"Maximum concurrency for (?P<len>[\d,]+) tokens per request: (?P<x>[\d.]+)x",
       "kv_profiling"),
    _r("kv.blocks_v0", " blocks: ",
       r"# (?P<dev>\w+) blocks: (?P<blocks>\d+), # CPU blocks: (?P<cpu>\d+)", "kv_profiling"),
    _r("kv.blocks", "cache_config_info with initialization",
       r"num_gpu_blocks is: (?P<blocks>\d+)", "kv_profiling"),
    # --- kernel JIT / autotune ---
    _r("jit.autotune", "[Autotuner]", r"\[Autotuner\]", "kernel_jit"),
    # FlashInfer's tqdm progress ("[AutoTuner]: Tuning fp4_gemm: 100%|...") spells it with a
    # capital T, its logger lines ("flashinfer.jit: [Autotuner]: ...") do not
    _r("jit.autotune_bar", "[AutoTuner]", r"\[AutoTuner\]: Tuning (?P<what>[^:]+)", "kernel_jit"),
    _r("jit.warmup_size", "Compile and warming up model for size",
       r"warming up model for size (?P<size>\d+)", "kernel_jit"),
    _r("jit.cold", "JIT-compile", r"JIT-compile", "kernel_jit"),
    _r("jit.cutedsl", "CuTeDSL JIT", r"CuTeDSL JIT", "kernel_jit"),
    # --- CUDA graphs ---
    _r("graphs.bar", "CUDA graphs", r"Capturing (?:prefill )?CUDA graphs(?: \((?P<mode>[^)]*)\))?",
       "cuda_graphs"),
    _r("reported.graph_capture", "Graph capturing finished",
       r"Graph capturing finished in " + _NUM + r" secs?(?:, took (?P<gib>-?[\d.]+) GiB)?",
       "cuda_graphs"),
    _r("graphs.v0", "Capturing ", r"^Capturing (?:the model for CUDA graphs|cudagraphs for decoding)",
       "cuda_graphs"),
    _r("graphs.skip", "Skipping CUDA graph capture", r"Skipping CUDA graph capture", "cuda_graphs"),
    # --- ready ---
    _r("reported.init_engine", "init engine (profile, create kv cache, warmup model) took",
       r"took " + _NUM + r" s(?:econds)?(?: \(compilation: (?P<c>[\d.]+) s)?", "ready"),
    _r("ready.tasks", "upported", r"^Supported[ _]tasks: (?P<tasks>.*)$", "ready"),
    _r("ready.server", "Starting vLLM", r"Starting vLLM (?:API )?server (?:\d+ )?on (?P<url>\S+)",
       "ready"),
    _r("ready.routes", "Available routes are", r"Available routes are", "ready"),
    _r("ready.complete", "Application startup complete", r"Application startup complete", "ready"),
    # --- failures and shutdown ---
    _r("fail.engine", "failed to start", r"(?P<who>EngineCore|WorkerProc|Engine core|Worker) "
       r"(?:proc )?failed to start", None),
    _r("fail.init", "initialization failed",
       r"Engine core initialization failed.*?(?:Failed core proc\(s\): (?P<procs>.*))?$", None),
    _r("fail.died", "died unexpectedly",
       r"(?P<who>[\w-]+ proc \S+|\S+) died unexpectedly(?: \(exit code: (?P<code>-?\d+)\))?", None),
    _r("fail.engine_dead", "EngineDeadError", r"EngineDeadError", None),
    _r("fail.engine_exc", "EngineCore ",
       r"EngineCore (?:hit an exception|encountered a fatal error|encountered an issue)", None),
    _r("fail.ready_timeout", "Timed out waiting for engine core", r"Timed out waiting", None),
    _r("fail.c10d", "[c10d]", r"\[c10d\] (?P<what>.*?timed out.*)$", None),
    _r("fail.shm", "No available shared memory broadcast block",
       r"No available shared memory broadcast block found in (?P<s>\d+) seconds", None),
    _r("shutdown", "shutdown", r"^\[shutdown\]|Application shutdown complete", None),
    # --- throughput and speculative decoding (§5) ---
    _r("stats", "Avg prompt throughput:",
       r"(?:Engine (?P<engine>\d+): |(?P<n>\d+) Engines Aggregated: )?Avg prompt throughput: "
       r"(?P<prompt>[\d.]+) tokens/s, Avg generation throughput: (?P<gen>[\d.]+) tokens/s"
       r"(?P<rest>.*)$", None),
    _r("spec", "SpecDecoding metrics:", r"SpecDecoding metrics: (?P<rest>.*)$", None),
    # --- kernels (§11) ---
    _r("kernel.moe_enum", " MoE backend",
       r"Using '(?P<k>\w+)' (?P<what>[\w ]+?MoE) backend(?: out of potential backends: "
       r"\[(?P<cands>[^\]]*)\])?", None),
    _r("kernel.moe_014", "backend for NvFp4 MoE", r"^Using (?P<k>.+?) backend for (?P<what>NvFp4 MoE)",
       None),
    _r("kernel.moe_fallback", "Falling back to", r"Falling back to (?P<k>.+?) for (?P<what>NvFp4 MoE)",
       None),
    _r("kernel.marlin_moe", "Falling back to Marlin FP4 MoE kernel", r"Marlin FP4 MoE", None),
    _r("kernel.gemm", " GEMM", r"^Using (?P<k>\S+) for (?P<what>[\w ]*?GEMM)", None),
    _r("kernel.flashinfer_011", "Using FlashInfer",
       r"^Using FlashInfer (?:(?P<k>[\w ]+?) )?(?:kernels|backend) for (?P<what>[\w ]+?)\.?$", None),
    _r("kernel.marlin_weight_only", "leveraging the Marlin kernel", r"Weight-only FP4", None),
    _r("kernel.emulation", "falling back to the slow and unoptimized emulation",
       r"(?P<what>\w+ linear) falling back", None),
    _r("kernel.prepare_finalize", "Using MoEPrepareAndFinalize",
       r"^Using (?P<k>MoEPrepareAndFinalize\w*)", None),
    _r("kernel.attention", "ttention backend",
       r"^Using (?P<k>[\w .-]+?) (?:[Aa]ttention )?backend(?: on V1 engine)?"
       r"(?: out of potential backends: \[(?P<cands>[^\]]*)\])?\.?$", None),
    _r("kernel.rejected", "does not support the deployment configuration",
       r"(?P<what>[\w ]+?MoE) backend '(?P<k>\w+)' does not support the deployment configuration "
       r"since (?P<why>.+?)\.?$", None),
)

RULES_BY_ID = {rule.id: rule for rule in RULES}
_STATS, _SPEC = RULES_BY_ID["stats"], RULES_BY_ID["spec"]  # when they match, the only match


@dataclass(frozen=True)
class Hit:
    """A rule that matched an event's message."""

    rule: Rule
    match: re.Match

    @property
    def id(self) -> str:
        return self.rule.id

    def num(self, group: str = "s") -> float | None:
        value = self.match.group(group)
        try:
            number = float(value.replace(",", "")) if value is not None else None
        except (ValueError, OverflowError):
            return None
        return number if number is None or math.isfinite(number) else None


def match_message(message: str) -> list[Hit]:
    """Every rule that matches the message (usually none or one)."""
    if "Avg prompt throughput:" in message:  # the periodic stats line says nothing else
        m = _STATS.regex.search(message)
        if m is not None:
            return [Hit(_STATS, m)]
    elif "SpecDecoding metrics:" in message:
        m = _SPEC.regex.search(message)
        if m is not None:
            return [Hit(_SPEC, m)]
    hits = []
    for rule in RULES:
        if rule.key in message:
            m = rule.regex.search(message)
            if m is not None:
                hits.append(Hit(rule, m))
    return hits


# The analysis gate (gate.py): while a server starts, every line is read; while it serves, only
# lines whose vLLM message starts with one of MESSAGE_STARTS (right after "[file.py:123] " and
# an optional "[tag] ") or that hold one of GATE_LITERALS. Every rule above must be reachable
# through the gate (tests/logs/test_scan.py checks it on every fixture).
MESSAGE_STARTS = (
    "Avg prompt throughput", "Engine [0-9]", "[0-9]+ Engines Aggregated", "SpecDecoding",
    "vLLM ", "non-default args", "Resolved architecture", "Downloading", "Initializing ",
    "Initial profiling", "Launching ", "DP group leader", "world_size=", "Adjusting world_size",
    "rank [0-9]", "Waiting for", "No current placement", "No available shared memory",
    "Creating a new placement", "Starting ", "Loading ", "Filesystem type",
    "Auto-prefetch", "Prefetching", "Model loading took", "Detected MTP", "Using ",
    "Dynamo bytecode", "Compiling a graph", "Cache the graph", "Directly load", "saved AOT",
    "torch.compile", "Warming up", "Profiling CUDA", "Estimated CUDA", "CUDA graph memory",
    "Memory profiling", "Available ", "Explicitly set", "[A-Z]{3}(?: \\+ host)? KV cache size",
    "Maximum concurrency", "Compile and warming", "Capturing ", "Graph capturing",
    "Skipping CUDA graph", "init engine", "Supported", "Application startup",
    "Your GPU", "NVFP4 ", "NvFp4 ", "Mxfp4 ", "MXFP4 ", "Requested ", "Falling back",
    "Weight-only", "Worker proc", "EngineCore", "WorkerProc", "Engine core", "\\[c10d\\]",
    "\\[shutdown\\]", "\\[Autotuner\\]", "\\[AutoTuner\\]", "Timed out",
    "\\[Rank [0-9]", "\\[PG ",  # torch's NCCL watchdog lines, "] [Rank 4] Watchdog caught ..."
)
GATE_LITERALS = (  # levels, tracebacks, the 0.20+ logo (a restart), crashes
    "WARN", "ERR", "CRITICAL", "Traceback (", "\u2588  ", "Segmentation fault",
)
