"""The two-stream phase of a sweep launch: pairs of concurrent requests after the protocol.

A drafter that drafts at every step (MTP, EAGLE, a draft model) leaves no plain step inside a
launch, so the launch cannot measure its verify step against a plain one (sweep.evidence.steptimes).
Two concurrent streams can measure something close: every engine step then verifies both
sequences' k + 1 tokens, and for a mixture-of-experts target reads the union of the experts both
route to. The time of such a step over the one-stream step of the same launch
(sweep.evidence.pairtimes) follows the step-cost curve's slope, free of the launch-to-launch spread
(docs/sweep.md, "The two-stream phase").

After the protocol (and the gate) of each launch, `pairs` pairs of streaming requests run, the
two of a pair at the same time, each to the deciding workload's length: one with the workload's
own prompt, one with another bundled workload's prompt (two sequences that route differently:
the same prompt twice would verify the same tokens). Their raw records go to the launch's
`pairs.jsonl` (`pair`, `stream`); they enter neither the delivered rate (bench.json is the
protocol's) nor the acceptance counts (the protocol's /metrics windows).
"""

from __future__ import annotations

import asyncio
from pathlib import Path

from sparktriage.bench.client import ClientSettings, make_stream_client, stream_request
from sparktriage.bench.endpoint import Capabilities
from sparktriage.bench.workload import Workload, load_workload
from sparktriage.errors import SparktriageError
from sparktriage.store.documents import RecordWriter, read_document
from sparktriage.store.rundir import LaunchDir

FILE = "pairs.jsonl"
PAIRS = 2  # the default number of pairs per launch (SweepPlan.pairs)
PARTNERS = ("prose", "code")  # the bundled workloads whose prompt the second stream takes


class PairPhaseError(SparktriageError):
    """The two-stream phase could not run (its reason goes to the launch's pair ratio)."""


def partner_prompt(workload: Workload) -> str:
    """A prompt other than the workload's own: the first bundled workload with another text."""
    own = workload.prompt or " ".join(m.content for m in workload.messages or ())
    for name in PARTNERS:
        other = load_workload(name)
        text = other.prompt or " ".join(m.content for m in other.messages or ())
        if text and text != own:
            return text
    raise PairPhaseError("no second prompt for the two-stream phase")


def _capabilities(launch: LaunchDir, workload: Workload) -> tuple[str, Capabilities]:
    """The model and the request shape the protocol negotiated for `workload` in this launch."""
    try:
        meta = read_document(launch.path / "launch.json")
        caps = read_document(launch.path / "capabilities.json").get(workload.name)
    except (SparktriageError, OSError) as exc:
        raise PairPhaseError(f"the protocol left no request shape to reuse ({exc})") from None
    if not isinstance(caps, dict) or not isinstance(meta.get("model"), str):
        raise PairPhaseError(f"the protocol negotiated no request shape for {workload.name}")
    return meta["model"], Capabilities(
        api=str(caps.get("api")), accepted=str(caps.get("accepted")),
        extras=dict(caps.get("extras") or {}), sources=tuple(caps.get("sources") or ()),
        ignore_eos_ok=caps.get("ignore_eos_honoured"), notes=list(caps.get("notes") or ()),
        dropped=tuple(caps.get("dropped") or ()))


def _with_prompt(body: dict, workload: Workload, prompt: str) -> dict:
    if workload.api == "completions":
        return {**body, "prompt": prompt}
    return {**body, "messages": [{"role": "user", "content": prompt}]}


def run_pairs(endpoint: str, launch: LaunchDir, workload: Workload, pairs: int = PAIRS,
              api_key: str | None = None) -> Path:
    """Run the phase (module doc); return the path of its records. PairPhaseError when it
    cannot start; a failed request is recorded as such, not raised."""
    model, caps = _capabilities(launch, workload)
    first = caps.body(workload, model)
    second = _with_prompt(first, workload, partner_prompt(workload))
    settings = ClientSettings(base_url=endpoint, api_key=api_key)
    path = launch.path / FILE

    async def one(body: dict, index: int, stream: int) -> dict:
        async with make_stream_client(settings) as client:
            record = await stream_request(client, settings, workload.path, body,
                                          workload=workload.name, index=index, warmup=False)
        return {**record, "phase": "pair", "pair": index, "stream": stream}

    async def go(writer: RecordWriter) -> None:
        for index in range(pairs):
            for record in await asyncio.gather(one(first, index, 0), one(second, index, 1)):
                writer.append(record)

    with RecordWriter(path) as writer:
        asyncio.run(go(writer))
    return path
