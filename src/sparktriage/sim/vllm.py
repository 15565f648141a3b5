"""The simulator as `vllm serve`: `python -m sparktriage.sim.vllm serve MODEL [vLLM flags]`.

A deployment runs it instead of vLLM with `engine.vllm: [PYTHON, -m, sparktriage.sim.vllm]`.
It reads its scenario from `SPARKTRIAGE_SIM` (engine.py), prints vLLM 0.32's startup lines
phase by phase (startup.py), binds `--host:--port` only once ready, and then serves the
OpenAI API (server.py) plus `/health`, `/metrics` (metrics.py) and `GET /sim/launch` (this
launch's draw). With `--speculative-config '{"num_speculative_tokens": k, ...}'` responses
come in multi-token chunks drawn from the scenario's per-position acceptance, at the decode
rate of depth k. `--headless` nodes print their startup and never listen. Unknown flags are
logged and ignored. Exit: 0 on SIGTERM/SIGINT, 2 for a bad scenario or command line, the
fault's status for scripted failures. See docs/simulator.md.
"""

from __future__ import annotations

import asyncio
import json
import os
import signal
import subprocess
import sys
import threading
import time
from pathlib import Path

from sparktriage.sim import http
from sparktriage.sim.engine import ENV_SCENARIO, EngineScenario, LaunchDraw, draw_launch, launch_index, load_scenario
from sparktriage.sim.metrics import EngineMetrics
from sparktriage.sim.scenario import Scenario, SimConfig
from sparktriage.sim.server import SimServer
from sparktriage.sim.startup import Log, ServeArgs, StartupFailed, announce_listening, non_default_args, run_startup

USAGE = "usage: python -m sparktriage.sim.vllm serve MODEL [--host H] [--port P] [vLLM flags]"
# Flags the simulator acts on, and the known vLLM flags that take no value.
_VALUE_FLAGS = {"--host", "--port", "--served-model-name", "--speculative-config", "--nnodes",
                "--node-rank", "--max-model-len", "--master-addr", "--master-port"}
_SWITCHES = {"--headless", "--enforce-eager", "--trust-remote-code", "--enable-expert-parallel",
             "--enable-prefix-caching", "--no-enable-prefix-caching", "--disable-log-requests",
             "--enable-chunked-prefill", "--async-scheduling"}
_KNOWN_VALUES = {"--dtype", "--tokenizer", "--quantization", "--tensor-parallel-size",
                 "--pipeline-parallel-size", "--data-parallel-size", "--gpu-memory-utilization",
                 "--kv-cache-dtype", "--max-num-seqs", "--max-num-batched-tokens", "--load-format",
                 "--safetensors-load-strategy", "--download-dir", "--model-loader-extra-config",
                 "--distributed-executor-backend", "--seed", "-tp", "-pp", "-dp", "--api-key",
                 "--chat-template", "--uvicorn-log-level", "--compilation-config", "-cc"}


class UsageProblem(ValueError):
    """The command line is not one the simulator can serve."""


def parse_args(argv: list[str]) -> ServeArgs:
    """Read `serve MODEL [flags]` as vLLM would (for the flags that matter here)."""
    if len(argv) < 2 or argv[0] != "serve" or argv[1].startswith("-"):
        raise UsageProblem(USAGE)
    model, rest = argv[1], argv[2:]
    values: dict[str, str] = {}
    switches: set[str] = set()
    ignored: list[str] = []
    i = 0
    while i < len(rest):
        arg = rest[i]
        name, sep, inline = arg.partition("=")
        if name in _VALUE_FLAGS or name in _KNOWN_VALUES:
            if sep:
                values[name] = inline
            elif i + 1 < len(rest):
                values[name] = rest[i + 1]
                i += 1
            else:
                raise UsageProblem(f"argument {name}: expected one argument")
        elif arg in _SWITCHES:
            switches.add(arg)
        elif arg.startswith("-"):
            ignored.append(name)
            if not sep and i + 1 < len(rest) and not rest[i + 1].startswith("-"):
                i += 1  # its value
        else:
            ignored.append(arg)
        i += 1
    depth, method = 0, None
    if "--speculative-config" in values:
        try:
            spec = json.loads(values["--speculative-config"])
            depth = int(spec.get("num_speculative_tokens", 0))
            method = str(spec.get("method") or "ngram")
        except (ValueError, AttributeError, TypeError) as exc:
            raise UsageProblem(f"argument --speculative-config: not a JSON object ({exc})") from None
        if not 0 <= depth <= 64:
            raise UsageProblem("argument --speculative-config: num_speculative_tokens must be 0..64")
    try:
        port = int(values.get("--port", "8000"))
        nnodes = int(values.get("--nnodes", "1"))
        rank = int(values.get("--node-rank", "0"))
        max_len = int(values.get("--max-model-len", "4096"))
    except ValueError as exc:
        raise UsageProblem(f"bad integer argument ({exc})") from None
    if not 0 <= port <= 65535:
        raise UsageProblem("argument --port: must be 0..65535")
    return ServeArgs(model=model, host=values.get("--host", "0.0.0.0"), port=port,
                     served_name=values.get("--served-model-name", model), depth=depth,
                     spec_method=method, enforce_eager="--enforce-eager" in switches,
                     max_model_len=max_len, nnodes=nnodes, node_rank=rank,
                     headless="--headless" in switches,
                     non_default={"model_tag": model, **non_default_args(rest)},
                     ignored=tuple(ignored))


