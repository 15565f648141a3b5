"""What the simulated server does, as data: server settings and per-model scenarios.

A `SimConfig` holds server-wide behaviour (API key, how `/v1/models` and the completion
endpoints answer) and a mapping of model names to `Scenario`s. A scenario is the token
schedule (TTFT, gaps, tokens per chunk), the token-count sources the server supports, how it
treats `ignore_eos`, and the faults it injects. Files are YAML or JSON read with
the bounded `sparktriage.yamlsafe` reader; unknown keys are errors, reported with the file and line (docs/simulator.md).
"""

from __future__ import annotations

from pathlib import Path
from typing import Any, Literal

from pydantic import BaseModel, ConfigDict, Field, ValidationError, field_validator, model_validator

from sparktriage.sim.speculation import StepCost
from sparktriage.sim.toy import ToyConfig
from sparktriage.yamldoc import load_yaml, parse_yaml
from sparktriage.validation_words import plain

SCHEMA_VERSION = 1


class _Strict(BaseModel):
    model_config = ConfigDict(extra="forbid", frozen=True)


class Sources(_Strict):
    """Token-count sources the server supports (each is sent only when the request asks)."""

    token_ids: bool = Field(True, description="per-chunk `token_ids` for `return_token_ids`")
    logprobs: bool = Field(True, description="per-chunk logprobs when `logprobs` is asked")
    continuous_usage: bool = Field(True, description="cumulative usage in every chunk")
    final_usage: bool = Field(True, description="trailing usage-only chunk for `include_usage`")


class Stall(_Strict):
    """Pause the stream for `seconds` after `at` tokens were sent."""

    at: int = Field(ge=0, description="tokens sent before the pause")
    seconds: float = Field(gt=0, le=3600, description="length of the pause (s)")


class Faults(_Strict):
    """Faults injected into each response of the scenario (token positions count from 0)."""

    error_at: int | None = Field(None, ge=0, description="after N tokens: an error event, then [DONE]")
    stalls: tuple[Stall, ...] = Field((), description="pauses in the stream")
    reset_at: int | None = Field(None, ge=0, description="after N tokens: TCP reset (RST)")
    close_at: int | None = Field(None, ge=0, description="after N tokens: clean close, no [DONE]")
    malformed_at: int | None = Field(None, ge=0, description="after N tokens: a non-JSON event")
    no_done: bool = Field(False, description="end the stream without `data: [DONE]`")
    final_usage_offset: int = Field(0, description="final usage reports this many tokens more")
    http_status: int | None = Field(None, ge=400, le=599, description="answer every request with this status")
    http_message: str = Field("simulated failure", description="message of the error body")
    never_answer: bool = Field(False, description="read completion requests and never answer them")


