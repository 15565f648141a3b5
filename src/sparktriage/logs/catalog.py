"""What vLLM 0.10-0.32 (and 0.6-0.8 where it differs) says about itself: every message the analysis reads, as data.

Each `Rule` names one message shape with a stable id, the literal `key` that must occur in the
message (a cheap test before any pattern), its patterns with named groups, and where it
matters: the startup `phase` it anchors.

Most rules that read vLLM's own logger are derived (`_d`): their patterns are compiled from the
format strings of every release that prints the message (the catalogue, `data/vllm_messages.json`,
and the meaning table that names which rule reads which format and what each hole is:
`logs/meanings.py`), so a release that rewords a message is read once the catalogue and the
table are regenerated. A derived rule may add a hand-written pattern for what the catalogue
cannot hold, and says whose shape it is. Hand rules (`_r`) read other speakers (uvicorn, tqdm,
torch, FlashInfer, Ray, releases before 0.10) or text fields whose shape a format's `%s` does not
tell; each says its speaker. docs/logs.md lists them by phase.
"""

from __future__ import annotations

import math
import re
from dataclasses import dataclass, field

from sparktriage.logs.meanings import rule_patterns

# Startup phases, in the order vLLM goes through them (field reports §1.0, vllm-mechanics §2).
PHASES = ("resolve", "engine_start", "distributed_init", "weight_read", "post_load", "compile",
          "kv_profiling", "kernel_jit", "cuda_graphs", "ready")
PHASE_INDEX = {name: i for i, name in enumerate(PHASES)}

_TAG = r"(?:\[[\w.-]+\] )?"  # the model tag of 0.32+ compile lines, e.g. "[backbone] "
_NUM = r"(?P<s>\d+(?:\.\d+)?)"
VLLM = "vLLM"  # the speaker of a hand rule that reads vLLM's logger


@dataclass(frozen=True, slots=True)
class Rule:
    """One message shape: `key` must be in the message; the first of `patterns` that matches
    extracts its fields (every pattern of a rule defines the same group names)."""

    id: str
    key: str
    sources: tuple[str, ...]  # the patterns' text, compiled on the rule's first use
    phase: str | None = None  # startup phase this message belongs to (an anchor)
    derived: int = 0  # how many of the patterns are compiled from vLLM's format strings
    speaker: str = VLLM  # whose shape the hand-written patterns read, and why they are by hand
    # compiled when first needed: most rules' keys never occur in a given log, and compiling
    # every pattern at import would cost each command's start (a list filled in place: slots
    # keep the attribute reads of the per-line key test fast)
    _compiled: list = field(default_factory=list, compare=False, repr=False)

    @property
    def patterns(self) -> tuple[re.Pattern, ...]:
        return tuple(self._compiled or self._compile())

    def _compile(self) -> list:
        self._compiled.extend(re.compile(p, re.MULTILINE) for p in self.sources)
        return self._compiled

    def search(self, message: str) -> re.Match | None:
        for pattern in self._compiled or self._compile():
            found = pattern.search(message)
            if found is not None:
                return found
        return None


def _r(id: str, key: str, pattern: str, phase: str | None = None, speaker: str = VLLM) -> Rule:
    """A hand-written rule."""
    return Rule(id, key, (pattern,), phase, 0, speaker)


def _d(id: str, key: str, groups: tuple[str, ...], phase: str | None = None,
       extra: str | None = None, speaker: str = VLLM, first: bool = False) -> Rule:
    """A rule derived from the catalogue's formats (`groups`: the names every pattern defines),
    with `extra`, a hand-written pattern for `speaker`'s shape the catalogue does not hold.
    `first`: the message must begin the text, after the model tag of the compile lines
    (another message may quote it)."""
    # no format (a table regenerated without one): the rule reads nothing, and
    # tests/logs/test_message_meanings.py names it
    derived = tuple(("^" + _TAG if first else "") + p for p in rule_patterns(id, groups))
    patterns = list(derived)
    if extra is not None:
        missing = [g for g in groups if f"(?P<{g}>" not in extra]
        patterns.append(extra + "".join(f"(?P<{g}>(?!))?" for g in missing))
    return Rule(id, key, tuple(patterns), phase, len(derived), speaker)


