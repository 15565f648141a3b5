"""The simulated engine's startup: vLLM 0.32's log lines, phase by phase, with scripted faults.

Each phase prints the messages the log parser anchors it by (sparktriage.logs.catalog,
shapes quoted from the recorded CPU logs under tests/fixtures/logs and the GB10 field notes),
then sleeps the phase's duration from the scenario. A stall fault goes silent inside its
phase, a startup error prints vLLM's engine failure and exits. Messages go to stdout with
vLLM's prefix `(Proc pid=N) LEVEL MM-DD HH:MM:SS [file.py:line] message`; uvicorn's lines go to
stderr, as the real server does.
"""

from __future__ import annotations

import json
import sys
import time
from dataclasses import dataclass
from typing import Callable, TextIO

from sparktriage.sim.engine import EngineScenario, LaunchDraw

VERSION = "0.32.0"


@dataclass(frozen=True)
class ServeArgs:
    """The `vllm serve` arguments the simulator acts on (the rest is logged and ignored)."""

    model: str
    host: str
    port: int
    served_name: str
    depth: int  # num_speculative_tokens (0: none)
    spec_method: str | None
    enforce_eager: bool
    max_model_len: int
    nnodes: int
    node_rank: int
    headless: bool
    non_default: dict
    ignored: tuple[str, ...]


class Log:
    """Writes vLLM-shaped lines, flushed at once (the supervisor time-stamps on receipt)."""

    def __init__(self, api_pid: int, engine_pid: int, out: TextIO = sys.stdout,
                 err: TextIO = sys.stderr) -> None:
        self.api_pid, self.engine_pid = api_pid, engine_pid
        self.out, self.err = out, err

    def line(self, proc: str, message: str, level: str = "INFO", where: str = "api_server.py:1") -> None:
        pid = self.api_pid if proc == "APIServer" else self.engine_pid
        stamp = time.strftime("%m-%d %H:%M:%S")
        self.out.write(f"({proc} pid={pid}) {level} {stamp} [{where}] {message}\n")
        self.out.flush()

    def raw(self, text: str, stderr: bool = False) -> None:
        stream = self.err if stderr else self.out
        stream.write(text + "\n")
        stream.flush()


class StartupFailed(Exception):
    """A scripted startup error: the process exits with `code`."""

    def __init__(self, code: int) -> None:
        super().__init__(code)
        self.code = code