class Scenario(_Strict):
    """How one served model streams (times in seconds)."""

    ttft_s: float = Field(0.02, ge=0, le=3600, description="request received → first token chunk")
    gap_s: float | tuple[float, ...] = Field(0.005, description="gap before each later chunk; a list is cycled")
    gap_per: Literal["chunk", "token"] = Field(
        "token", description="`token`: a chunk of k tokens waits k gaps (constant token rate)"
    )
    pair_gap_s: tuple[float, ...] | None = Field(
        None, description="gap before each later chunk while another stream is open (engine steps "
                          "shared by two streams), cycled as gap_s; with gap_per chunk")
    batch_step: StepCost | None = Field(
        None, description="one engine loop: a step taken while other streams are open costs "
                          "batch_base_s x the step over every open stream's draft (sim/server.py); "
                          "with gap_per chunk")
    batch_base_s: float | None = Field(None, gt=0, le=3600, description="a plain step's time (s)")
    drafts: tuple[int, ...] | None = Field(
        None, description="draft length of each later chunk's step, cycled as gap_s (batch_step)")
    tokens_per_chunk: int | tuple[int, ...] = Field(1, description="tokens per chunk; a list is a pattern")
    chunk_order: Literal["cycle", "random"] = Field("cycle", description="walk the pattern in order or at random")
    seed: int = Field(0, description="seed of `random` chunk order and of token ids")
    default_max_tokens: int = Field(16, ge=1, description="output length when the request names none")
    fixed_tokens: int | None = Field(None, ge=0, description="generate this many tokens whatever max_tokens says (0: an empty answer)")
    eos_after: int | None = Field(None, ge=1, description="natural length: the model emits EOS here")
    honour_ignore_eos: bool = Field(True, description="whether `ignore_eos` makes it run past eos_after")
    sources: Sources = Field(default_factory=Sources)
    strict_fields: bool = Field(False, description="400 on vLLM-only and unknown request fields, as OpenAI's API")
    answer_channel: Literal["content", "reasoning"] = Field(
        "content", description="chat: where the answer's text goes (`reasoning`: reasoning_content only)")
    role_chunk: bool = Field(True, description="chat: a first chunk with the role and no token")
    empty_text_every: int = Field(0, ge=0, description="every n-th token chunk has empty text (held-back bytes)")
    faults: Faults = Field(default_factory=Faults)
    diverge_at: int | None = Field(None, ge=0, description="output token ids change from this position on")
    garbage_text: str | None = Field(None, min_length=1, max_length=64,
                                     description="every output token's text is this string")
    sequence: tuple[dict[str, Any], ...] = Field(
        (), description="per-request overrides of these fields, cycled over the model's requests"
    )

    @field_validator("gap_s")
    @classmethod
    def _gaps(cls, value):
        values = value if isinstance(value, tuple) else (value,)
        if not values or any(v < 0 or v > 3600 for v in values):
            raise ValueError("gaps must be between 0 and 3600 s, and a list must not be empty")
        return value

    @field_validator("pair_gap_s")
    @classmethod
    def _pair_gaps(cls, value):
        if value is not None and (not value or any(v < 0 or v > 3600 for v in value)):
            raise ValueError("pair gaps must be between 0 and 3600 s, and the list must not be empty")
        return value

    @field_validator("tokens_per_chunk")
    @classmethod
    def _pattern(cls, value):
        values = value if isinstance(value, tuple) else (value,)
        if not values or any(v < 1 or v > 4096 for v in values):
            raise ValueError("tokens per chunk must be 1..4096, and a list must not be empty")
        return value

    @model_validator(mode="after")
    def _sequence_entries_valid(self) -> "Scenario":
        for number, override in enumerate(self.sequence):
            if "sequence" in override:
                raise ValueError(f"sequence[{number}] must not contain 'sequence'")
            try:
                self.with_overrides(override)
            except ValidationError as exc:
                first = exc.errors()[0]
                where = ".".join(str(p) for p in first["loc"])
                raise ValueError(f"sequence[{number}].{where}: {plain(first)}") from None
        return self

    def with_overrides(self, override: dict[str, Any]) -> "Scenario":
        """This scenario with some fields replaced (validated like a file entry).

        Nested settings (`sources`, `faults`) are merged key by key, so an override can
        change one fault without repeating the others. The base's `sequence` is dropped.
        """
        data = self.model_dump(mode="python", exclude={"sequence"})
        for key, value in override.items():
            if key in ("sources", "faults") and isinstance(value, dict):
                data[key] = {**data[key], **value}
            else:
                data[key] = value
        return Scenario.model_validate(data)

    def for_request(self, n: int) -> "Scenario":
        """The scenario applied to the n-th request (0-based) of this model."""
        if not self.sequence:
            return self
        return self.with_overrides(self.sequence[n % len(self.sequence)])

    @property
    def gaps(self) -> tuple[float, ...]:
        return self.gap_s if isinstance(self.gap_s, tuple) else (self.gap_s,)

    @property
    def pattern(self) -> tuple[int, ...]:
        return self.tokens_per_chunk if isinstance(self.tokens_per_chunk, tuple) else (self.tokens_per_chunk,)


class SimConfig(_Strict):
    """The whole simulated server."""

    schema_version: int = Field(SCHEMA_VERSION, description="version of this file format")
    api_key: str | None = Field(None, description="require `Authorization: Bearer <key>` on /v1/*")
    models_endpoint: Literal["ok", "404", "html"] = Field("ok", description="how GET /v1/models answers")
    completions_endpoint: Literal["ok", "404", "html"] = Field("ok", description="how the completion APIs answer")
    stream_only: bool = Field(False, description="answer non-streaming completion requests with 400 (a gateway that refuses them)")
    vocab_size: int = Field(2048, ge=16, description="token ids lie in [first_token_id, vocab_size)")
    first_token_id: int = Field(3, ge=0, description="lowest id used (skips special tokens)")
    scenarios: dict[str, Scenario] = Field(
        default_factory=lambda: {"sim": Scenario()}, description="served model name → behaviour"
    )
    max_model_len: int = Field(1_000_000, ge=1, description="what /v1/models reports")
    version: str = Field("sparktriage-sim", max_length=100, description="what /version reports")
    toy: ToyConfig | None = Field(None, description="answer completions with the toy language model")

    @model_validator(mode="after")
    def _check(self) -> "SimConfig":
        if self.schema_version != SCHEMA_VERSION:
            raise ValueError(f"schema_version {self.schema_version} is not supported (use {SCHEMA_VERSION})")
        if not self.scenarios:
            raise ValueError("at least one scenario (model) is needed")
        if self.first_token_id >= self.vocab_size:
            raise ValueError("first_token_id must be below vocab_size")
        return self


def parse_config(text: str, origin: str) -> SimConfig:
    """Validate a simulator configuration; errors name origin:line and every problem."""
    return parse_yaml(text, origin, SimConfig, "simulator configuration")


def load_config(path: Path) -> SimConfig:
    """Read a simulator configuration file (YAML or JSON)."""
    return load_yaml(path, SimConfig, "simulator configuration")
