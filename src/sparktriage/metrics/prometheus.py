"""Prometheus `/metrics`: parse scrapes, take counter deltas over an exact window.

Parsing uses `prometheus_client.parser.text_string_to_metric_families`; a page it cannot read
is an `InputError` with the line it choked on. Samples are kept by (name, labels) with their
exposed names (counters end in `_total`, research notes §6). A delta of a counter sums over
every label set (engines, models) that matches the filter; a counter that went down was reset
(a restarted server), and the delta then counts from zero and says so.

`metrics_window(before, after)` gathers what the reconciliation needs: generation and prompt
tokens, finished requests by reason, and speculative decoding (drafts, drafted and accepted
tokens, per position), with acceptance recomputed from the deltas: mean acceptance length
= 1 + accepted / drafts, acceptance rate = accepted / drafted, per position = accepted_i / drafts.
"""

from __future__ import annotations

import math
import time
from dataclasses import dataclass, field

from prometheus_client.parser import text_string_to_metric_families

from sparktriage.netread import get_bounded
from sparktriage.errors import EndpointError, InputError

GENERATION = "vllm:generation_tokens_total"
PROMPT = "vllm:prompt_tokens_total"
SUCCESS = "vllm:request_success_total"
DRAFTS = "vllm:spec_decode_num_drafts_total"
DRAFT_TOKENS = "vllm:spec_decode_num_draft_tokens_total"
ACCEPTED = "vllm:spec_decode_num_accepted_tokens_total"
ACCEPTED_PER_POS = "vllm:spec_decode_num_accepted_tokens_per_pos_total"
HISTOGRAMS = ("vllm:e2e_request_latency_seconds", "vllm:time_to_first_token_seconds",
              "vllm:inter_token_latency_seconds", "vllm:request_generation_tokens",
              "vllm:request_time_per_output_token_seconds")
MAX_TEXT = 64 << 20


@dataclass
class Scrape:
    """One `/metrics` page: samples by (name, sorted label pairs), when it was taken."""

    samples: dict[tuple[str, tuple], float]
    types: dict[str, str] = field(default_factory=dict)
    t: float | None = None  # Unix seconds, middle of the request
    url: str | None = None

    def names(self) -> set[str]:
        return {name for name, _ in self.samples}

    def select(self, name: str, **labels: str) -> dict[tuple, float]:
        """Samples of `name` whose labels include `labels`."""
        want = set(labels.items())
        return {lab: v for (n, lab), v in self.samples.items() if n == name and want <= set(lab)}

    def total(self, name: str, **labels: str) -> float | None:
        """Sum over matching label sets; None when the metric is absent."""
        found = self.select(name, **labels)
        return sum(found.values()) if found else None


def parse_text(text: str, origin: str = "metrics") -> Scrape:
    """Parse Prometheus text exposition format."""
    if len(text) > MAX_TEXT:
        raise InputError(f"{origin}: metrics page larger than {MAX_TEXT >> 20} MiB")
    samples: dict[tuple[str, tuple], float] = {}
    types: dict[str, str] = {}
    try:
        for family in text_string_to_metric_families(text):
            types[family.name] = family.type
            for sample in family.samples:
                value = float(sample.value)
                if not math.isfinite(value):
                    continue
                key = (sample.name, tuple(sorted(sample.labels.items())))
                samples[key] = value
    except (ValueError, TypeError, KeyError, IndexError) as exc:
        raise InputError(f"{origin}: not a Prometheus metrics page ({str(exc)[:200]})") from exc
    return Scrape(samples, types)


def scrape(url: str, timeout_s: float = 10.0, headers: dict | None = None) -> tuple[str, Scrape]:
    """GET a `/metrics` page; return its raw text and the parsed scrape (timed)."""
    start = time.time()
    status, body = get_bounded(url, timeout_s, headers, what="metrics page")  # streamed, capped
    end = time.time()
    if status != 200:
        raise EndpointError(f"cannot scrape {url}: HTTP {status}")
    text = body.decode("utf-8", errors="replace")
    parsed = parse_text(text, url)
    parsed.t, parsed.url = (start + end) / 2, url
    return text, parsed


@dataclass(frozen=True)
class Delta:
    """A counter's increase over a window."""

    value: float | None  # None when the counter is absent from either scrape
    reset: bool = False  # it went down: the server restarted in between


def delta(before: Scrape, after: Scrape, name: str, **labels: str) -> Delta:
    """Increase of a counter between two scrapes, summed over matching label sets."""
    b, a = before.select(name, **labels), after.select(name, **labels)
    if not a:
        return Delta(None)
    total, reset = 0.0, False
    for lab, value in a.items():
        prev = b.get(lab, 0.0)
        if value < prev:
            reset = True
            total += value
        else:
            total += value - prev
    return Delta(total, reset)


def _hist(before: Scrape, after: Scrape, name: str) -> dict | None:
    count = delta(before, after, name + "_count")
    total = delta(before, after, name + "_sum")
    if count.value is None:
        return None
    mean = total.value / count.value if count.value and total.value is not None else None
    return {"count": count.value, "sum": total.value, "mean": mean}


def metrics_window(before: Scrape, after: Scrape) -> dict:
    """Counter deltas over the window between two scrapes (what reconciliation needs)."""
    gen = delta(before, after, GENERATION)
    prompt = delta(before, after, PROMPT)
    reasons = {}
    for lab in after.select(SUCCESS):
        reason = dict(lab).get("finished_reason", "?")
        d = delta(before, after, SUCCESS, finished_reason=reason)
        if d.value:
            reasons[reason] = reasons.get(reason, 0.0) + d.value
    window = {
        "seconds": None if before.t is None or after.t is None else round(after.t - before.t, 3),
        "generation_tokens": gen.value,
        "prompt_tokens": prompt.value,
        "requests_finished": reasons,
        "reset": gen.reset or prompt.reset,
        "histograms": {name: h for name in HISTOGRAMS if (h := _hist(before, after, name))},
        "spec_decode": spec_window(before, after),
    }
    return window


def spec_window(before: Scrape, after: Scrape) -> dict | None:
    """Speculative-decoding counters over the window; None when not configured."""
    drafts = delta(before, after, DRAFTS).value
    if drafts is None:
        return None
    drafted = delta(before, after, DRAFT_TOKENS).value or 0.0
    accepted = delta(before, after, ACCEPTED).value or 0.0
    positions = sorted({dict(lab).get("position") for lab in after.select(ACCEPTED_PER_POS)},
                       key=lambda p: int(p) if p and p.isdigit() else 0)
    per_pos = [delta(before, after, ACCEPTED_PER_POS, position=p).value or 0.0
               for p in positions if p is not None]
    return {
        "drafts": drafts,
        "draft_tokens": drafted,
        "accepted_tokens": accepted,
        "mean_acceptance_length": round(1 + accepted / drafts, 4) if drafts else None,
        "acceptance_rate": round(accepted / drafted, 4) if drafted else None,
        "per_position": [round(a / drafts, 4) for a in per_pos] if drafts else [],
        "accepted_per_position": per_pos,
    }


__all__ = ["Scrape", "Delta", "parse_text", "scrape", "delta", "metrics_window", "spec_window"]