def _phase_lines(args: ServeArgs, draw: LaunchDraw, scenario: EngineScenario) -> dict[str, list]:
    """(process, message, where) triples per phase, or plain strings for bare lines."""
    spec = (f"SpeculativeConfig(method='{args.spec_method}', model=None, num_spec_tokens={args.depth})"
            if args.depth else "None")
    durations = scenario.startup_s
    world = max(1, args.nnodes)
    head = [("APIServer", "", "api_utils.py:347"),
            ("APIServer", "       \u2588     \u2588     \u2588\u2584   \u2584\u2588", "api_utils.py:347"),
            ("APIServer", f" \u2584\u2584 \u2584\u2588 \u2588     \u2588     \u2588 \u2580\u2584\u2580 \u2588  "
                          f"version {VERSION}", "api_utils.py:347"),
            ("APIServer", f"  \u2588\u2584\u2588\u2580 \u2588     \u2588     \u2588     \u2588  model   "
                          f"{args.model}", "api_utils.py:347"),
            ("APIServer", "   \u2580\u2580  \u2580\u2580\u2580\u2580\u2580 \u2580\u2580\u2580\u2580\u2580 "
                          "\u2580     \u2580", "api_utils.py:347"),
            ("APIServer", "", "api_utils.py:347")]
    if args.headless:
        head = [("APIServer", f"Launching vLLM (v{VERSION}) headless engine(s) on node rank "
                              f"{args.node_rank}", "serve.py:210")]
    resolve = head + [
        ("APIServer", f"non-default args: {args.non_default!r}", "utils.py:286"),
        *[("APIServer", f"Ignoring unknown argument {name} (sparktriage simulator)", "sim.py:1")
          for name in args.ignored],
        ("APIServer", "Resolved architecture: LlamaForCausalLM", "model.py:733"),
        ("APIServer", f"Using max model len {args.max_model_len}", "model.py:2152"),
        ("APIServer", f"sparktriage simulator launch {draw.index} (seed {draw.seed}): decode "
                      f"{draw.rate_tok_s:.2f} tok/s at depth {draw.depth}", "sim.py:1"),
    ]
    engine_start = [
        ("EngineCore", f"Initializing a V1 LLM engine (v{VERSION}) with config: model='{args.model}', "
                       f"speculative_config={spec}, tokenizer='{args.model}', dtype=torch.bfloat16, "
                       f"max_seq_len={args.max_model_len}, tensor_parallel_size=1, "
                       f"pipeline_parallel_size=1, enforce_eager={args.enforce_eager}, "
                       f"served_model_name={args.served_name}", "core.py:133"),
        ("EngineCore", f"DP group leader: node_rank={args.node_rank}, node_rank_within_dp=0, "
                       f"master_addr=127.0.0.1, mq_connect_ip=127.0.0.1 (local), world_size={world}, "
                       f"local_world_size=1", "multiproc_executor.py:153"),
    ]
    dist = [
        ("Worker", f"world_size={world} rank={args.node_rank} local_rank=0 distributed_init_method="
                   f"tcp://127.0.0.1:29501 backend=nccl", "parallel_state.py:1906"),
        ("Worker", f"rank {args.node_rank} in world size {world} is assigned as DP rank 0, PP rank 0, "
                   f"PCP rank 0, TP rank {args.node_rank}, ETP rank 0, EP rank N/A, EPLB rank N/A",
         "parallel_state.py:2350"),
    ]
    read_s = durations.get("weight_read", 0.0)
    weight = [
        ("Worker", f"Starting to load model {args.model}...", "gpu_model_runner.py:3338"),
        ("Worker", "Filesystem type for checkpoints: EXT4. Checkpoint size: 0.00 GiB. Available RAM: "
                   "119.50 GiB.", "weight_utils.py:1108"),
        "Loading safetensors checkpoint shards:   0% Completed | 0/1 [00:00<?, ?it/s]",
    ]
    post = ["Loading safetensors checkpoint shards: 100% Completed | 1/1 [00:00<00:00, 145.58it/s]",
            ("Worker", f"Loading weights took {read_s:.2f} seconds", "default_loader.py:501")]
    if args.depth:
        post.append(("Worker", "Loading drafter model...", "gpu_model_runner.py:3390"))
    post.append(("Worker", f"Model loading took 0.01 GiB memory and "
                           f"{read_s + durations.get('post_load', 0.0):.6f} seconds",
                 "gpu_model_runner.py:3421"))
    compile_s = durations.get("compile", 0.0)
    compile_ = [] if args.enforce_eager and not compile_s else [
        ("Worker", f"Dynamo bytecode transform time: {compile_s * 0.3:.2f} s", "backends.py:617"),
        ("Worker", f"torch.compile took {compile_s:.2f} s in total", "monitor.py:34"),
    ]
    kv = [("Worker", "Available KV cache memory: 50.12 GiB", "gpu_worker.py:298"),
          ("EngineCore", "GPU KV cache size: 1,048,576 tokens", "kv_cache_utils.py:1087"),
          ("EngineCore", f"Maximum concurrency for {args.max_model_len:,} tokens per request: "
                         f"2048.00x", "kv_cache_utils.py:1091")]
    jit = [] if not durations.get("kernel_jit") else [
        ("Worker", "Compile and warming up model for size 512", "gpu_worker.py:391")]
    graphs_s = durations.get("cuda_graphs", 0.0)
    graphs = ([("Worker", "Skipping CUDA graph capture. To turn on CUDA graph capture, ensure "
                          "`enforce_eager` is False", "gpu_model_runner.py:4212")]
              if args.enforce_eager and not graphs_s else
              [("Worker", f"Graph capturing finished in {graphs_s:.0f} secs, took 0.50 GiB",
                "gpu_model_runner.py:4260")])
    total = sum(durations.get(p, 0.0) for p in ("kv_profiling", "kernel_jit", "cuda_graphs", "compile"))
    ready = [("EngineCore", f"init engine (profile, create kv cache, warmup model) took {total:.2f} "
                            "seconds", "core.py:402")]
    return {"resolve": resolve, "engine_start": engine_start, "distributed_init": dist,
            "weight_read": weight, "post_load": post, "compile": compile_, "kv_profiling": kv,
            "kernel_jit": jit, "cuda_graphs": graphs, "ready": ready}


