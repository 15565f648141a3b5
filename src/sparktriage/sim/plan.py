"""The plan of one simulated response: which chunks, with how many tokens, at what offsets.

Pure and deterministic: `read_request()` turns a request body into a `RequestSpec` (or a 400
message, as a strict server would answer), and `plan_stream()` lays out the response of a
scenario as `Step`s with their offsets from the moment the request was received. The server
(server.py) only renders and sends these steps on time, and records when each really left.
"""

from __future__ import annotations

import random
from dataclasses import dataclass, field
from typing import Any

from sparktriage.sim.scenario import Scenario

# Fields a strict OpenAI server rejects (vLLM extensions and vLLM-only stream options).
_VLLM_ONLY = ("return_token_ids", "ignore_eos", "min_tokens", "repetition_penalty", "top_k")
# Fields OpenAI's own API knows; a strict server refuses every other one ("sim" is the
# simulator's per-request override, never refused).
_OPENAI_FIELDS = frozenset((
    "model", "prompt", "messages", "max_tokens", "max_completion_tokens", "stream", "stream_options",
    "temperature", "top_p", "n", "stop", "logprobs", "top_logprobs", "echo", "presence_penalty",
    "frequency_penalty", "seed", "user", "logit_bias", "best_of", "suffix", "response_format",
    "tools", "tool_choice", "parallel_tool_calls", "store", "metadata", "reasoning_effort", "sim"))


class BadRequest(ValueError):
    """The request body is invalid; the message goes into a 400 answer."""


@dataclass(frozen=True)
class RequestSpec:
    """What a completion request asked for."""

    api: str  # completions | chat
    model: str
    stream: bool
    max_tokens: int | None
    ignore_eos: bool
    token_ids: bool
    logprobs: bool
    include_usage: bool
    continuous_usage: bool
    prompt_tokens: int
    override: dict = field(default_factory=dict)  # per-request scenario override ("sim" field)


def _count_prompt(value: Any) -> int:
    if isinstance(value, str):
        return max(1, len(value.split()))
    if isinstance(value, list):
        if all(isinstance(v, int) for v in value):
            return max(1, len(value))
        return sum(_count_prompt(v) for v in value)
    return 1


def read_request(api: str, body: Any, strict: bool) -> RequestSpec:
    """Validate a completion request body like vLLM does (a subset); raise BadRequest."""
    if not isinstance(body, dict):
        raise BadRequest("request body must be a JSON object")
    model = body.get("model")
    if not isinstance(model, str) or not model:
        raise BadRequest("'model' is required")
    if api == "completions":
        if "prompt" not in body:
            raise BadRequest("'prompt' is required")
        prompt_tokens = _count_prompt(body["prompt"])
        max_tokens = body.get("max_tokens")
    else:
        messages = body.get("messages")
        if not isinstance(messages, list) or not messages:
            raise BadRequest("'messages' must be a non-empty list")
        prompt_tokens = sum(4 + _count_prompt(m.get("content", "") if isinstance(m, dict) else m)
                            for m in messages)
        max_tokens = body.get("max_completion_tokens", body.get("max_tokens"))
    if max_tokens is not None and (not isinstance(max_tokens, int) or isinstance(max_tokens, bool)
                                   or max_tokens < 1):
        raise BadRequest("max_tokens must be a positive integer")
    stream = body.get("stream") is True
    options = body.get("stream_options")
    if options is not None:
        if not stream:
            raise BadRequest("Stream options can only be defined when `stream=True`.")
        if not isinstance(options, dict):
            raise BadRequest("stream_options must be an object")
        if strict and "continuous_usage_stats" in options:
            raise BadRequest("Unrecognized request argument supplied: stream_options.continuous_usage_stats")
    if strict:
        for name in (*_VLLM_ONLY, *sorted(set(body) - _OPENAI_FIELDS)):
            if name in body:
                raise BadRequest(f"Unrecognized request argument supplied: {name}")
    options = options or {}
    include_usage = options.get("include_usage") is True
    if api == "completions":
        logprobs = body.get("logprobs") is not None and body.get("logprobs") is not False
    else:
        logprobs = body.get("logprobs") is True
    override = body.get("sim") if isinstance(body.get("sim"), dict) else {}
    return RequestSpec(
        api=api, model=model, stream=stream, max_tokens=max_tokens,
        ignore_eos=body.get("ignore_eos") is True, token_ids=body.get("return_token_ids") is True,
        logprobs=logprobs, include_usage=include_usage,
        continuous_usage=include_usage and options.get("continuous_usage_stats") is True,
        prompt_tokens=prompt_tokens, override=override,
    )


