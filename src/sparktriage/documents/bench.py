"""The typed `bench` document (`launches/<label>/bench.json`, the JSON contract of issue 2), and
`launch.json` (the server the protocol measured, written before its first request).

The contract, checked by this model (it replaces the hand check tests once did): `endpoint` an
http(s) URL, `model` a non-empty name, at least one workload; per request `warmup` (bool),
`status` (ok/error/incomplete), `output_tokens` (int), `ttft_s`/`decode_tok_s`/`e2e_tok_s`
(finite numbers or null), `chunks` (int); per workload `summary.decode_tok_s` {mean, ci95_low,
ci95_high, median, n} over the measured ok requests that have a decode rate, with
`ci95_low <= mean <= ci95_high` when n >= 2 and the mean equal to theirs.
"""

from __future__ import annotations

from typing import Annotated, Any, Literal

from pydantic import Field, model_validator

from sparktriage.store.typed import Document, Part


Finite = Annotated[float, Field(allow_inf_nan=False)]


class Stat(Part):
    """One sample's summary (stats.summary), as the bench document carries it."""

    mean: Finite | None
    ci95_low: Finite | None
    ci95_high: Finite | None
    median: Finite | None
    mad: Finite | None
    stdev: Finite | None
    n: Annotated[int, Field(ge=0)]


class Counts(Part):
    measured: int
    warmup: int
    ok: int
    error: int
    incomplete: int


class Summary(Part):
    decode_tok_s: Stat
    ttft_s: Stat
    e2e_tok_s: Stat
    output_tokens: int
    counts: Counts
    max_tokens_per_chunk: int
    token_sources: list[str]


class BenchRequest(Part):
    """One request's derived numbers (bench.records.RequestMetrics plus its place)."""

    index: int | None
    warmup: bool
    sent_at: str | None
    status: Literal["ok", "error", "incomplete"]
    reason: str | None
    output_tokens: int
    ttft_s: Finite | None
    decode_tok_s: Finite | None
    e2e_tok_s: Finite | None
    chunks: int
    max_tokens_per_chunk: int
    token_source: str
    exact: bool
    token_totals: dict[str, Any]
    disagreements: list[str]
    short: bool
    first_read_tokens: int | None = None  # absent in documents written before it was recorded
    max_gap_s: Finite | None = None  # longest wait between chunks once the answer began
    asked_tokens: int | None = None  # max_tokens when ignore_eos was asked


class FailedRequest(Part):
    index: int | None
    warmup: bool
    status: Literal["ok", "error", "incomplete"]
    reason: str | None
    output_tokens: int


class BenchWorkload(Part):
    name: str
    requests: list[BenchRequest]
    summary: Summary
    failed: list[FailedRequest]
    capabilities: dict[str, Any] | None
    warnings: list[str]

    @model_validator(mode="after")
    def _decode_summary_matches_requests(self) -> "BenchWorkload":
        values = [r.decode_tok_s for r in self.requests
                  if not r.warmup and r.status == "ok" and r.decode_tok_s is not None]
        decode = self.summary.decode_tok_s
        if decode.n != len(values):
            raise ValueError(f"summary.decode_tok_s.n is {decode.n} but {len(values)} measured "
                             "ok requests have a decode rate")
        if decode.n >= 2:
            if None in (decode.mean, decode.ci95_low, decode.ci95_high):
                raise ValueError("summary.decode_tok_s lacks mean or interval with n >= 2")
            if not decode.ci95_low <= decode.mean <= decode.ci95_high:
                raise ValueError("summary.decode_tok_s mean lies outside its 95% interval")
            mean = sum(values) / len(values)
            if abs(decode.mean - mean) >= 1e-9 * max(1.0, abs(decode.mean)):
                raise ValueError(f"summary.decode_tok_s.mean {decode.mean} is not the mean of "
                                 f"the requests' decode rates ({mean})")
        return self


class BenchDocument(Document):
    """bench.json: what one launch delivered, per workload (docs/formats.md)."""

    NAME = "bench"
    FILE = "bench.json"
    kind: Literal["bench"]
    endpoint: Annotated[str, Field(pattern=r"^https?://")]
    model: Annotated[str, Field(min_length=1)]
    server_version: str | None
    workloads: Annotated[list[BenchWorkload], Field(min_length=1)]


class Message(Part):
    role: Literal["system", "user", "assistant"]
    content: str


class WorkloadEntry(Part):
    """A workload as launch.json records it (`bench.workload.Workload`, dumped whole)."""

    name: str
    description: str = ""
    api: Literal["completions", "chat"]
    prompt: str | None = None
    messages: list[Message] | None = None
    max_tokens: int
    temperature: float
    ignore_eos: bool
    requests: int
    warmup: int
    extra_body: dict[str, Any] = {}


class ClientSettings(Part):
    stall_timeout_s: float | None = None
    request_timeout_s: float | None = None
    api_key: Literal["set"] | None = None


class LaunchDocument(Document):
    """launch.json: the server one protocol measured and what was asked of it."""

    NAME = "launch"
    FILE = "launch.json"
    kind: Literal["launch"]
    label: str | None = None
    endpoint: str
    model: str
    models_listed: list[str] | None = None
    server_version: str | None
    max_model_len: int | None = None
    workloads: list[WorkloadEntry]
    client: ClientSettings | None = None


class BenchResult(Part):
    """What `bench --json` prints when it measured or rebuilt several launches."""

    schema_version: Literal[1]
    launches: list[BenchDocument]
