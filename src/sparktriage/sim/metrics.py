"""The simulated engine's counters: `/metrics` in vLLM's names and the periodic stats lines.

Counters are fed from what the server really sent (the trace entry of each finished request),
so `/metrics` agrees exactly with the client's counts: a speculative decode step that sent a
chunk of c tokens is one draft of `depth` tokens (with a step model, of the step's own draft
length; a step that proposed nothing is no draft) with c - 1 accepted, positions 0..c-2.
`prometheus()` renders the text exposition format with vLLM 0.32's metric names and labels
(tests/fixtures/metrics); `stats_lines()` renders the `loggers.py` and `SpecDecoding metrics`
log messages of the last interval, as vLLM prints them every 10 s while there is traffic.
"""

from __future__ import annotations

import bisect
import threading
from dataclasses import dataclass, field

LATENCY_BUCKETS = (0.001, 0.005, 0.01, 0.02, 0.04, 0.06, 0.08, 0.1, 0.25, 0.5, 0.75, 1.0, 2.5,
                   5.0, 7.5, 10.0, 20.0, 40.0, 80.0, 160.0, 640.0, 2560.0)
TOKEN_BUCKETS = (1.0, 2.0, 5.0, 10.0, 20.0, 50.0, 100.0, 200.0, 500.0, 1000.0, 2000.0, 5000.0,
                 10000.0)
FINISH_REASONS = ("stop", "length", "abort", "error", "repetition")


@dataclass
class Histogram:
    buckets: tuple[float, ...]
    counts: list[int] = field(default_factory=list)
    total: float = 0.0
    n: int = 0

    def __post_init__(self) -> None:
        self.counts = [0] * len(self.buckets)

    def observe(self, value: float) -> None:
        index = bisect.bisect_left(self.buckets, value)
        if index < len(self.counts):
            self.counts[index] += 1
        self.total += value
        self.n += 1

    def lines(self, name: str, labels: str) -> list[str]:
        out, running = [], 0
        for bound, count in zip(self.buckets, self.counts):
            running += count
            out.append(f'{name}_bucket{{{labels},le="{bound}"}} {float(running)}')
        out.append(f'{name}_bucket{{{labels},le="+Inf"}} {float(self.n)}')
        out.append(f"{name}_count{{{labels}}} {float(self.n)}")
        out.append(f"{name}_sum{{{labels}}} {self.total}")
        return out


