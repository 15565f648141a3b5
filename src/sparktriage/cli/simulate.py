"""`sparktriage simulate`: run the simulated OpenAI-compatible server (docs/simulator.md)."""

from __future__ import annotations

from pathlib import Path
from typing import Optional

import typer

from sparktriage.cli import console
from sparktriage.errors import UsageError
from sparktriage.validation_words import plain


def _stall(text: str) -> Stall:
    from sparktriage.sim.scenario import Stall
    at, sep, seconds = text.partition(":")
    try:
        return Stall(at=int(at), seconds=float(seconds))
    except ValueError as exc:
        raise UsageError(f"--stall {text!r}: expected TOKENS:SECONDS, e.g. 100:2.5") from exc


def _pattern(text: str) -> int | tuple[int, ...]:
    try:
        values = tuple(int(v) for v in text.split(",") if v.strip())
    except ValueError as exc:
        raise UsageError(f"--tokens-per-chunk {text!r}: expected integers like 1 or 1,4,2") from exc
    if not values:
        raise UsageError("--tokens-per-chunk needs at least one number")
    return values[0] if len(values) == 1 else values


def _scenario(**fields) -> Scenario:
    from sparktriage.sim.scenario import Scenario
    return Scenario.model_validate(fields)


def simulate(
    port: int = typer.Option(8000, "--port", min=0, max=65535, help="TCP port (0: any free port)."),
    host: str = typer.Option("127.0.0.1", "--host", help="Address to listen on."),
    schedule: Optional[Path] = typer.Option(None, "--schedule", help="Configuration file (YAML/JSON) with scenarios per model."),
    model: str = typer.Option("sim", "--model", help="Model name served (without --schedule)."),
    ttft: float = typer.Option(0.02, "--ttft", min=0, help="Seconds from request to first token."),
    rate: Optional[float] = typer.Option(None, "--rate", min=0.001, help="Tokens per second per stream."),
    gap: Optional[float] = typer.Option(None, "--gap", min=0, help="Seconds between chunks (instead of --rate)."),
    tokens_per_chunk: str = typer.Option("1", "--tokens-per-chunk", help="Tokens per chunk, or a pattern like 1,4,2."),
    random_chunks: bool = typer.Option(False, "--random-chunks", help="Pick each chunk's size from the pattern at random."),
    eos_after: Optional[int] = typer.Option(None, "--eos-after", min=1, help="Natural output length (EOS) in tokens."),
    ignore_eos_ignored: bool = typer.Option(False, "--ignore-eos-ignored", help="Stop at --eos-after even when ignore_eos is asked."),
    no_token_ids: bool = typer.Option(False, "--no-token-ids", help="Never send per-chunk token ids."),
    no_logprobs: bool = typer.Option(False, "--no-logprobs", help="Never send logprobs."),
    no_continuous_usage: bool = typer.Option(False, "--no-continuous-usage", help="Never send per-chunk usage."),
    no_final_usage: bool = typer.Option(False, "--no-final-usage", help="Never send the final usage chunk."),
    strict_fields: bool = typer.Option(False, "--strict-fields", help="Answer 400 to vLLM-only and unknown request fields."),
    fixed_tokens: Optional[int] = typer.Option(None, "--fixed-tokens", min=0, help="Answer exactly N tokens whatever was asked (0: empty answers)."),
    reasoning_only: bool = typer.Option(False, "--reasoning-only", help="Chat answers carry their text as reasoning_content only."),
    never_answer: bool = typer.Option(False, "--never-answer", help="Accept completion requests and never answer them."),
    error_at: Optional[int] = typer.Option(None, "--error-at", min=0, help="Send an error event after N tokens."),
    stall: list[str] = typer.Option([], "--stall", help="Pause TOKENS:SECONDS (repeatable)."),
    reset_at: Optional[int] = typer.Option(None, "--reset-at", min=0, help="TCP reset after N tokens."),
    close_at: Optional[int] = typer.Option(None, "--close-at", min=0, help="Close the connection after N tokens."),
    malformed_at: Optional[int] = typer.Option(None, "--malformed-at", min=0, help="Send a malformed event after N tokens."),
    api_key: Optional[str] = typer.Option(None, "--api-key", help="Require this bearer token on /v1/*."),
    models_endpoint: Optional[str] = typer.Option(None, "--models-endpoint", help="How /v1/models answers: ok, 404 or html."),
    trace: Optional[Path] = typer.Option(None, "--trace", help="Append every request's send-time trace to this JSONL file."),
    ready_file: Optional[Path] = typer.Option(None, "--ready-file", help="Write the base URL here once listening."),
    spin_us: float = typer.Option(150.0, "--spin-us", min=0, help="Busy-wait this many microseconds before each send."),
) -> None:
    """Serve a simulated OpenAI-compatible API with an exact token schedule and faults."""
    import asyncio
    from pydantic import ValidationError
    from sparktriage.sim.scenario import SimConfig, load_config
    from sparktriage.sim.server import serve
    scenario_options = dict(
        rate=rate, gap=gap, eos_after=eos_after, error_at=error_at, reset_at=reset_at,
        close_at=close_at, malformed_at=malformed_at, fixed_tokens=fixed_tokens,
    )
    flags = (random_chunks, ignore_eos_ignored, no_token_ids, no_logprobs, no_continuous_usage,
             no_final_usage, strict_fields, bool(stall), tokens_per_chunk != "1", ttft != 0.02,
             reasoning_only, never_answer)
    if schedule is not None:
        if any(v is not None for v in scenario_options.values()) or any(flags):
            raise UsageError("scenario options cannot be combined with --schedule (put them in the file)")
        config = load_config(schedule)
    else:
        if rate is not None and gap is not None:
            raise UsageError("give --rate or --gap, not both")
        try:
            scenario = _scenario(
                ttft_s=ttft,
                gap_s=(1.0 / rate) if rate is not None else (gap if gap is not None else 0.005),
                gap_per="token" if gap is None else "chunk",
                tokens_per_chunk=_pattern(tokens_per_chunk),
                chunk_order="random" if random_chunks else "cycle",
                eos_after=eos_after, honour_ignore_eos=not ignore_eos_ignored,
                sources=dict(token_ids=not no_token_ids, logprobs=not no_logprobs,
                             continuous_usage=not no_continuous_usage, final_usage=not no_final_usage),
                strict_fields=strict_fields, fixed_tokens=fixed_tokens,
                answer_channel="reasoning" if reasoning_only else "content",
                faults=dict(error_at=error_at, stalls=tuple(_stall(s) for s in stall), reset_at=reset_at,
                            close_at=close_at, malformed_at=malformed_at, never_answer=never_answer),
            )
        except ValidationError as exc:
            raise UsageError("invalid scenario option: " + plain(exc.errors()[0])) from exc
        config = SimConfig(scenarios={model: scenario})
    updates = {k: v for k, v in (("api_key", api_key), ("models_endpoint", models_endpoint)) if v is not None}
    if updates:
        if models_endpoint is not None and models_endpoint not in ("ok", "404", "html"):
            raise UsageError(f"--models-endpoint {models_endpoint!r}: use ok, 404 or html")
        config = SimConfig.model_validate({**config.model_dump(mode="python"), **updates})

    def ready(url: str) -> None:
        console.info(f"simulator listening on {url} (models: {', '.join(config.scenarios)}); Ctrl-C stops it")

    try:
        asyncio.run(serve(config, host, port, trace, ready_file, ready, spin_us / 1e6))
    except OSError as exc:
        raise UsageError(f"cannot listen on {host}:{port}: {exc.strerror or exc}") from exc