RULES: tuple[Rule, ...] = (
    # --- process start, version, configuration (resolve / engine_start) ---
    _r("version.banner", "server version",
       r"vLLM (?:API )?server version (?P<v>[\w.+-]+?),?(?: serving model (?P<model>\S+))?\s*$",
       "resolve", "vLLM: the catalogue holds 'vLLM API server version %s' only; 0.6-0.9 and "
       "the sleep-mode server add ', serving model'"),
    _r("version.logo", "  version ", r"\u2588\s+version (?P<v>\d[\w.+-]*)", "resolve",
       "vLLM 0.20+'s logo, drawn line by line from a list"),
    _r("model.logo", "  model ", r"\u2588\s+model\s+(?P<model>\S+)", None,
       "vLLM 0.20+'s logo, drawn line by line from a list"),
    _d("args", "non-default args:", ("args",), "resolve"),
    _r("args.namespace", "args: Namespace(", r"^args: Namespace\((?P<args>.*)\)\s*$", "resolve",
       "vLLM 0.6-0.8: argparse's Namespace"),
    _d("resolve.arch", "Resolved architecture", ("arch",), "resolve"),
    _r("resolve.download", "Downloading", r"^Downloading", "resolve", "huggingface_hub's tqdm bars"),
    _r("resolve.lock", "waiting to acquire lock", r"waiting to acquire lock", "resolve",
       "huggingface_hub's file lock"),
    _d("engine.config", "LLM engine (v", ("v", "config"), "engine_start",
       r"Initializing an LLM engine \(v(?P<v>[^)\s]+)\) with config: (?P<config>.*)$",
       "releases before 0.10 (the V0 engine)"),
    _d("engine.headless", "headless", ("v",), "engine_start"),
    _d("engine.dp_leader", "DP group leader:", ("master", "mq", "ws"), "engine_start"),
    # --- distributed init ---
    _d("dist.init", "distributed_init_method=", ("ws", "rank", "lr", "method", "backend"),
       "distributed_init"),
    _d("dist.adjust", "Adjusting world_size", ("ws",), "distributed_init"),
    _r("dist.ranks", "is assigned as DP rank",
       r"rank (?P<rank>\d+) in world size (?P<ws>\d+) is assigned as (?P<roles>.*)$",
       "distributed_init", "vLLM: `roles` spans several holes and the words between them"),
    _d("dist.nccl", "vLLM is using nccl", ("nccl",), "distributed_init"),
    _d("dist.pg_wait", "Waiting for creating a placement group", ("s",), "distributed_init",
       r"Waiting for creating a placement group of specs for " + _NUM + r" seconds",
       "releases before 0.10 ('Check `ray status` to see if you ...')"),
    _d("dist.pg_new", "placement group", (), "distributed_init",
       r"Creating a new placement group", "releases before 0.10 (the sentence alone)"),
    _d("dist.dp_wait", "Waiting for READY message from DP Coordinator", (), "distributed_init"),
    # --- weight read ---
    _r("load.start", "Starting to load model", r"Starting to load model (?P<model>.*?)\.{0,3}$",
       "weight_read", "vLLM: the model name runs into the closing dots, which pastes drop"),
    _d("load.start_v2", "Loading model from scratch", (), "weight_read"),
    _d("load.init_model", "Initializing model took", ("s",), "weight_read"),
    _d("storage.fs", "Filesystem type for checkpoints", ("fs", "size", "ram"), "weight_read"),
    _r("storage.no_prefetch", "Auto-prefetch is disabled",
       r"Auto-prefetch is disabled because (?P<why>.*?)(?:\. If you want|$)", "weight_read",
       "vLLM: `why` spans a hole and the words around it"),
    _d("storage.prefetch_start", "Prefetching checkpoint files into page cache started",
       ("threads",), "weight_read"),
    _d("storage.prefetch_progress", "Prefetching checkpoint files:", ("pct", "n", "total"),
       "weight_read"),
    _d("storage.prefetch_done", "Prefetching checkpoint files into page cache finished", ("s",),
       "weight_read"),
    _r("load.loader", "Loading safetensors using", r"Loading safetensors using (?P<loader>.+?)(?:\s*:|$)",
       "weight_read", "tqdm's bar of vLLM's loader; `loader` is a literal of the description"),
    _r("load.shards", "Completed |",
       r"(?P<desc>[^:\r\n]+?): +(?P<pct>\d+)% Completed \| (?P<n>\d+)/(?P<total>\d+) "
       r"\[(?P<elapsed>[\d:]+)<(?P<remaining>[\d:?]+),\s*(?P<rate>[^\]]*)\]", "weight_read",
       "tqdm's bar, any description vLLM gives it"),
    # --- post-load processing ---
    _d("reported.loading_weights", "Loading weights took", ("s",), "post_load"),
    _d("reported.weights_download", "Time spent downloading weights for", ("s",)),
    _d("reported.online_quantization", "Online quantization as part of model loading took", ("s",),
       "post_load"),
    _d("reported.model_loading", "Model loading took", ("gib", "s"), "post_load",
       r"Model loading took " + _NUM + r" s(?:econds)?",
       "a field log (gpu_model_runner.py:4871) states the time alone; no release 0.10-0.32 does"),
    _r("load.done_v0", "Loading model weights took",
       r"Loading model weights took (?P<gb>[\d.]+) GB", "post_load", "vLLM 0.6-0.8"),
    _d("load.drafter", "Loading drafter model", (), "post_load"),
    _d("load.mtp_share", "Detected MTP model", (), "post_load"),
    # --- compile ---
    _d("compile.start", "Starting torch.compile", (), "compile"),
    _r("compile.cache_dir", "for vLLM's torch.compile",
       r"Using cache directory: (?P<dir>.+?) for vLLM's torch\.compile", "compile"),
    _d("compile.cache_off", "torch.compile cache is disabled", (), "compile"),
    _d("compile.cpu_warmup", "Warming up model for the compilation", (), "compile"),
    _d("compile.dynamo", "Dynamo bytecode transform time", ("s",), "compile"),
    _d("compile.graph", "Compiling a graph for", ("what", "s"), "compile",
       r"Compiling a graph for (?P<what>general shape) takes " + _NUM + r" s",
       "releases before 0.10 ('general shape')"),
    _d("compile.cache_graph", "Cache the graph ", (), "compile"),
    _d("compile.cache_hit", "Directly load the compiled graph", ("what", "s"), "compile"),
    _d("compile.aot_load", "Directly load AOT compilation", (), "compile"),
    _d("compile.aot_save", "saved AOT compiled function", (), "compile"),
    _d("reported.torch_compile", "torch.compile t", ("s",), "compile",
       r"^" + _TAG + r"torch\.compile took " + _NUM + r" s in total",
       "the simulator's wording (sim/startup.py) and releases past 0.32 that say 'took'",
       first=True),
    _d("reported.compile_and_warmup", "initial profiling/warmup run together took", ("s",),
       "compile"),
    _d("compile.warmup_run", "Initial profiling/warmup run took", ("s",), "compile"),
    _d("compile.cache_save", "Saved compiler manager cache in", ("s",), "compile"),
    # --- KV-cache profiling and sizing ---
    _d("kv.graph_profile", "Profiling CUDA graph memory", (), "kv_profiling"),
    _d("kv.graph_estimate", "Estimated CUDA graph memory", ("gib",), "kv_profiling"),
    _d("kv.graph_profiling_note", "CUDA graph memory profiling is enabled", (), "kv_profiling"),
    _r("kv.memory_profile_v0", "Memory profiling results:", r"^Memory profiling results:",
       "kv_profiling", "vLLM 0.6-0.8"),
    _d("kv.memory_profiling", "Memory profiling takes", ("s",), "kv_profiling"),
    _d("kv.available", "Available KV cache memory", ("gib",), "kv_profiling"),
    _d("kv.cpu_explicit", "for KV cache on node", ("gib", "total"), "kv_profiling"),
    _r("kv.size", "KV cache size:",
       r"(?P<dev>[\w+ ]*?)KV cache size: (?P<tok>[\d,]+) tokens", "kv_profiling",
       "vLLM: `dev` is a literal of one format ('GPU') and a hole of another"),
    _d("kv.concurrency", "Maximum concurrency for", ("len", "x"), "kv_profiling"),
    _r("kv.blocks_v0", " blocks: ",
       r"# (?P<dev>\w+) blocks: (?P<blocks>\d+), # CPU blocks: (?P<cpu>\d+)", "kv_profiling",
       "vLLM 0.6-0.10's V0 executor"),
    _d("kv.blocks", "cache_config_info with initialization", ("blocks",), "kv_profiling",
       r"vllm cache_config_info with initialization after num_gpu_blocks is: (?P<blocks>\d+)",
       "releases before 0.10 (no engine index)"),
    # --- kernel JIT / autotune ---
    _r("jit.autotune", "[Autotuner]", r"\[Autotuner\]", "kernel_jit", "FlashInfer's autotuner logger"),
    # FlashInfer's tqdm progress ("[AutoTuner]: Tuning fp4_gemm: 100%|...") spells it with a
    # capital T, its logger lines ("flashinfer.jit: [Autotuner]: ...") do not
    _r("jit.autotune_bar", "[AutoTuner]", r"\[AutoTuner\]: Tuning (?P<what>[^:]+)", "kernel_jit",
       "FlashInfer's autotuner progress"),
    _d("jit.warmup_size", "Compile and warming up model for size", ("size",), "kernel_jit"),
    _r("jit.cold", "JIT-compile", r"JIT-compile", "kernel_jit", "FlashInfer's JIT logger"),
    _r("jit.cutedsl", "CuTeDSL JIT", r"CuTeDSL JIT", "kernel_jit", "CUTLASS DSL's logger"),
    # --- CUDA graphs ---
    _r("graphs.bar", "CUDA graph", r"Capturing (?:prefill )?CUDA graph(?:s| shapes)(?: \((?P<mode>[^)]*)\))?",
       "cuda_graphs", "tqdm's bar of vLLM's capture; `mode` spans two holes"),
    _d("reported.graph_capture", "Graph capturing finished", ("s", "gib"), "cuda_graphs",
       r"Graph capturing finished in " + _NUM + r" secs?",
       "releases before 0.10 (no memory figure)"),
    _r("graphs.v0", "Capturing ", r"^Capturing (?:the model for CUDA graphs|cudagraphs for decoding)",
       "cuda_graphs", "vLLM 0.6-0.10's V0 model runner"),
    _d("graphs.skip", "Skipping CUDA graph capture", (), "cuda_graphs"),
    _d("reported.encoder_graph_capture", "Encoder graph capturing finished", ("s", "gib"),
       "cuda_graphs"),
    # --- ready ---
    _d("reported.init_engine", "init engine (profile, create kv cache, warmup model) took",
       ("s", "c"), "ready"),
    _d("ready.tasks", "upported", ("tasks",), "ready", first=True),
    _d("ready.server", "Starting vLLM", ("url",), "ready",
       r"Starting vLLM API server on (?P<url>\S+)", "releases before 0.10 (no server index)"),
    _d("ready.routes", "Available routes are", (), "ready"),
    _r("ready.complete", "Application startup complete", r"Application startup complete", "ready",
       "uvicorn"),
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
    _r("fail.c10d", "[c10d]", r"\[c10d\] (?P<what>.*?timed out.*)$", None,
       "torch's c10d C++ logging"),
    _r("fail.shm", "No available shared memory broadcast block",
       r"No available shared memory broadcast block found in (?P<s>\d+) seconds", None),
    _r("shutdown", "shutdown", r"^\[shutdown\]|Application shutdown complete", None,
       "vLLM's shutdown lines and uvicorn"),
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
       r"^Using (?P<k>MoEPrepareAndFinalize\w*)", None,
       "vLLM: a generic format (`Using %s`) whose hole is a class name"),
    _r("kernel.attention", "ttention backend",
       r"^Using (?P<k>[\w .-]+?) (?:[Aa]ttention )?backend(?: on V1 engine)?"
       r"(?: out of potential backends: \[(?P<cands>[^\]]*)\])?\.?$", None),
    _r("kernel.rejected", "does not support the deployment configuration",
       r"(?P<what>[\w ]+?MoE) backend '(?P<k>\w+)' does not support the deployment configuration "
       r"since (?P<why>.+?)\.?$", None,
       "a field log's wording; no release 0.10-0.32 prints it"),
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
        m = _STATS.search(message)
        if m is not None:
            return [Hit(_STATS, m)]
    elif "SpecDecoding metrics:" in message:
        m = _SPEC.search(message)
        if m is not None:
            return [Hit(_SPEC, m)]
    hits = []
    for rule in RULES:
        if rule.key in message:
            m = rule.search(message)
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
