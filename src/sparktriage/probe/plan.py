"""Declare every request of a probe before sending any (the runner executes the plan).

Phases: `sequential` (the known-answer probes, one at a time), `concurrent` (passages, the
same probes as a burst, chat probes, open generations: all at once) and `followup` (re-scoring
the open generations, which needs their token ids). Request bodies follow the shapes of
docs/garbage.md: greedy, short, with logprobs at the level the server accepted.
"""

from __future__ import annotations

from dataclasses import dataclass, field

from sparktriage.probe.knowns import KnownProbe, probe_set
from sparktriage.probe.observations import Capabilities
from sparktriage.probe.passages import Passage, passage_set

OPEN_PROMPTS = (
    "Describe what a library is and why people visit one.",
    "Explain how to make a cup of tea.",
    "Write a few sentences about the ocean.",
    "Explain what a computer file is.",
    "Describe a busy train station in the morning.",
)
PROBE_MAX_TOKENS, CHAT_MAX_TOKENS, OPEN_MAX_TOKENS = 12, 24, 64
LONG_MAX_TOKENS_CONTEXT = 900  # tokens of long-context filler at most (budget)
BYTES_PER_TOKEN_GUESS = 3.0


@dataclass(frozen=True)
class Request:
    id: str
    phase: str  # sequential / concurrent / followup
    path: str
    body: dict


@dataclass
class ProbePlan:
    model: str
    seed: int
    passages: list[Passage]
    probes: list[KnownProbe]
    open_prompts: list[str]
    requests: list[Request] = field(default_factory=list)

    def phase(self, name: str) -> list[Request]:
        return [r for r in self.requests if r.phase == name]


def long_context_chars(max_model_len: int | None) -> int:
    tokens = LONG_MAX_TOKENS_CONTEXT if not max_model_len else min(LONG_MAX_TOKENS_CONTEXT, max_model_len // 2 - 48)
    return max(200, int(tokens * BYTES_PER_TOKEN_GUESS))


def _gen_fields(caps: Capabilities, chat: bool) -> dict:
    extra: dict = {"temperature": 0}
    if caps.logprobs:
        extra.update({"logprobs": True, "top_logprobs": caps.logprobs} if chat else {"logprobs": caps.logprobs})
    if caps.token_ids:
        extra["return_token_ids"] = True
    return extra


def passage_body(model: str, text: str, caps: Capabilities) -> dict:
    body = {"model": model, "prompt": text, "max_tokens": 1, "temperature": 0}
    if caps.prompt_logprobs_via == "echo":
        body.update({"echo": True, "logprobs": caps.prompt_logprobs})
    else:
        body["prompt_logprobs"] = caps.prompt_logprobs
    if caps.token_ids:
        body["return_token_ids"] = True
    return body


def build(model: str, seed: int, caps: Capabilities, passages: list[Passage] | None = None) -> ProbePlan:
    """The whole probe for one server; `passages` come from a baseline when comparing with one."""
    passages = passages or passage_set(seed)
    probes = probe_set(seed, long_context_chars(caps.max_model_len))
    plan = ProbePlan(model, seed, passages, probes, list(OPEN_PROMPTS))
    add = plan.requests.append
    if caps.completions:
        for probe in probes:
            body = {"model": model, "prompt": probe.completion_prompt(), "max_tokens": PROBE_MAX_TOKENS,
                    "stop": ["\n"], **_gen_fields(caps, chat=False)}
            add(Request(f"C:seq:{probe.id}", "sequential", "/v1/completions", body))
            if probe.kind != "long":
                add(Request(f"C:burst:{probe.id}", "concurrent", "/v1/completions", dict(body)))
        if caps.prompt_logprobs_via:
            for passage in passages:
                add(Request(f"B:{passage.name}", "concurrent", "/v1/completions",
                            passage_body(model, passage.text, caps)))
    if caps.chat:
        for probe in probes:
            if probe.chat:
                add(Request(f"C:chat:{probe.id}", "concurrent", "/v1/chat/completions",
                            {"model": model, "messages": probe.chat_messages(), "max_tokens": CHAT_MAX_TOKENS,
                             **_gen_fields(caps, chat=True)}))
    for i, prompt in enumerate(plan.open_prompts):
        if caps.chat:
            add(Request(f"D:{i}", "concurrent", "/v1/chat/completions",
                        {"model": model, "messages": [{"role": "user", "content": prompt}],
                         "max_tokens": OPEN_MAX_TOKENS, **_gen_fields(caps, chat=True)}))
        elif caps.completions:
            add(Request(f"D:{i}", "concurrent", "/v1/completions",
                        {"model": model, "prompt": f"Q: {prompt}\nA:", "max_tokens": OPEN_MAX_TOKENS,
                         **_gen_fields(caps, chat=False)}))
    return plan


def rescore_request(index: int, model: str, prompt_ids: list[int], output_ids: list[int]) -> Request:
    """Family E's prefill half: the generation's own token ids, scored in one fresh prefill."""
    return Request(f"E:{index}", "followup", "/v1/completions",
                   {"model": model, "prompt": list(prompt_ids) + list(output_ids), "max_tokens": 1,
                    "temperature": 0, "prompt_logprobs": 1})
