"""The detectors' thresholds (seconds, bytes/s): a light module, so `stalls --help` shows them cheaply."""

from __future__ import annotations

from dataclasses import dataclass


@dataclass(frozen=True)
class DetectParams:
    """Thresholds of the detectors (seconds, bytes/s); docs/stalls.md explains the defaults."""

    silence_s: float = 30.0
    spawn_s: float = 90.0
    min_stall_s: float = 20.0
    crawl_floor_bps: float = 1024.0 ** 3
    crawl_s: float = 300.0
    asym_ratio: float = 2.0
    compile_cold_s: float = 300.0  # a cold torch.compile's silence (idle 2-core, tiny model)
    max_load_factor: float = 4.0  # compute phases' budgets scale with load per core, up to this
    warmup_s: float = 180.0  # a warmup or profiling run vLLM reports (dummy run, KV sizing)


__all__ = ["DetectParams"]