def sim_config(scenario: EngineScenario, args: ServeArgs, draw: LaunchDraw) -> SimConfig:
    """The HTTP simulator's configuration for this launch: one served model."""
    stream = {"ttft_s": scenario.decode.ttft_s, "gap_s": 1.0 / draw.rate_tok_s, "gap_per": "token",
              "tokens_per_chunk": draw.pattern, "seed": 0, **scenario.stream}
    if draw.gaps is not None:  # one chunk per engine step, each after its own step time
        stream.update(gap_s=draw.gaps, gap_per="chunk", pair_gap_s=draw.pair_gaps)
        step = scenario.decode.step
        if step is not None and step.batched and draw.drafts and draw.base_s:
            # one engine loop: a step shared with other streams is priced over all their drafts
            stream.update(pair_gap_s=None, batch_step=step.model_dump(), batch_base_s=draw.base_s,
                          drafts=draw.drafts[1:])
    change = scenario.faults.greedy_change
    if change is not None and change.depth == args.depth:
        stream["diverge_at"] = change.at
    if scenario.faults.garbage is not None:
        stream["garbage_text"] = scenario.faults.garbage
    return SimConfig.model_validate({**scenario.server, "scenarios": {args.served_name: Scenario.model_validate(stream)}})


class EngineServer(SimServer):
    """The HTTP simulator with vLLM's `/metrics`, request counting and a crash fault."""

    def __init__(self, config: SimConfig, args: ServeArgs, draw: LaunchDraw, scenario: EngineScenario,
                 log: Log) -> None:
        super().__init__(config, args.host, args.port)
        self.args, self.draw, self.scenario, self.log = args, draw, scenario, log
        self.metrics = EngineMetrics(args.served_name, args.depth, draw.drafts,
                                     frozenset(scenario.metrics_omit))
        self.completed = 0

    async def _dispatch(self, request: http.Request, writer) -> bool:
        path = request.path.rstrip("/") or "/"
        if path == "/metrics":
            body = self.metrics.prometheus().encode()
            return await self._json(writer, request, 200, body, "text/plain; version=0.0.4; charset=utf-8")
        if path == "/sim/launch":
            return await self._json(writer, request, 200, {
                "index": self.draw.index, "seed": self.draw.seed, "depth": self.draw.depth,
                "rate_tok_s": self.draw.rate_tok_s, "mean_rate_tok_s": self.draw.mean_rate_tok_s,
                "served_model_name": self.args.served_name})
        return await super()._dispatch(request, writer)

    async def _completion(self, request: http.Request, writer, api: str) -> bool:
        self.metrics.begin()
        number = self._next_id  # the base class numbers the request before its first await
        try:
            return await super()._completion(request, writer, api)
        finally:
            entry = next((e for e in reversed(self.trace) if e["n"] == number), {})
            self.metrics.finish(entry)
            if len(self.trace) > 256:  # a long-running engine keeps only the recent trace
                del self.trace[:-256]
            peer = writer.get_extra_info("peername") or ("127.0.0.1", 0)
            self.log.raw(f'INFO:     {peer[0]}:{peer[1]} - "{request.method} {request.path} HTTP/1.1" '
                         f'{entry.get("status") or 200} {http.REASONS.get(entry.get("status") or 200, "")}',
                         stderr=True)
            self.completed += 1
            limit = self.scenario.faults.crash_after_requests
            if limit is not None and self.completed >= limit:
                self._crash()

    def _crash(self) -> None:
        self.log.line("EngineCore", "EngineCore encountered a fatal error.", "ERROR", "core.py:1030")
        self.log.line("APIServer", "AsyncLLM output_handler failed.", "ERROR", "async_llm.py:480")
        self.log.raw("vllm.v1.engine.exceptions.EngineDeadError: EngineCore encountered an issue. "
                     "See stack trace (above) for the root cause.", stderr=True)
        os._exit(self.scenario.faults.exit_code)