class EngineMetrics:
    """Counters of one simulated engine (thread-safe: the stats logger reads them)."""

    def __init__(self, model_name: str, depth: int, drafts: tuple[int, ...] | None = None,
                 omit: frozenset[str] = frozenset()) -> None:
        self.model_name, self.depth = model_name, depth
        self.omit = omit  # families `/metrics` leaves out (the scenario's metrics_omit)
        self.draft_pattern = drafts  # draft length per step (sim/speculation.py), else `depth`
        self.lock = threading.Lock()
        self.running = 0
        self.prompt_tokens = 0
        self.generation_tokens = 0
        self.success = {reason: 0 for reason in FINISH_REASONS}
        self.drafts = 0
        self.draft_tokens = 0
        self.accepted = 0
        self.per_pos = [0] * depth
        self.ttft = Histogram(LATENCY_BUCKETS)
        self.itl = Histogram(LATENCY_BUCKETS)
        self.e2e = Histogram(LATENCY_BUCKETS)
        self.tpot = Histogram(LATENCY_BUCKETS)
        self.gen_tokens = Histogram(TOKEN_BUCKETS)
        self.prompt_hist = Histogram(TOKEN_BUCKETS)
        self._last = (0, 0, 0, 0, [0] * depth, 0)  # at the previous stats line

    def begin(self) -> None:
        with self.lock:
            self.running += 1

    def finish(self, entry: dict) -> None:
        """Account one finished request from its trace entry."""
        events = [e for e in entry.get("events", []) if e["kind"] in ("tokens", "response")]
        counts = [e["count"] for e in events]
        if events and events[0]["kind"] == "response":  # not streamed: the planned chunks
            counts = list((entry.get("planned") or {}).get("sizes") or counts)
        tokens = sum(counts)
        prompt = int((entry.get("request") or {}).get("prompt_tokens") or 0)
        with self.lock:
            self.running = max(0, self.running - 1)
            self.prompt_tokens += prompt
            self.generation_tokens += tokens
            self.prompt_hist.observe(prompt)
            if entry.get("outcome") == "complete":
                finish = (entry.get("planned") or {}).get("finish") or "length"
                self.success[finish if finish in self.success else "length"] += 1
            elif entry.get("outcome") == "client_gone":
                self.success["abort"] += 1
            elif entry.get("status") == 200:
                self.success["error"] += 1
            if self.depth:
                pattern = self.draft_pattern
                for step, count in enumerate(counts[1:], start=1):
                    length = pattern[step % len(pattern)] if pattern else self.depth
                    if not length:  # the drafter proposed nothing: a plain step
                        continue
                    self.drafts += 1
                    self.draft_tokens += length
                    self.accepted += count - 1
                    for position in range(min(count - 1, self.depth)):
                        self.per_pos[position] += 1
            if events:
                self.ttft.observe(max(0.0, events[0]["t"] - entry["received"]))
                for a, b in zip(events, events[1:]):
                    self.itl.observe(max(0.0, b["t"] - a["t"]))
                end = events[-1]["t"]
                self.e2e.observe(max(0.0, end - entry["received"]))
                self.gen_tokens.observe(tokens)
                if tokens > 1:
                    self.tpot.observe(max(0.0, end - events[0]["t"]) / (tokens - 1))

    def prometheus(self) -> str:
        """The `/metrics` body (text exposition format)."""
        labels = f'engine="0",model_name="{self.model_name}"'
        out: list[str] = []

        def metric(name: str, kind: str, help_text: str, rows: list[str]) -> None:
            out.extend([f"# HELP {name} {help_text}", f"# TYPE {name} {kind}", *rows])

        with self.lock:
            metric("vllm:num_requests_running", "gauge", "Number of requests in model execution batches.",
                   [f"vllm:num_requests_running{{{labels}}} {float(self.running)}"])
            metric("vllm:num_requests_waiting", "gauge", "Number of requests waiting to be processed.",
                   [f"vllm:num_requests_waiting{{{labels}}} 0.0"])
            metric("vllm:kv_cache_usage_perc", "gauge", "KV-cache usage. 1 means 100 percent usage.",
                   [f"vllm:kv_cache_usage_perc{{{labels}}} {min(1.0, self.running / 256):.4f}"])
            metric("vllm:prompt_tokens_total", "counter", "Number of prefill tokens processed.",
                   [f"vllm:prompt_tokens_total{{{labels}}} {float(self.prompt_tokens)}"])
            if "generation_tokens" not in self.omit:
                metric("vllm:generation_tokens_total", "counter", "Number of generation tokens processed.",
                       [f"vllm:generation_tokens_total{{{labels}}} {float(self.generation_tokens)}"])
            metric("vllm:request_success_total", "counter", "Count of successfully processed requests.",
                   [f'vllm:request_success_total{{engine="0",finished_reason="{r}",model_name='
                    f'"{self.model_name}"}} {float(n)}' for r, n in self.success.items()])
            if self.depth and "spec_decode" not in self.omit:
                metric("vllm:spec_decode_num_drafts_total", "counter", "Number of spec decoding drafts.",
                       [f"vllm:spec_decode_num_drafts_total{{{labels}}} {float(self.drafts)}"])
                metric("vllm:spec_decode_num_draft_tokens_total", "counter", "Number of draft tokens.",
                       [f"vllm:spec_decode_num_draft_tokens_total{{{labels}}} {float(self.draft_tokens)}"])
                metric("vllm:spec_decode_num_accepted_tokens_total", "counter", "Number of accepted tokens.",
                       [f"vllm:spec_decode_num_accepted_tokens_total{{{labels}}} {float(self.accepted)}"])
                metric("vllm:spec_decode_num_accepted_tokens_per_pos_total", "counter",
                       "Accepted tokens per draft position.",
                       [f'vllm:spec_decode_num_accepted_tokens_per_pos_total{{{labels},position="{i}"}} '
                        f"{float(n)}" for i, n in enumerate(self.per_pos)])
            for name, hist, help_text in (
                    ("vllm:time_to_first_token_seconds", self.ttft, "Histogram of time to first token in seconds."),
                    ("vllm:inter_token_latency_seconds", self.itl, "Histogram of inter-token latency in seconds."),
                    ("vllm:e2e_request_latency_seconds", self.e2e, "Histogram of e2e request latency in seconds."),
                    ("vllm:request_time_per_output_token_seconds", self.tpot,
                     "Histogram of time_per_output_token_seconds per request."),
                    ("vllm:request_generation_tokens", self.gen_tokens, "Number of generation tokens processed."),
                    ("vllm:request_prompt_tokens", self.prompt_hist, "Number of prefill tokens processed.")):
                metric(name, "histogram", help_text, hist.lines(name, labels))
        return "\n".join(out) + "\n"

    def stats_lines(self, interval_s: float) -> list[str]:
        """The log messages of the interval since the last call (none when nothing happened)."""
        with self.lock:
            prompt, gen, drafts, accepted, per_pos, drafted_before = self._last
            d_prompt, d_gen = self.prompt_tokens - prompt, self.generation_tokens - gen
            d_drafts, d_acc = self.drafts - drafts, self.accepted - accepted
            d_pos = [a - b for a, b in zip(self.per_pos, per_pos)]
            drafted = self.draft_tokens - drafted_before
            self._last = (self.prompt_tokens, self.generation_tokens, self.drafts, self.accepted,
                          list(self.per_pos), self.draft_tokens)
            running = self.running
        if not (d_prompt or d_gen or running):
            return []
        lines = [f"Engine 000: Avg prompt throughput: {d_prompt / interval_s:.1f} tokens/s, Avg generation "
                 f"throughput: {d_gen / interval_s:.1f} tokens/s, Running: {running} reqs, Waiting: 0 reqs, "
                 f"GPU KV cache usage: {min(100.0, running / 2.56):.1f}%, Prefix cache hit rate: 0.0%"]
        if self.depth and d_drafts:
            rates = ", ".join(f"{n / d_drafts:.3f}" for n in d_pos)
            lines.append(f"SpecDecoding metrics: Mean acceptance length: {1 + d_acc / d_drafts:.2f}, "
                         f"Accepted throughput: {d_acc / interval_s:.2f} tokens/s, Drafted throughput: "
                         f"{drafted / interval_s:.2f} tokens/s, Accepted: {d_acc} tokens, Drafted: "
                         f"{drafted} tokens, Per-position acceptance rate: {rates}, Avg Draft "
                         f"acceptance rate: {100.0 * d_acc / drafted:.1f}%")
        return lines
