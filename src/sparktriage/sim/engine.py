"""What the simulated `vllm serve` does, as data: the engine scenario and one launch's draw.

`python -m sparktriage.sim.vllm serve MODEL ...` reads an `EngineScenario` from the environment
variable `SPARKTRIAGE_SIM` (a path to a YAML/JSON file, or inline JSON starting with `{`),
through the project's YAML loader (`yaml.safe_load`, unknown keys are errors with file:line).
The scenario holds startup phase durations, per-depth decode rates and draft acceptance,
the launch-to-launch spread and scripted faults. `draw_launch()` turns it into one launch's
behaviour (decode rate, chunk-size pattern), seeded by `SPARKTRIAGE_SIM_SEED` or by a launch
counter file, so that each relaunch differs as a real one does and stays reproducible.
See docs/simulator.md ("The simulator as `vllm serve`").
"""

from __future__ import annotations

import fcntl
import os
import random
from dataclasses import dataclass
from pathlib import Path
from typing import Any, Literal

from pydantic import BaseModel, ConfigDict, Field, field_validator

from sparktriage.errors import InputError
from sparktriage.sim.speculation import Drafts, StepCost, draw_steps
from sparktriage.yamldoc import load_yaml, parse_yaml

SCHEMA_VERSION = 1
ENV_SCENARIO = "SPARKTRIAGE_SIM"
ENV_SEED = "SPARKTRIAGE_SIM_SEED"
ENV_COUNTER = "SPARKTRIAGE_SIM_COUNTER"

# Startup phases in vLLM's order (the names of sparktriage.logs.catalog.PHASES).
PHASES = ("resolve", "engine_start", "distributed_init", "weight_read", "post_load", "compile",
          "kv_profiling", "kernel_jit", "cuda_graphs", "ready")
Phase = Literal["resolve", "engine_start", "distributed_init", "weight_read", "post_load",
                "compile", "kv_profiling", "kernel_jit", "cuda_graphs", "ready"]


class _Strict(BaseModel):
    model_config = ConfigDict(extra="forbid", frozen=True)


class Decode(_Strict):
    """Per-sequence decode behaviour (times in seconds, rates in tokens/s)."""

    ttft_s: float = Field(0.02, ge=0, le=3600, description="request received -> first token")
    rate_tok_s: float = Field(200.0, gt=0, le=1e6, description="decode rate without speculation")
    rates: dict[int, float] = Field(default_factory=dict,
                                    description="speculative depth -> decode rate (tok/s)")
    acceptance: tuple[float, ...] = Field(
        (0.85, 0.62, 0.54, 0.45, 0.38, 0.32, 0.27, 0.23),
        description="per-position acceptance rate (share of drafts whose position i is accepted)")
    spread_cv: float = Field(0.0, ge=0, le=0.5,
                             description="launch-to-launch rate spread: rate x (1 + cv x N(0,1))")
    pattern_length: int = Field(4096, ge=8, le=65536, description="chunks drawn per launch")
    step: StepCost | None = Field(None, description="each chunk one engine step at this cost (sim/speculation.py)")
    drafts: Drafts = Field(default_factory=Drafts, description="what the drafter proposes per step")
    acceptance_by_depth: dict[int, tuple[float, ...]] = Field(
        default_factory=dict, description="depth -> its own per-position acceptance (the drafter depends on k)")

    @property
    def stepped(self) -> bool:
        return self.step is not None or self.drafts != Drafts() or bool(self.acceptance_by_depth)

    @field_validator("acceptance")
    @classmethod
    def _monotone(cls, value):
        if any(not 0 <= a <= 1 for a in value):
            raise ValueError("acceptance rates must lie in [0, 1]")
        if any(b > a for a, b in zip(value, value[1:])):
            raise ValueError("acceptance rates must not grow with the position")
        return value

    @field_validator("acceptance_by_depth")
    @classmethod
    def _by_depth(cls, value):
        for depth, rates in value.items():
            if depth < 1 or any(not 0 <= a <= 1 for a in rates) or any(b > a for a, b in zip(rates, rates[1:])):
                raise ValueError("acceptance_by_depth: depths >= 1, rates in [0, 1] not growing with the position")
        return value

    @field_validator("rates")
    @classmethod
    def _rates(cls, value):
        if any(d < 0 or r <= 0 for d, r in value.items()):
            raise ValueError("depths must be >= 0 and rates > 0")
        return value


