"""Build vLLM startup logs of older versions from their format strings (research notes §1, §2,
§5, §11), with the ground truth of every time and number put in.

A `Profile` says how one vLLM version writes: prefix mechanism and colours, process names,
message wording. `render(profile)` walks a fixed phase schedule (integer seconds, so 1-second
stamps are exact) and returns the log lines plus a `Truth` the tests compare against.
"""

from __future__ import annotations

import json
import time
from dataclasses import dataclass, field, replace

T0 = 1_790_000_000  # 2026-09-21T14:13:20Z
NVFP4_CANDIDATES = "['FLASHINFER_TRTLLM', 'FLASHINFER_CUTEDSL', 'FLASHINFER_CUTLASS', 'VLLM_CUTLASS', 'MARLIN']"

# Phase schedule (seconds): what each phase lasts in every generated log.
SCHEDULE = {"resolve": 20, "engine_start": 8, "distributed_init": 3, "weight_read": 120,
            "post_load": 30, "compile": 45, "kv_profiling": 5, "kernel_jit": 10,
            "cuda_graphs": 12, "ready": 2}


@dataclass(frozen=True)
class Profile:
    version: str
    scheme: str = "format"  # "decorated" (0.11-0.30: stdout wrapper) | "format" (0.31+)
    prefix_colour: str | None = None  # e.g. "\x1b[1;36m" (0.11 always), "\x1b[0;36m" (0.14)
    level_colour: bool = False  # ColoredFormatter (0.14+ on a tty)
    engine: str = "EngineCore"
    banner: str = "server"  # "api" (0.11/0.14) | "server" (0.20+) | "logo"
    model_loading: str = "GiB memory and"  # "GiB and" (0.11, V2 0.14-0.27)
    compile_total: str = "took"  # "takes" (0.11/0.14)
    compile_graph: str = "compile range (1, 8192)"  # "dynamic shape" (0.11)
    kv_one_line: bool = False  # 0.30+
    init_unit: str = "s"  # "seconds" (0.11/0.14)
    init_compilation: bool = True  # "(compilation: x s)" 0.20+
    prefetch: bool = False  # 0.20+ preflight and prefetch lines
    v2_runner: bool = False  # 0.33 default: no "Starting to load model", graphs twice
    ray: str | None = None  # "wrapper" (RayWorkerWrapper) | "proc" (RayWorkerProc)
    json: bool = False  # 0.32+ JSON formatter
    kernels: str = "enum"  # "modelopt011" | "014" | "enum"
    server_line: str = "Starting vLLM server on %s"
    tasks: str = "Supported tasks"
    tag: str = ""  # "[backbone] " in 0.32+
    spec: bool = False


PROFILES = {
    "0.11-coloured": Profile("0.11.0", "decorated", "\x1b[1;36m", engine="EngineCore_DP0",
                             banner="api", model_loading="GiB and", compile_total="takes",
                             compile_graph="dynamic shape", init_unit="seconds",
                             init_compilation=False, kernels="modelopt011",
                             server_line="Starting vLLM API server 0 on %s", tasks="Supported_tasks"),
    "0.14-tty": Profile("0.14.0", "decorated", "\x1b[0;36m", level_colour=True,
                        engine="EngineCore_DP0", banner="api", compile_total="takes",
                        init_unit="seconds", init_compilation=False, kernels="014",
                        server_line="Starting vLLM API server 0 on %s"),
    "0.20-prefetch": Profile("0.20.0", "decorated", prefetch=True, banner="server"),
    "0.27-ray-multinode": Profile("0.27.0", "decorated", ray="wrapper", prefetch=True),
    "0.30-kv-one-line": Profile("0.30.0", "decorated", kv_one_line=True, prefetch=True, spec=True),
    "0.32-json": Profile("0.32.0", json=True, kv_one_line=True, prefetch=True, tag="[backbone] "),
    "0.33-v2-runner": Profile("0.33.0", kv_one_line=True, prefetch=True, v2_runner=True,
                              banner="logo", tag="[backbone] ", ray="proc"),
}