def _fail(log: Log, phase: str, message: str) -> None:
    where = "core.py:1016"
    log.line("EngineCore", "EngineCore failed to start.", "ERROR", where)
    log.line("EngineCore", "Traceback (most recent call last):", "ERROR", where)
    log.line("EngineCore", f'  File "vllm/v1/engine/core.py", line 1007, in run_engine_core  '
                           f"(simulated failure in phase {phase})", "ERROR", where)
    for text in message.splitlines() or [message]:
        log.line("EngineCore", text, "ERROR", where)
    log.raw("RuntimeError: Engine core initialization failed. See root cause above. "
            "Failed core proc(s): {}", stderr=True)


def run_startup(args: ServeArgs, draw: LaunchDraw, scenario: EngineScenario, log: Log,
                sleep: Callable[[float], None] = time.sleep) -> None:
    """Print the startup log phase by phase, with the scenario's durations and faults."""
    faults = scenario.faults
    for phase, lines in _phase_lines(args, draw, scenario).items():
        if faults.startup_error and faults.startup_error.phase == phase:
            _fail(log, phase, faults.startup_error.message)
            raise StartupFailed(faults.startup_error.exit_code)
        if args.headless and phase == "ready":
            return  # a headless node never serves the API
        for number, entry in enumerate(lines):
            if isinstance(entry, str):
                log.raw(entry, stderr=True)
            else:
                log.line(entry[0], entry[1], where=entry[2])
            if number == 0 and faults.stall and faults.stall.phase == phase:
                sleep(faults.stall.seconds)
        if faults.stall and faults.stall.phase == phase and not lines:
            sleep(faults.stall.seconds)
        duration = scenario.startup_s.get(phase, 0.0)
        if duration:
            sleep(duration)


def announce_listening(args: ServeArgs, log: Log, pid: int) -> None:
    """The API server's last startup lines, printed once the port listens."""
    log.line("APIServer", "Supported tasks: ['generate']", where="entry.py:136")
    log.line("APIServer", f"Starting vLLM server on http://{args.host}:{args.port}", where="entry.py:140")
    log.line("APIServer", "Available routes are:", where="launcher.py:186")
    for route, methods in (("/health", "GET"), ("/metrics", "GET"), ("/version", "GET"),
                           ("/v1/models", "GET"), ("/v1/chat/completions", "POST"),
                           ("/v1/completions", "POST")):
        log.line("APIServer", f"Route: {route}, Methods: {methods}", where="launcher.py:195")
    log.raw(f"INFO:     Started server process [{pid}]", stderr=True)
    log.raw("INFO:     Waiting for application startup.", stderr=True)
    log.raw("INFO:     Application startup complete.", stderr=True)


def non_default_args(argv: list[str]) -> dict:
    """vLLM's `non-default args` dict, approximately: option names with underscores."""
    out: dict = {}
    i = 0
    while i < len(argv):
        arg = argv[i]
        if arg.startswith("--"):
            name, sep, value = arg[2:].partition("=")
            key = name.replace("-", "_")
            if sep:
                out[key] = value
            elif i + 1 < len(argv) and not argv[i + 1].startswith("--"):
                out[key] = argv[i + 1]
                i += 1
            else:
                out[key] = True
        i += 1
    if isinstance(out.get("speculative_config"), str):
        try:
            out["speculative_config"] = json.loads(out["speculative_config"])
        except ValueError:
            pass
    return out
