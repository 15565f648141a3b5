"""Is the server ready? Two independent witnesses: the API and the log.

API: vLLM binds its port early but only listens once startup is complete, so connections are
refused until then (vllm-mechanics §3); the first `GET /health` answering 200 is readiness.
Log: startup milestones that vLLM 0.11-0.33 print (vllm-mechanics §2); each is recorded with
the receive time of the first line that shows it, which gives a coarse startup timeline even
before the full log parser runs. A server that only logs (a headless worker node) can be
declared ready by a marker instead of the API.
"""

from __future__ import annotations

import re
import time
from dataclasses import dataclass

import httpx

MARKERS: tuple[tuple[str, re.Pattern], ...] = tuple(
    (name, re.compile(pattern)) for name, pattern in (
        ("version", r"vLLM (?:API )?server version|Launching vLLM \(v|[▄█▀] +version \d+\.\d+"),
        ("engine-config", r"Initializing a V1 LLM engine"),
        ("distributed-init", r"world_size=\d+ rank=\d+ .*distributed_init_method="),
        ("load-start", r"Starting to load model|Loading model from scratch"),
        ("weights-loaded", r"Loading weights took [\d.]+"),
        ("model-loaded", r"Model loading took [\d.]+"),
        ("compile-done", r"torch\.compile (?:takes|took) [\d.]+ s in total"),
        ("kv-cache", r"KV cache size: [\d,]+ tokens|Available KV cache memory"),
        ("graphs-captured", r"Graph capturing finished in|Skipping CUDA graph capture"),
        ("engine-ready", r"init engine \(profile, create kv cache, warmup model\) took"),
        ("api-listening", r"Starting vLLM (?:API )?server|Available routes are"),
        ("ready", r"Application startup complete"),
        ("engine-failed", r"EngineCore failed to start|Engine core initialization failed"),
        ("ray-started", r"Ray runtime started"),
        ("placement-wait", r"Waiting for creating a placement group"),
    )
)


def find_markers(line: str) -> list[str]:
    """Names of the startup milestones a log line shows."""
    return [name for name, pattern in MARKERS if pattern.search(line)]


def marker_pattern(name_or_regex: str) -> re.Pattern:
    """A marker by name, or a regular expression given in a config."""
    for name, pattern in MARKERS:
        if name == name_or_regex:
            return pattern
    return re.compile(name_or_regex)


def api_ready(url: str, timeout_s: float = 2.0) -> bool:
    """Whether `GET {url}/health` answers 200 now (refused, errors and timeouts: False)."""
    try:
        return httpx.get(url.rstrip("/") + "/health", timeout=timeout_s).status_code == 200
    except httpx.HTTPError:
        return False


@dataclass
class MarkerClock:
    """First receive time of each milestone, per node; fed line records as they arrive."""

    started: float

    def __post_init__(self) -> None:
        self.first: dict[str, dict] = {}

    def feed(self, node: str, record: dict) -> list[str]:
        names = find_markers(record.get("line", ""))
        fresh = []
        for name in names:
            key = f"{node}:{name}"
            if key not in self.first:
                self.first[key] = {"node": node, "marker": name, "t": record.get("t"),
                                   "after_s": round(float(record.get("t") or time.time())
                                                    - self.started, 3)}
                fresh.append(name)
        return fresh

    def timeline(self) -> list[dict]:
        return sorted(self.first.values(), key=lambda m: m["t"] or 0)