@dataclass
class Truth:
    version: str
    phases: list[tuple[str, float]]
    reported: dict
    kernels: list[str]
    kv_tokens: int
    stats_generation: list[float]
    spec: dict | None
    start: float
    lines: int = 0
    relayed: int = 0
    extras: dict = field(default_factory=dict)


def _stamp(t: float) -> str:
    return time.strftime("%m-%d %H:%M:%S", time.gmtime(t))


class Writer:
    """Formats lines the way one vLLM version does."""

    def __init__(self, p: Profile) -> None:
        self.p = p
        self.lines: list[str] = []

    def _prefix(self, proc: str, pid: int) -> str:
        text = f"({proc} pid={pid})"
        if self.p.prefix_colour:
            text = f"{self.p.prefix_colour}{text}\x1b[0;0m"
        return text + " "

    def _head(self, level: str, t: float, file: str, line: int) -> str:
        if self.p.level_colour:
            colour = {"INFO": "\x1b[32m", "WARNING": "\x1b[33m", "ERROR": "\x1b[31m",
                      "DEBUG": "\x1b[37m"}[level]
            return f"{colour}{level}\x1b[0m \x1b[90m{_stamp(t)}\x1b[0m \x1b[90m[{file}:{line}]\x1b[0m "
        return f"{level} {_stamp(t)} [{file}:{line}] "

    def log(self, proc: str, pid: int, t: float, msg: str, level: str = "INFO",
            file: str = "x.py", line: int = 1, relay: str | None = None) -> None:
        if self.p.json:
            asctime = time.strftime("%Y-%m-%d %H:%M:%S", time.gmtime(t)) + ",000"
            self.lines.append(json.dumps({"asctime": asctime, "levelname": level, "name": "vllm",
                                          "processName": proc, "process": pid, "message": msg}))
            return
        head = self._head(level, t, file, line)
        prefix = "" if relay else self._prefix(proc, pid)
        if relay and self.p.ray == "proc":
            prefix = f"({proc} pid={pid}) "
        if relay:
            prefix = f"\x1b[36m({relay})\x1b[0m " + prefix
        parts = msg.split("\n")
        joined = ("\r\n" + prefix + head).join(parts)
        for physical in (prefix + head + joined).split("\n"):
            self.lines.append(physical)

    def raw(self, proc: str, pid: int, text: str) -> None:
        """A line that is not a log record (tqdm, uvicorn): prefixed only by the 0.11-0.30 wrapper."""
        if self.p.json and text.startswith("INFO:"):
            self.lines.append(json.dumps({"asctime": "", "levelname": "INFO", "name": "uvicorn.error",
                                          "processName": "MainProcess", "process": 1,
                                          "message": text.split(None, 1)[1]}))
            return
        if self.p.scheme == "decorated":
            self.lines.append(self._prefix(proc, pid) + text)
        else:
            self.lines.append(text)