@dataclass(frozen=True)
class Step:
    """One thing to send, `at` seconds after the request was received."""

    at: float
    kind: str  # role | tokens | error | malformed | usage | done | reset | close
    start: int = 0  # index of the first token of a `tokens` step
    count: int = 0  # tokens in a `tokens` step
    finish: str | None = None  # finish_reason carried by the last `tokens` step
    pair_extra: float = 0.0  # how much later it is due when taken while another stream is open
    draft: int = 0  # the draft length its engine step verifies (scenario `drafts`, batch_step)


@dataclass(frozen=True)
class StreamPlan:
    """The whole response: steps in order, and what the server will report."""

    steps: tuple[Step, ...]
    tokens: int  # tokens that will be sent
    finish: str | None  # finish_reason of a complete stream, None when a fault cuts it
    usage_reported: int | None  # completion_tokens in the final usage chunk, if sent
    batch: tuple | None = None  # (StepCost, plain step s): steps shared with every open stream


def _chunk_sizes(scenario: Scenario, total: int, cuts: set[int]) -> list[int]:
    """Split `total` tokens into chunks along the pattern, never across a cut position."""
    pattern = scenario.pattern
    rng = random.Random(scenario.seed)
    sizes: list[int] = []
    sent = 0
    number = 0
    while sent < total:
        k = rng.choice(pattern) if scenario.chunk_order == "random" else pattern[number % len(pattern)]
        k = min(k, total - sent)
        nxt = min((c for c in cuts if sent < c < sent + k), default=None)
        if nxt is not None:
            k = nxt - sent
        sizes.append(k)
        sent += k
        number += 1
    return sizes


def plan_stream(scenario: Scenario, spec: RequestSpec) -> StreamPlan:
    """Lay out the response of `scenario` to the request `spec`."""
    limit = spec.max_tokens if spec.max_tokens is not None else scenario.default_max_tokens
    if scenario.fixed_tokens is not None:
        limit = scenario.fixed_tokens
    total, finish = limit, "length" if limit else "stop"
    if scenario.eos_after is not None and not (spec.ignore_eos and scenario.honour_ignore_eos):
        if scenario.eos_after <= limit:
            total, finish = scenario.eos_after, "stop"
    faults = scenario.faults
    ends = [(p, kind) for p, kind in ((faults.error_at, "error"), (faults.reset_at, "reset"),
                                      (faults.close_at, "close")) if p is not None and p <= total]
    cut_at, cut_kind = min(ends) if ends else (None, None)
    sent_total = cut_at if cut_at is not None else total
    stalls: dict[int, float] = {}
    for stall in faults.stalls:
        stalls[stall.at] = stalls.get(stall.at, 0.0) + stall.seconds
    malformed = faults.malformed_at if faults.malformed_at is not None and faults.malformed_at <= sent_total else None
    cuts = set(stalls) | ({malformed} if malformed is not None else set())
    sizes = _chunk_sizes(scenario, sent_total, cuts)

    steps: list[Step] = []
    t = scenario.ttft_s + stalls.get(0, 0.0)
    if spec.api == "chat" and scenario.role_chunk:
        steps.append(Step(t, "role"))
    if malformed == 0:
        steps.append(Step(t, "malformed"))
    gaps = scenario.gaps
    pair = scenario.pair_gap_s if scenario.gap_per == "chunk" else None
    drafts = scenario.drafts if scenario.gap_per == "chunk" else None
    batch = ((scenario.batch_step, scenario.batch_base_s)
             if scenario.batch_step is not None and scenario.batch_base_s and
             scenario.gap_per == "chunk" else None)
    sent = 0
    for number, k in enumerate(sizes):
        extra, draft = 0.0, 0
        if number > 0:
            if drafts:
                draft = drafts[(number - 1) % len(drafts)]
            gap = gaps[(number - 1) % len(gaps)]
            t += gap * k if scenario.gap_per == "token" else gap
            if pair:
                extra = pair[(number - 1) % len(pair)] - gap
        last = sent + k == sent_total
        steps.append(Step(t, "tokens", sent, k, finish if last and cut_at is None else None, extra,
                          draft))
        sent += k
        if sent > 0 and sent in stalls:
            t += stalls[sent]
        if malformed is not None and sent == malformed and malformed > 0:
            steps.append(Step(t, "malformed"))
    if cut_at is not None:
        if sizes:  # the fault strikes when the next chunk would have been due
            t += gaps[(len(sizes) - 1) % len(gaps)]
        steps.append(Step(t, cut_kind))
        if cut_kind == "error":
            steps.append(Step(t, "done"))
        return StreamPlan(tuple(steps), sent_total, None, None, batch)
    usage = None
    if spec.include_usage and scenario.sources.final_usage:
        usage = sent_total + faults.final_usage_offset
        steps.append(Step(t, "usage"))
    if not faults.no_done:
        steps.append(Step(t, "done"))
    return StreamPlan(tuple(steps), sent_total, finish, usage, batch)
