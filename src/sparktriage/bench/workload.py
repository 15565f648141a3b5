"""Workloads as data: a prompt and its protocol parameters, shipped or user-written YAML.

Built-in workloads live in `bench/workloads/<name>.yaml`. `--workload` takes names of those,
or paths to YAML files of the same shape (docs/workloads.md). Files are read with
the bounded `sparktriage.yamlsafe` reader; unknown keys are errors.
"""

from __future__ import annotations

from importlib import resources
from pathlib import Path
from typing import Any, Literal

from pydantic import BaseModel, ConfigDict, Field, model_validator

from sparktriage.errors import InputError
from sparktriage import yamlsafe
from sparktriage.yamldoc import parse_yaml


class Message(BaseModel):
    model_config = ConfigDict(extra="forbid", frozen=True)
    role: Literal["system", "user", "assistant"]
    content: str


class Workload(BaseModel):
    """One workload of the delivered-token protocol."""

    model_config = ConfigDict(extra="forbid", frozen=True)

    name: str = Field(pattern=r"^[A-Za-z0-9][A-Za-z0-9._-]{0,63}$", description="short id")
    description: str = Field("", description="what the prompt stands for")
    api: Literal["completions", "chat"] = Field("completions", description="endpoint family")
    prompt: str | None = Field(None, description="prompt text (completions)")
    messages: tuple[Message, ...] | None = Field(None, description="messages (chat)")
    max_tokens: int = Field(256, ge=1, le=1_000_000, description="output tokens per request")
    temperature: float = Field(0.0, ge=0.0, le=2.0, description="sampling temperature")
    ignore_eos: bool = Field(True, description="ask the server to generate exactly max_tokens")
    requests: int = Field(15, ge=1, le=100_000, description="measured requests")
    warmup: int = Field(1, ge=0, le=1000, description="warm-up requests, recorded but excluded")
    extra_body: dict[str, Any] = Field(default_factory=dict, description="added to each body")

    @model_validator(mode="after")
    def _prompt_matches_api(self) -> "Workload":
        if self.api == "completions" and not self.prompt:
            raise ValueError("a completions workload needs 'prompt'")
        if self.api == "chat" and not self.messages and not self.prompt:
            raise ValueError("a chat workload needs 'messages' (or 'prompt' as one user message)")
        return self

    @property
    def path(self) -> str:
        return "/v1/completions" if self.api == "completions" else "/v1/chat/completions"

    def body(self, model: str, extras: dict[str, Any]) -> dict[str, Any]:
        """The request body: protocol parameters, negotiated extras, then `extra_body`."""
        body: dict[str, Any] = {"model": model, "stream": True, "temperature": self.temperature}
        if self.api == "completions":
            body["prompt"] = self.prompt
            body["max_tokens"] = self.max_tokens
        else:
            messages = self.messages or (Message(role="user", content=self.prompt or ""),)
            body["messages"] = [m.model_dump() for m in messages]
            body["max_completion_tokens"] = self.max_tokens
            body["max_tokens"] = self.max_tokens  # older servers read only this one
        if self.ignore_eos:
            body["ignore_eos"] = True
        body.update(extras)
        body.update(self.extra_body)
        return body


def builtin_names() -> list[str]:
    folder = resources.files("sparktriage.bench") / "workloads"
    return sorted(p.name[: -len(".yaml")] for p in folder.iterdir() if p.name.endswith(".yaml"))


def _parse(text: str, origin: str) -> Workload:
    return parse_yaml(text, origin, Workload, "workload")


def load_workload(spec: str) -> Workload:
    """A built-in workload by name, or a YAML file by path."""
    if spec in builtin_names():
        text = (resources.files("sparktriage.bench") / "workloads" / f"{spec}.yaml").read_text()
        return _parse(text, f"workload {spec}")
    path = Path(spec)
    if not path.exists():
        known = ", ".join(builtin_names())
        raise InputError(f"unknown workload {spec!r}: not a built-in ({known}) and no such file")
    return _parse(yamlsafe.read_text(path, "workload"), str(path))


def load_workloads(specs: list[str]) -> list[Workload]:
    """Several workloads (comma lists allowed); names must be unique."""
    names: list[str] = []
    for spec in specs:
        names.extend(s.strip() for s in spec.split(",") if s.strip())
    workloads = [load_workload(s) for s in names]
    seen: set[str] = set()
    for w in workloads:
        if w.name in seen:
            raise InputError(f"workload name {w.name!r} is given twice")
        seen.add(w.name)
    return workloads