def _record(scenario: EngineScenario, argv: list[str]) -> None:
    if scenario.record_dir:
        folder = Path(scenario.record_dir)
        folder.mkdir(parents=True, exist_ok=True)
        doc = {"argv": [sys.executable, "-m", "sparktriage.sim.vllm", *argv], "env": dict(os.environ)}
        (folder / f"{os.getpid()}.json").write_text(json.dumps(doc))


def _child(mode: str) -> subprocess.Popen | None:
    if mode == "none":
        return None
    code = "import time\nwhile True: time.sleep(0.2)"
    return subprocess.Popen([sys.executable, "-c", code], start_new_session=mode == "setsid",
                            stdin=subprocess.DEVNULL)


def _timed_exit(seconds: float, code: int, log: Log, child) -> None:
    def die() -> None:
        time.sleep(seconds)
        log.line("EngineCore", f"Engine core proc EngineCore_DP0 died unexpectedly (exit code: {code}) "
                 "[simulated crash]",
                 "ERROR", "core_client.py:620")
        if child is not None:
            child.kill()
        os._exit(code)
    threading.Thread(target=die, daemon=True).start()


def _stats_loop(server: EngineServer, interval: float, stop: threading.Event) -> None:
    while not stop.wait(interval):
        for message in server.metrics.stats_lines(interval):
            where = "metrics.py:120" if message.startswith("SpecDecoding") else "loggers.py:335"
            server.log.line("APIServer", message, where=where)


def serve(argv: list[str], env: dict | None = None) -> int:
    """Run one simulated `vllm serve`; return the exit status."""
    env = dict(os.environ) if env is None else env
    try:
        args = parse_args(argv)
        scenario, source = load_scenario(env.get(ENV_SCENARIO), Path.cwd())
        index, _ = launch_index(scenario, source, env)
    except UsageProblem as exc:
        print(f"vllm: error: {exc}", file=sys.stderr)
        return 2
    except Exception as exc:  # noqa: BLE001 - InputError/ConfigError: one line, exit 2
        print(f"sparktriage-sim: {getattr(exc, 'one_line', lambda: str(exc))()}", file=sys.stderr)
        return 2
    faults = scenario.faults
    if faults.ignore_sigterm:
        signal.signal(signal.SIGTERM, signal.SIG_IGN)
    _record(scenario, argv)
    child = _child(scenario.child)
    log = Log(os.getpid(), child.pid if child else os.getpid())
    if faults.exit_after_s is not None:
        _timed_exit(faults.exit_after_s, faults.exit_code, log, child)
    draw = draw_launch(scenario, args.depth, index)
    try:
        run_startup(args, draw, scenario, log)
    except StartupFailed as failed:
        if child is not None:
            child.kill()
        return failed.code
    if args.headless or faults.never_ready:
        _idle(faults.ignore_sigterm)
        return 0
    server = EngineServer(sim_config(scenario, args, draw), args, draw, scenario, log)
    stop = threading.Event()
    threading.Thread(target=_stats_loop, args=(server, scenario.stats_interval_s, stop), daemon=True).start()

    def listening(url: str) -> None:
        if faults.ignore_sigterm:  # the event loop installed its own handler
            signal.signal(signal.SIGTERM, signal.SIG_IGN)
        announce_listening(args, log, os.getpid())

    try:
        asyncio.run(server.run(on_ready=listening))
    except OSError as exc:
        log.line("APIServer", f"OSError: [Errno {exc.errno}] {exc.strerror}: could not bind "
                              f"{args.host}:{args.port}", "ERROR", "launcher.py:120")
        return 1
    finally:
        stop.set()
        if child is not None:
            child.kill()
    log.raw("INFO:     Shutting down", stderr=True)
    log.raw("INFO:     Application shutdown complete.", stderr=True)
    return 0


def _idle(ignore_term: bool) -> None:
    """Wait for a signal without serving (headless node, never-ready fault)."""
    stop = threading.Event()
    if not ignore_term:
        signal.signal(signal.SIGTERM, lambda *a: stop.set())
    signal.signal(signal.SIGINT, lambda *a: stop.set())
    while not stop.wait(1.0):
        pass


def main() -> None:
    sys.exit(serve(sys.argv[1:]))


if __name__ == "__main__":
    main()