class StartupError(_Strict):
    """Fail at the start of `phase`: print `message` as vLLM's engine failure, then exit."""

    phase: Phase = "weight_read"
    message: str = Field("RuntimeError: simulated startup failure", max_length=2000)
    exit_code: int = Field(1, ge=1, le=255)


class PhaseStall(_Strict):
    """Go silent for `seconds` inside `phase` (after its first line)."""

    phase: Phase
    seconds: float = Field(gt=0, le=86400)


class GreedyChange(_Strict):
    """With `num_speculative_tokens == depth`, greedy output differs from token `at` on."""

    depth: int = Field(ge=1, le=64)
    at: int = Field(0, ge=0)


class EngineFaults(_Strict):
    """Scripted faults of one launch."""

    startup_error: StartupError | None = None
    stall: PhaseStall | None = None
    never_ready: bool = Field(False, description="never listen (the startup deadline must fire)")
    crash_after_requests: int | None = Field(None, ge=0, description="exit after N completions")
    exit_after_s: float | None = Field(None, gt=0, description="exit on its own N s after start")
    exit_code: int = Field(17, ge=1, le=255, description="status of the crash / timed exit")
    greedy_change: GreedyChange | None = None
    garbage: str | None = Field(None, min_length=1, max_length=64,
                                description="every output token's text is this string")
    ignore_sigterm: bool = Field(False, description="SIGTERM is ignored (teardown must SIGKILL)")


class EngineScenario(_Strict):
    """The whole simulated `vllm serve` (docs/simulator.md)."""

    schema_version: int = SCHEMA_VERSION
    seed: int = Field(0, description="base seed; the launch index is added to it")
    launch_counter: str | None = Field(None, description="file counting launches (seeds them)")
    startup_s: dict[Phase, float] = Field(default_factory=dict, description="phase -> seconds")
    decode: Decode = Field(default_factory=Decode)
    stats_interval_s: float = Field(10.0, gt=0, le=3600, description="periodic stats log lines")
    metrics_omit: tuple[Literal["generation_tokens", "spec_decode"], ...] = Field(
        (), description="`/metrics` families left out, as on a server that does not export them "
                        "(the log's stats and SpecDecoding lines stay)")
    child: Literal["none", "group", "setsid"] = Field(
        "none", description="start an engine child process (setsid: in its own session)")
    faults: EngineFaults = Field(default_factory=EngineFaults)
    record_dir: str | None = Field(None, description="write <pid>.json with argv and env here")
    stream: dict[str, Any] = Field(default_factory=dict,
                                   description="extra sim Scenario fields (sources, eos_after, ...)")
    server: dict[str, Any] = Field(default_factory=dict,
                                   description="extra SimConfig fields (api_key, endpoints)")

    @field_validator("schema_version")
    @classmethod
    def _version(cls, value):
        if value != SCHEMA_VERSION:
            raise ValueError(f"schema_version {value} is not supported (use {SCHEMA_VERSION})")
        return value

    @field_validator("startup_s")
    @classmethod
    def _durations(cls, value):
        if any(not 0 <= s <= 86400 for s in value.values()):
            raise ValueError("phase durations must lie between 0 and 86400 s")
        return value

    def rate_for(self, depth: int) -> float:
        """Mean decode rate at a speculative depth (0: none)."""
        return self.decode.rates.get(depth, self.decode.rate_tok_s)


def load_scenario(value: str | None, cwd: Path | None = None) -> tuple[EngineScenario, Path | None]:
    """The scenario named by `SPARKTRIAGE_SIM` (path or inline JSON); defaults when unset."""
    if not value or not value.strip():
        return EngineScenario(), None
    if value.lstrip().startswith("{"):
        return parse_yaml(value, ENV_SCENARIO, EngineScenario, "simulator scenario"), None
    path = Path(value)
    if not path.is_absolute() and cwd is not None:
        path = cwd / path
    return load_yaml(path, EngineScenario, "simulator scenario"), path