def render(name: str) -> tuple[list[str], Truth]:
    p = PROFILES[name]
    w = Writer(p)
    api, eng, w0, w1 = ("APIServer", 100), (p.engine, 200), ("Worker_TP0", 300), ("Worker_TP1", 301)
    relay1 = None
    if p.ray == "wrapper":
        relay1 = "RayWorkerWrapper pid=301, ip=10.0.16.95"
    elif p.ray == "proc":
        relay1 = "RayWorkerProc pid=301, ip=10.0.16.95"
    starts = {}
    t = T0
    for phase in SCHEDULE:
        starts[phase] = t
        t += SCHEDULE[phase]
    ready_end = t
    model = "/models/Kimi-K2-NVFP4"
    kernels: list[str] = []

    def worker1(tt: float, msg: str, **kw) -> None:
        if relay1:
            w.log("Worker_TP1", 301, tt, msg, relay=relay1, **kw)
        else:
            w.log(*w1, tt, msg, **kw)

    # resolve
    s = starts["resolve"]
    if p.banner == "api":
        w.log(*api, s, f"vLLM API server version {p.version}", file="api_server.py", line=1)
    elif p.banner == "server":
        w.log(*api, s, f"vLLM server version {p.version}, serving model {model}", file="utils.py")
    else:
        logo = ("\n       \u2588     \u2588     \u2588\u2584   \u2584\u2588\n"
                f" \u2584\u2584 \u2584\u2588 \u2588     \u2588     \u2588 \u2580\u2584\u2580 \u2588  version {p.version}\n"
                f"  \u2588\u2584\u2588\u2580 \u2588     \u2588     \u2588     \u2588  model   {model}\n")
        w.log(*api, s, logo, file="api_utils.py", line=347)
    w.log(*api, s, "non-default args: {'model': '" + model + "', 'tensor_parallel_size': 2, "
          "'api_key': 'sk-secretsecretsecret1234', 'enable_expert_parallel': True}")
    w.log(*api, s + 5, "Resolved architecture: DeepseekV3ForCausalLM", file="model.py")
    # engine start
    s = starts["engine_start"]
    spec_cfg = "SpeculativeConfig(method='ngram', model=None, num_spec_tokens=3)" if p.spec else "None"
    w.log(*eng, s, f"Initializing a V1 LLM engine (v{p.version}) with config: model='{model}', "
          f"speculative_config={spec_cfg}, tokenizer='{model}', dtype=torch.bfloat16, max_seq_len=131072, "
          "load_format=auto, tensor_parallel_size=2, pipeline_parallel_size=1, data_parallel_size=1, "
          "quantization=modelopt_fp4, enforce_eager=False, kv_cache_dtype=fp8, "
          "compilation_config={'level': 3, 'cudagraph_capture_sizes': [1, 2, 4]}", file="core.py")
    # distributed init
    s = starts["distributed_init"]
    for rank, (proc, pid) in enumerate((w0, w1)):
        msg = (f"world_size=2 rank={rank} local_rank=0 distributed_init_method=tcp://10.0.16.94:29501 "
               "backend=nccl")
        (worker1 if rank else (lambda tt, m, **kw: w.log(proc, pid, tt, m, **kw)))(s + rank, msg,
                                                                                     file="parallel_state.py")
    # weight read
    s = starts["weight_read"]
    if p.v2_runner:
        w.log(*w0, s, "Loading model from scratch...", file="model_runner.py")
    else:
        w.log(*w0, s, f"Starting to load model {model}...", file="gpu_model_runner.py")
    if p.kernels == "modelopt011":
        w.log(*w0, s, "Using FlashInfer kernels for ModelOptNvFp4FusedMoE.", file="modelopt.py")
        kernels.append("ModelOptNvFp4FusedMoE: FlashInfer")
    elif p.kernels == "014":
        w.log(*w0, s, "Using FlashInfer CUTLASS backend for NvFp4 MoE", file="nvfp4.py")
        w.log(*w0, s, "Using flashinfer-cutlass for NVFP4 GEMM", file="nvfp4.py")
        kernels += ["NvFp4 MoE: FlashInfer CUTLASS", "NVFP4 GEMM: flashinfer-cutlass"]
    else:
        w.log(*w0, s, f"Using 'FLASHINFER_CUTLASS' NvFp4 MoE backend out of potential backends: "
              f"{NVFP4_CANDIDATES}.", file="nvfp4.py")
        w.log(*w0, s, "Using FlashInferCutlassNvFp4LinearKernel for NVFP4 GEMM", file="__init__.py")
        w.log(*w0, s, "NvFp4 MoE backend 'FLASHINFER_TRTLLM' does not support the deployment "
              "configuration since kernel does not support current device.", level="DEBUG")
        kernels += ["NvFp4 MoE: FLASHINFER_CUTLASS", "NVFP4 GEMM: FlashInferCutlassNvFp4LinearKernel"]
    if p.prefetch:
        w.log(*w0, s + 1, "Filesystem type for checkpoints: NFS4. Checkpoint size: 554.12 GiB. "
              "Available RAM: 119.50 GiB.", file="weight_utils.py")
        w.log(*w0, s + 1, "Prefetching checkpoint files into page cache started (in background)")
        w.log(*w0, s + 2, "Prefetching checkpoint files: 50% (30/60)")
        w.log(*w0, s + 98, "Prefetching checkpoint files into page cache finished in 96.00s")
    for i, pct in enumerate((0, 50, 100, 100)):
        n = {0: 0, 50: 30, 100: 60}[pct]
        bar = f"\rLoading safetensors checkpoint shards: {pct:3d}% Completed | {n}/60 [01:{i:02d}<00:10,  1.50s/it]"
        w.raw(*w0, bar)
    # post load: rank 0 and rank 1 report, silent repack, model loading summary
    s = starts["post_load"]
    w.log(*w0, s, "Loading weights took 118.00 seconds", file="default_loader.py")
    worker1(s, "Loading weights took 119.50 seconds", file="default_loader.py")
    gib, mls = 62.5, 150.0
    if p.model_loading == "GiB and" and p.version.startswith("0.11"):
        ml = f"Model loading took {gib:.4f} GiB and {mls:.6f} seconds"
    else:
        ml = f"Model loading took {gib:.2f} {p.model_loading} {mls:.6f} seconds"
    w.log(*w0, s + SCHEDULE["post_load"] - 1, ml, file="gpu_model_runner.py")
    if p.v2_runner:
        worker1(s + SCHEDULE["post_load"] - 1, ml)
    # compile
    s = starts["compile"]
    if p.tag:
        w.log(*w0, s, f"{p.tag}Starting torch.compile", file="monitor.py")
    w.log(*w0, s, f"{p.tag}Using cache directory: /root/.cache/vllm/torch_compile_cache/abc/rank_0_0/backbone "
          "for vLLM's torch.compile", file="backends.py")
    w.log(*w0, s + 6, f"{p.tag}Dynamo bytecode transform time: 6.00 s", file="backends.py")
    w.log(*w0, s + 36, f"{p.tag}Compiling a graph for {p.compile_graph} takes 30.00 s", file="backends.py")
    w.log(*w0, s + 40, f"{p.tag}torch.compile {p.compile_total} 40.00 s in total", file="monitor.py")
    # kv profiling (V2 captures graphs once here)
    s = starts["kv_profiling"]
    if p.v2_runner:
        w.log(*w0, s, "Profiling CUDA graph memory: PIECEWISE=3, FULL=3")
        w.raw(*w0, "Capturing CUDA graphs (PIECEWISE): 100%|##########| 3/3 [00:01<00:00,  2.9it/s]")
        w.log(*w0, s + 1, "Graph capturing finished in 1 secs, took 0.10 GiB")
        worker1(s + 1, "Graph capturing finished in 1 secs, took 0.10 GiB")
    w.log(*w0, s + 2 if p.v2_runner else s, "Available KV cache memory: 40.12 GiB", file="gpu_worker.py")
    kv_tokens = 1_234_567
    if p.kv_one_line:
        w.log(*eng, s + 3, f"GPU KV cache size: {kv_tokens:,} tokens, Maximum concurrency for 131,072 "
              "tokens per request: 9.42x", file="kv_cache_utils.py")
    else:
        w.log(*eng, s + 3, f"GPU KV cache size: {kv_tokens:,} tokens", file="kv_cache_utils.py")
        w.log(*eng, s + 3, "Maximum concurrency for 131,072 tokens per request: 9.42x")
    # kernel jit (FlashInfer autotune in its own Python logging format)
    s = starts["kernel_jit"]
    stamp = time.strftime("%Y-%m-%d %H:%M:%S", time.gmtime(s))
    w.lines.append(f"{stamp},000 - INFO - autotuner.py:262 - flashinfer.jit: [Autotuner]: Autotuning process starts ...")
    stamp = time.strftime("%Y-%m-%d %H:%M:%S", time.gmtime(s + SCHEDULE["kernel_jit"]))
    w.lines.append(f"{stamp},000 - INFO - autotuner.py:284 - flashinfer.jit: [Autotuner]: Autotuning process ends")
    # cuda graphs
    s = starts["cuda_graphs"]
    w.raw(*w0, "Capturing CUDA graphs (mixed prefill-decode, PIECEWISE):   0%|          | 0/67 [00:00<?, ?it/s]"
          "\rCapturing CUDA graphs (mixed prefill-decode, PIECEWISE): 100%|##########| 67/67 [00:10<00:00,  6.5it/s]")
    w.log(*w0, s + 11, "Graph capturing finished in 11 secs, took 1.23 GiB", file="gpu_model_runner.py")
    worker1(s + 11, "Graph capturing finished in 11 secs, took 1.23 GiB")
    # ready
    s = starts["ready"]
    init_s = s - (starts["post_load"] + SCHEDULE["post_load"] - 1)
    comp = " (compilation: 40.00 s)" if p.init_compilation else ""
    w.log(*eng, s, f"init engine (profile, create kv cache, warmup model) took {init_s:.2f} {p.init_unit}{comp}",
          file="core.py")
    w.log(*api, s, f"{p.tasks}: ['generate']")
    w.log(*api, s + 1, p.server_line % "http://0.0.0.0:8000")
    w.log(*api, s + 1, "Available routes are:")
    w.log(*api, s + 1, "Route: /v1/completions, Methods: POST")
    w.raw(*api, "INFO:     Started server process [100]")
    w.raw(*api, "INFO:     Waiting for application startup.")
    # the uvicorn lines carry no time: they inherit the previous line's (ready phase ends there)
    w.log(*api, ready_end, "Route: /metrics, Methods: GET")
    w.raw(*api, "INFO:     Application startup complete.")
    # serving: stats every 10 s, a hidden idle stretch, spec lines
    gens = [120.5, 240.0, 0.0, 310.2, 305.8, 0.0]
    times = [ready_end + 10, ready_end + 20, ready_end + 30, ready_end + 70, ready_end + 80,
             ready_end + 90]
    spec_truth = None
    accepted_total = drafted_total = 0
    for i, (tt, gen) in enumerate(zip(times, gens)):
        w.raw(*api, 'INFO:     127.0.0.1:5555 - "POST /v1/completions HTTP/1.1" 200 OK')
        w.log(*api, tt, f"Engine 000: Avg prompt throughput: {12.5 if gen else 0.0:.1f} tokens/s, "
              f"Avg generation throughput: {gen:.1f} tokens/s, Running: {1 if gen else 0} reqs, "
              f"Waiting: 0 reqs, GPU KV cache usage: {0.5 if gen else 0.0:.1f}%, Prefix cache hit rate: 12.0%",
              file="loggers.py")
        if p.spec and gen:
            drafts = 100 + i
            acc = [int(drafts * r) for r in (0.8, 0.6, 0.4)]
            accepted, drafted = sum(acc), drafts * 3
            accepted_total += accepted
            drafted_total += drafted
            rates = ", ".join(f"{a / drafts:.3f}" for a in acc)
            w.log(*api, tt, f"SpecDecoding metrics: Mean acceptance length: {1 + accepted / drafts:.2f}, "
                  f"Accepted throughput: {accepted / 10:.2f} tokens/s, Drafted throughput: {drafted / 10:.2f} tokens/s, "
                  f"Accepted: {accepted} tokens, Drafted: {drafted} tokens, Per-position acceptance rate: "
                  f"{rates}, Avg Draft acceptance rate: {100 * accepted / drafted:.1f}%", file="metrics.py")
            spec_truth = spec_truth or {"drafts": 0}
            spec_truth["drafts"] += drafts
    if spec_truth:
        spec_truth.update(accepted=accepted_total, drafted=drafted_total,
                          mal=1 + accepted_total / spec_truth["drafts"])
    phases = [(name, float(SCHEDULE[name])) for name in SCHEDULE]
    reported = {"loading_weights_s": 119.5, "model_loading_s": mls, "model_loading_gib": gib,
                "torch_compile_s": 40.0, "graph_capture_s": 11.0, "init_engine_s": float(init_s)}
    if p.init_compilation:
        reported["init_engine_compilation_s"] = 40.0
    truth = Truth(p.version, phases, reported, kernels, kv_tokens, gens, spec_truth, float(T0))
    truth.relayed = sum(1 for line in w.lines if "ip=10.0.16.95" in line)
    truth.lines = len(w.lines)
    return w.lines, truth


def variant(name: str, **changes) -> Profile:
    return replace(PROFILES[name], **changes)