def _bump(counter: Path) -> int:
    """Read, increment and write a launch counter under an exclusive lock; return the old value."""
    counter.parent.mkdir(parents=True, exist_ok=True)
    with open(counter, "a+", encoding="utf-8") as fh:
        fcntl.flock(fh, fcntl.LOCK_EX)
        fh.seek(0)
        text = fh.read(64).strip()
        index = int(text) if text.isdigit() else 0
        fh.seek(0)
        fh.truncate()
        fh.write(f"{index + 1}\n")
        fh.flush()
    return index


def launch_index(scenario: EngineScenario, source: Path | None, env: dict) -> tuple[int, str]:
    """This launch's index and where it came from: the seed variable, a counter, or none."""
    if env.get(ENV_SEED, "").strip():
        try:
            return int(env[ENV_SEED]), ENV_SEED
        except ValueError as exc:
            raise InputError(f"{ENV_SEED} must be an integer, not {env[ENV_SEED]!r}") from exc
    counter = env.get(ENV_COUNTER) or scenario.launch_counter
    if not counter and source is not None:
        counter = str(source) + ".launches"
    if counter:
        try:
            return _bump(Path(counter)), counter
        except OSError as exc:
            raise InputError(f"launch counter {counter}: cannot update ({exc.strerror})") from exc
    return 0, "none"


@dataclass(frozen=True)
class LaunchDraw:
    """One launch's behaviour: drawn once at startup, constant for the launch."""

    index: int
    seed: int
    depth: int
    rate_tok_s: float  # this launch's decode rate
    mean_rate_tok_s: float  # the scenario's mean for this depth
    pattern: tuple[int, ...]  # tokens per chunk: first the prefill token, then decode steps
    gaps: tuple[float, ...] | None = None  # with a step model: the time before each later chunk (s)
    drafts: tuple[int, ...] | None = None  # with a step model: draft length of each step
    pair_gaps: tuple[float, ...] | None = None  # with a step model: each gap with two streams
    base_s: float | None = None  # with a step model: a plain step's time (a batched engine's unit)


def _stepped(scenario: EngineScenario, depth: int, index: int, factor: float) -> LaunchDraw:
    """A launch with one chunk per engine step (sim/speculation.py)."""
    decode = scenario.decode
    acceptance = decode.acceptance_by_depth.get(depth, decode.acceptance)
    steps = draw_steps(scenario.seed + 7919 * depth, depth, acceptance, decode.drafts, decode.step,
                       decode.pattern_length)
    base = 1.0 / (decode.rate_tok_s * factor)
    gaps = tuple(base * c for c in steps.costs[1:])
    rate = sum(steps.sizes[1:]) / sum(gaps)
    mean = rate * factor
    return LaunchDraw(index, scenario.seed + index, depth, round(rate, 6), mean, steps.sizes, gaps,
                      steps.drafts, tuple(base * c for c in steps.pair_costs[1:]), base)


def draw_launch(scenario: EngineScenario, depth: int, index: int) -> LaunchDraw:
    """Draw the rate and the chunk sizes of launch `index` at speculative depth `depth`.

    With a step model (`decode.step`, `drafts` or `acceptance_by_depth` set) each chunk is one
    engine step and waits its step time (sim/speculation.py); otherwise:

    Each decode step drafts `depth` tokens; position i is accepted when every earlier one was
    and a draw falls under acceptance[i] / acceptance[i-1] (so the unconditional share of
    drafts with position i accepted is acceptance[i], as vLLM's per-position rate reports).
    """
    seed = scenario.seed + index
    rng = random.Random(seed)
    mean = scenario.rate_for(depth)
    factor = 1.0 + scenario.decode.spread_cv * max(-3.0, min(3.0, rng.gauss(0.0, 1.0)))
    if scenario.decode.stepped:
        return _stepped(scenario, depth, index, max(0.05, factor))
    rate = max(mean * 0.05, mean * factor)
    accept = list(scenario.decode.acceptance[:depth])
    accept += [accept[-1] if accept else 0.0] * (depth - len(accept))
    sizes = [1]
    for _ in range(scenario.decode.pattern_length - 1):
        accepted, previous = 0, 1.0
        for a in accept:
            if previous <= 0 or rng.random() >= a / previous:
                break
            accepted += 1
            previous = a
        sizes.append(1 + accepted)
    return LaunchDraw(index, seed, depth, round(rate, 6), mean, tuple(sizes))
